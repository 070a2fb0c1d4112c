"""Prompts of the 20Q paper: zero-shot, few-shot (2 yes + 2 no training examples, seeded order),
the fine-tuned model's prompt (the item's block alone) and the question-bias ablation without the
topic line.

Prompts are :class:`csbench.lm.prompt.Prompt` parts: the header is the task's description, each
example a (question block, answer) turn, the item's block the question. Their raw text is the
paper's (``HEADER`` + the examples as ``<block> <answer>``, each followed by a blank line, + the
item's block; :meth:`~csbench.lm.prompt.Prompt.raw`); with a chat template the header becomes the
system message and the examples user/assistant turns (:mod:`csbench.lm.prompt`)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..prompt import Prompt

HEADER = "You are playing a game of 20 questions.\nAnswer the following question about with yes or no.\n\n"
PROMPTED = ("zero_shot", "few_shot", "zero_shot_no_topic", "few_shot_no_topic")
# A fine-tuned model (the paper's §6.3) is scored in the prompt it was trained on: the item's block
# alone, no header, no examples (csbench.twentyq.finetune); *_no_topic is its no-topic ablation.
FINE_TUNED = ("fine_tuned", "fine_tuned_no_topic")
VARIANTS = PROMPTED + FINE_TUNED
ANSWERS = (" yes", " no")  # continuations: the target delimiter (a space) and the answer


def item_block(question: str, topic: str | None) -> str:
    """``Topic: …\\nQuestion: …\\nAnswer:`` (topic line left out when ``topic`` is None)."""
    lines = ([f"Topic: {topic}"] if topic is not None else []) + [f"Question: {question}", "Answer:"]
    return "\n".join(lines)


def zero_shot(question: str, topic: str | None) -> Prompt:
    return Prompt(item_block(question, topic), description=HEADER)


def fine_tuned(question: str, topic: str | None) -> Prompt:
    """The fine-tuning prompt of the paper's §6.3: the item's block alone."""
    return Prompt(item_block(question, topic))


def few_shot(question: str, topic: str | None, examples: list[tuple[str, str, str]]) -> Prompt:
    """``examples``: (topic, question, yes|no); the topic lines are dropped when ``topic`` is None."""
    shots = tuple((item_block(q, t if topic is not None else None), a) for t, q, a in examples)
    return Prompt(item_block(question, topic), shots=shots, description=HEADER)


def sample_shots(train: pd.DataFrame, n_items: int, seed: int = 0, n_yes: int = 2,
                 n_no: int = 2, item_ids=None) -> list[list[tuple[str, str, str]]]:
    """For each test item, ``n_yes`` yes and ``n_no`` no training examples in random order.
    With ``item_ids`` (the test items' ids), an item whose id is in the pool (a yes/no set
    without a train split is its own pool) is never its own example; pools disjoint from the
    test items draw exactly as without them."""
    rng = np.random.default_rng(seed)
    cols = ["subject", "question", "label"]
    yes_rows, no_rows = train[train["label"] == "yes"], train[train["label"] == "no"]
    yes, no = yes_rows[cols].to_numpy(), no_rows[cols].to_numpy()
    own = set(train["id"]) & set(item_ids) if item_ids is not None and "id" in train else set()
    if len(yes) - bool(own) < n_yes or len(no) - bool(own) < n_no:
        raise ValueError(f"few-shot needs {n_yes} yes and {n_no} no training items "
                         f"(have {len(yes)} and {len(no)})")
    out = []
    for i in range(n_items):
        y, n = yes, no
        if own and item_ids[i] in own:
            y = yes[(yes_rows["id"] != item_ids[i]).to_numpy()]
            n = no[(no_rows["id"] != item_ids[i]).to_numpy()]
        shots = list(y[rng.choice(len(y), n_yes, replace=False)]) + \
            list(n[rng.choice(len(n), n_no, replace=False)])
        order = rng.permutation(len(shots))
        out.append([tuple(str(x) for x in shots[i]) for i in order])
    return out


def build_prompts(test: pd.DataFrame, train: pd.DataFrame, variant: str,
                  seed: int = 0) -> list[Prompt]:
    if variant not in VARIANTS:
        raise ValueError(f"unknown prompt variant {variant!r}; known: {VARIANTS}")
    with_topic = not variant.endswith("no_topic")
    topics = [t if with_topic else None for t in test["subject"]]
    if variant.startswith("fine_tuned"):
        return [fine_tuned(q, t) for q, t in zip(test["question"], topics)]
    if variant.startswith("zero_shot"):
        return [zero_shot(q, t) for q, t in zip(test["question"], topics)]
    shots = sample_shots(train, len(test), seed, item_ids=list(test["id"]) if "id" in test else None)
    return [few_shot(q, t, s) for q, t, s in zip(test["question"], topics, shots)]
