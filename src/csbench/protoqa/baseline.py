"""The ProtoQA paper's generation baseline: question -> completion prompt -> ranked answer list.

Prompt rules (applied to the question, case-insensitively, wherever the phrase starts a clause):
"name something ..." / "tell me something ..." -> "one thing ... is"; "name a/an X ..." -> "one X
... is"; "how can you tell ..." -> "one way to tell ... is"; "give me a/an X ..." -> "one X ... is".
Other questions become ``"<question> One answer is"``. The trailing ``.``/``?`` is dropped and the
first letter is capitalised. Samples are cut at the first sentence end, normalised
(:func:`csbench.text.fold`), counted, and the most frequent become the ranked list.

A sample that ``max_new_tokens`` ended before any sentence end or end-of-sequence token is
"cut" (the sampler says which: ``cut`` of :func:`csbench.lm.backend.sample`); its text may stop
mid-answer or mid-word ("to fill up their air fres"). The cut policy says what the ranked list
does with it (:data:`CUT_POLICIES`): ``keep`` it as it is, ``drop`` it, or keep its
``complete_words`` (its last word is dropped unless the text ends after it, at a space or a
punctuation mark; a sample left empty is dropped).
"""
from __future__ import annotations

import re
from collections import Counter

from ..text import fold

_RULES = [
    (re.compile(r"\b(?:name|tell me) something\b", re.I), "one thing"),
    (re.compile(r"\bhow can you tell\b", re.I), "one way to tell"),
    (re.compile(r"\b(?:name|give me) (?:a|an)\b", re.I), "one"),
]
SENTENCE_ENDS = (".", "!", "?", "\n")      # the sampler's stop strings (local and served)
SENTENCE_END = re.compile(r"[.!?\n]")
CUT_POLICIES = ("keep", "drop", "complete_words")
_ENDS_IN_WORD = re.compile(r"\w\Z")


def question_to_prompt(question: str) -> str:
    q = question.strip().rstrip(".?! ").strip()
    for pattern, repl in _RULES:
        if pattern.search(q):
            text = pattern.sub(repl, q, count=1) + " is"
            break
    else:
        text = q + "? One answer is"
    return text[:1].upper() + text[1:]


def clean_completion(text: str) -> str:
    """Cut at the first sentence end, then normalise (lower-case, punctuation folded)."""
    m = SENTENCE_END.search(text)
    if m:
        text = text[: m.start()]
    return fold(text)


def sample_answer(text: str, cut: bool = False, policy: str = "keep") -> str:
    """The normalised answer of one sample under the cut ``policy`` ("" = no answer)."""
    if policy not in CUT_POLICIES:
        raise ValueError(f"cut policy must be one of {', '.join(CUT_POLICIES)}, got {policy!r}")
    answer = clean_completion(text)
    if not cut or policy == "keep":
        return answer
    if policy == "drop":
        return ""
    if _ENDS_IN_WORD.search(text):          # the text stops inside or right after a word
        answer = answer.rpartition(" ")[0]
    return answer


def rank_answers(samples: list[str], top: int = 20, cut: list[bool] | None = None,
                 policy: str = "keep") -> list[str]:
    """Most frequent normalised non-empty answers (ties: first seen first); ``cut``: per
    sample, whether ``max_new_tokens`` ended it (see :func:`sample_answer` for ``policy``)."""
    if cut is None:
        cut = [False] * len(samples)
    if len(cut) != len(samples):
        raise ValueError(f"{len(samples)} samples but {len(cut)} cut flags")
    counts = Counter(a for a in (sample_answer(s, c, policy) for s, c in zip(samples, cut)) if a)
    return [a for a, _ in counts.most_common(top)]


def samples_table(model: str, qids: list[str], samples: list[list[str]],
                  cut: list[list[bool]]):
    """The sampled texts of one model, one row per sample: ``model``, ``question_id``,
    ``sample`` (its index among the question's samples, 0-based), ``text`` (as sampled, up to its
    first sentence end), ``cut`` (whether ``max_new_tokens`` ended it)."""
    import pandas as pd

    if not (len(qids) == len(samples) == len(cut)):
        raise ValueError(f"{len(qids)} questions, {len(samples)} sample lists, {len(cut)} cut lists")
    rows = []
    for q, texts, flags in zip(qids, samples, cut):
        if len(texts) != len(flags):
            raise ValueError(f"question {q}: {len(texts)} samples but {len(flags)} cut flags")
        rows += [(model, q, i, t, bool(c)) for i, (t, c) in enumerate(zip(texts, flags))]
    df = pd.DataFrame(rows, columns=["model", "question_id", "sample", "text", "cut"])
    return df.astype({"sample": "int64", "cut": "bool"})


def ranked_lists(samples, top: int = 20, policy: str = "keep") -> dict[str, list[str]]:
    """Question id -> ranked list (:func:`rank_answers`) from a :func:`samples_table`, questions
    in the table's order."""
    out = {}
    for qid, grp in samples.groupby("question_id", sort=False):
        grp = grp.sort_values("sample")
        out[str(qid)] = rank_answers(grp["text"].tolist(), top, grp["cut"].tolist(), policy)
    return out
