"""CommonsenseQA 2.0 as a 20Q-style yes/no test set: the 20Q scoring method (prompts, metrics,
topic-frequency proxy) applied to CSQA2 dev, with few-shot examples from CSQA2 train.

CSQA2 items are yes/no questions or assertions written around a prompted topic word, so they map
onto the 20Q item schema directly: ``subject`` = ``topic_prompt``, ``question`` = ``question``,
``label`` = ``answer``. Items without a topic word are left out (the topic line and the topic
ablation need one); CSQA2 dev has none.
"""
from __future__ import annotations

import pandas as pd

COLUMNS = ["id", "source_split", "subject", "question", "label"]


def yesno_items(table: pd.DataFrame, split: str) -> tuple[pd.DataFrame, int]:
    """A normalised ``csqa2:<split>`` table -> (20Q-schema items, number left out for no topic)."""
    topic = table["topic_prompt"].fillna("").astype(str).str.strip()
    keep = topic != ""
    bad = ~table.loc[keep, "answer"].isin(["yes", "no"])
    if bad.any():
        found = sorted(set(table.loc[keep].loc[bad, "answer"].astype(str)))
        raise ValueError(f"csqa2:{split}: answers must be yes/no, got {found}")
    items = pd.DataFrame({
        "id": table.loc[keep, "id"].astype(str), "source_split": split, "subject": topic[keep],
        "question": table.loc[keep, "question"].astype(str), "label": table.loc[keep, "answer"],
    }, columns=COLUMNS)
    return items.reset_index(drop=True), int((~keep).sum())


def sample(items: pd.DataFrame, limit: int | None, seed: int) -> pd.DataFrame:
    """A seeded sample of ``limit`` items in their original order (all items when limit is None)."""
    if limit is None or limit >= len(items):
        return items
    return items.sample(n=limit, random_state=seed).sort_index().reset_index(drop=True)
