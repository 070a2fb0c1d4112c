"""Cleaning of the Twenty Questions data, one configurable step at a time.

Steps (in order): ``score`` keeps questions whose quality score equals ``min_score`` (3, the
maximum); ``it`` keeps questions that refer to the topic as "it" (whole word, any case);
``dedupe`` drops repeats of (subject, stemmed bag of words of the question); ``wordnet`` drops
rows whose subject has no WordNet synset (multi-word subjects looked up with underscores).
"""
from __future__ import annotations

import re

import pandas as pd

from ..text import bag_of_words
from ..wordnet import synsets

STEPS = ("score", "it", "dedupe", "wordnet")
IT = re.compile(r"\bit\b", re.IGNORECASE)

DEFAULTS = {"steps": list(STEPS), "min_score": 3}


def refers_as_it(question: str) -> bool:
    return bool(IT.search(question))


def has_synset(subject: str) -> bool:
    return len(synsets(subject.strip().lower().replace(" ", "_"))) > 0


def step_mask(df: pd.DataFrame, step: str, min_score: int = 3) -> pd.Series:
    """Boolean mask of the rows that ``step`` keeps."""
    if step == "score":
        return df["score"] == min_score
    if step == "it":
        return df["question"].map(refers_as_it).astype(bool)
    if step == "dedupe":
        keys = pd.Series([(s.lower(), bag_of_words(q)) for s, q in zip(df["subject"], df["question"])],
                         index=df.index)
        return ~keys.duplicated(keep="first")
    if step == "wordnet":
        known = {s: has_synset(s) for s in df["subject"].unique()}
        return df["subject"].map(known).astype(bool)
    raise ValueError(f"unknown cleaning step {step!r}; known: {STEPS}")


def clean(df: pd.DataFrame, steps=STEPS, min_score: int = 3) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Apply the steps in the canonical order; return (kept rows, count table).

    The count table has one row per step plus ``input`` and ``output`` rows: rows before,
    removed and kept (absolute and % of the step's input and of the original input).
    """
    unknown = [s for s in steps if s not in STEPS]
    if unknown:
        raise ValueError(f"unknown cleaning step(s) {unknown}; known: {STEPS}")
    n0 = len(df)
    rows = [{"step": "input", "before": n0, "removed": 0, "kept": n0, "removed_pct": 0.0,
             "kept_pct": 100.0, "kept_pct_of_input": 100.0}]
    cur = df
    for step in STEPS:
        if step not in steps:
            continue
        before = len(cur)
        cur = cur[step_mask(cur, step, min_score)]
        kept = len(cur)
        rows.append({
            "step": step, "before": before, "removed": before - kept, "kept": kept,
            "removed_pct": 100.0 * (before - kept) / before if before else 0.0,
            "kept_pct": 100.0 * kept / before if before else 0.0,
            "kept_pct_of_input": 100.0 * kept / n0 if n0 else 0.0,
        })
    return cur.reset_index(drop=True), pd.DataFrame(rows)
