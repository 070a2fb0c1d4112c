"""The 20Q fine-tuned arm's training table (the paper's §6.3): yes/no training items in the
fine-tuning prompt, kept only where they do not overlap the scored test items.

The items are the 20Q split's training set (already overlap-free by construction), or any other
yes/no training set, for example CommonsenseQA 2.0 train when the 20Q method runs on CSQA2 dev.
Each candidate training item passes the 20Q split's admission rules against the SCORED test items
(:func:`csbench.twentyq.split.admit`, the same rules in the same order, run the other way round:
the test items are the fixed side, the training items the candidates):

* ``lexical``: the stemmed bag of words of its question is not one of the test questions' and
  that of its topic not one of the test topics';
* ``wordnet``: its topic shares no WordNet synset with any test topic;
* ``embedding``: its question and its topic each have cosine <= ``max_similarity`` to every test
  question and topic (FAISS exact inner product).

The kept items become ``prompt`` (``Topic: …\\nQuestion: …\\nAnswer:``, the paper's fine-tuning
prompt, :func:`csbench.twentyq.prompts.item_block`) and ``completion`` (`` yes`` / `` no``, the
continuations the scoring reads) columns: a table a ``finetune`` model spec trains on
(:mod:`csbench.finetune`), with the source ids, topics, questions and labels kept.
"""
from __future__ import annotations

import pandas as pd

from .prompts import item_block
from .split import admit

COLUMNS = ["id", "source_split", "subject", "question", "label", "prompt", "completion"]


def training_table(candidates: pd.DataFrame, scored: pd.DataFrame, encode=None,
                   rules=("lexical", "wordnet", "embedding"),
                   max_similarity: float = 0.8) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(training table, admission counts): the ``candidates`` (20Q-schema items: id, subject,
    question, label) that pass ``rules`` against the ``scored`` items, in their original order,
    with ``prompt`` and ``completion``; one count row per rule (candidates, then removed and kept
    by each rule in turn, then kept in %)."""
    bad = ~candidates["label"].isin(["yes", "no"])
    if bad.any():
        raise ValueError(f"training labels must be yes/no, got {sorted(set(candidates.loc[bad, 'label']))}")
    kept, counts = admit(scored, candidates, encode, rules, max_similarity)
    table = pd.DataFrame(counts).rename(columns={"rejected": "removed", "remaining": "kept"})
    table["kept_pct"] = 100.0 * table["kept"] / max(len(candidates), 1)
    table.insert(1, "against", len(scored))
    kept = kept.sort_index() if kept.index.is_unique else kept
    out = kept.assign(prompt=[item_block(q, t) for q, t in zip(kept["question"], kept["subject"])],
                      completion=" " + kept["label"])
    if "source_split" not in out:
        out["source_split"] = "train"
    return out[COLUMNS].reset_index(drop=True), table
