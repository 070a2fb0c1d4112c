"""Any yes/no data set (``datasets`` kind ``yesno``: csqa2, a user's) as a 20Q-style test set: the
20Q scoring method (prompts, metrics, topic-frequency proxy) applied to its items.

A yes/no set's normalised table (:mod:`csbench.datasets`: id, question, answer, topic, split) maps
onto the 20Q item schema directly: ``subject`` = ``topic``, ``question`` = ``question``, ``label``
= ``answer``. Items without a topic are left out (the topic line and the topic ablation need
one); CSQA2 dev has none. The test items are the set's rows whose split is not ``train``; the
few-shot pool is another yes/no set (``settings.fewshot``, e.g. csqa2_train for csqa2), else the
set's ``train`` rows, else the test items themselves (a test item is never its own example:
:func:`csbench.twentyq.prompts.sample_shots`).
"""
from __future__ import annotations

import pandas as pd

COLUMNS = ["id", "source_split", "subject", "question", "label"]


def yesno_items(table: pd.DataFrame, name: str = "<data set>") -> tuple[pd.DataFrame, int]:
    """A normalised yes/no table -> (20Q-schema items, number left out for no topic)."""
    topic = table["topic"].fillna("").astype(str).str.strip()
    keep = topic != ""
    if len(table) and not keep.any():
        raise ValueError(f"datasets.{name}: no item has a topic (role topic): the 20Q prompts and "
                         "its topic-frequency proxy need one")
    items = pd.DataFrame({
        "id": table.loc[keep, "id"].astype(str), "source_split": table.loc[keep, "split"],
        "subject": topic[keep], "question": table.loc[keep, "question"],
        "label": table.loc[keep, "answer"],
    }, columns=COLUMNS)
    return items.reset_index(drop=True), int((~keep).sum())


def split_items(table: pd.DataFrame, pool: pd.DataFrame | None, name: str = "<data set>"):
    """``(train, test, left out without a topic: {part: n})``: the few-shot pool and the scored
    items of a yes/no set (``pool``: the normalised table of its ``settings.fewshot`` set)."""
    is_train = table["split"] == "train"
    test, no_topic_test = yesno_items(table[~is_train], name)
    if pool is not None:
        train, no_topic_train = yesno_items(pool, name)
        train["source_split"] = "train"
    elif is_train.any():
        train, no_topic_train = yesno_items(table[is_train], name)
    else:
        train, no_topic_train = test.copy(), 0
    return train, test, {"test": no_topic_test, "train": no_topic_train}
