"""Overlap-free train/test split of the cleaned Twenty Questions data.

Training set: all cleaned rows of the original ``train`` split whose question is one of
``n_train_questions`` distinct generic questions sampled with ``seed``. Test pool: every other
cleaned row (of the splits in ``test_pool``). A candidate is admitted only if

(a) ``lexical``: the stemmed bag of words of its question is not one of the training
    questions' and that of its topic not one of the training topics';
(b) ``wordnet``: its topic shares no WordNet synset with any training topic;
(c) ``embedding``: its question and its topic each have cosine similarity <= ``max_similarity``
    to every training question and topic (FAISS exact inner-product search).

The pool is shuffled with ``seed`` and the first ``n_test`` admitted items are kept.
"""
from __future__ import annotations

import logging

import numpy as np
import pandas as pd

from ..nearest import top1
from ..text import bag_of_words, fold, words
from ..wordnet import synsets

log = logging.getLogger(__name__)

RULES = ("lexical", "wordnet", "embedding")
DEFAULTS = {"n_train_questions": 500, "n_test": 2500, "max_similarity": 0.8, "seed": 0,
            "rules": list(RULES), "test_pool": ["train", "dev", "test"]}


def question_key(q: str) -> str:
    """Identity of a generic question (questions are about "it", so they repeat across topics)."""
    return fold(q)


def topic_synsets(subject: str) -> frozenset[str]:
    return frozenset(s.name() for s in synsets(subject.strip().lower().replace(" ", "_")))


def sample_train(df: pd.DataFrame, n_questions: int, seed: int) -> pd.DataFrame:
    """Rows of the original train split whose generic question is among ``n_questions`` sampled."""
    pool = df[df["split"] == "train"]
    keys = pool["question"].map(question_key)
    distinct = sorted(keys.unique())
    rng = np.random.default_rng(seed)
    n = min(n_questions, len(distinct))
    chosen = set(rng.choice(np.array(distinct, dtype=object), size=n, replace=False)) if n else set()
    return pool[keys.isin(chosen)]


def admit(train: pd.DataFrame, pool: pd.DataFrame, encode=None, rules=RULES,
          max_similarity: float = 0.8) -> tuple[pd.DataFrame, list[dict]]:
    """Apply the admission rules in order; return (admitted rows, per-rule count rows).

    ``encode(texts) -> (n, d)`` L2-normalised vectors is needed for the embedding rule.
    """
    counts = [{"step": "candidates", "rejected": 0, "remaining": len(pool)}]
    cur = pool
    if "lexical" in rules:
        q_bows = {bag_of_words(q) for q in train["question"]}
        t_bows = {bag_of_words(t) for t in train["subject"]}
        ok = np.array([bag_of_words(q) not in q_bows and bag_of_words(t) not in t_bows
                       for q, t in zip(cur["question"], cur["subject"])], dtype=bool)
        counts.append({"step": "lexical", "rejected": int((~ok).sum()), "remaining": int(ok.sum())})
        cur = cur[ok]
    if "wordnet" in rules:
        train_syn = set().union(*[topic_synsets(t) for t in train["subject"].unique()]) \
            if len(train) else set()
        bad = {t: bool(topic_synsets(t) & train_syn) for t in cur["subject"].unique()}
        ok = ~cur["subject"].map(bad).astype(bool).to_numpy()
        counts.append({"step": "wordnet", "rejected": int((~ok).sum()), "remaining": int(ok.sum())})
        cur = cur[ok]
    if "embedding" in rules:
        if encode is None:
            raise ValueError("the embedding rule needs an encoder")
        base_texts = list(dict.fromkeys(list(train["question"]) + list(train["subject"])))
        base = encode(base_texts)
        q_s, _ = top1(encode(list(cur["question"])), base) if len(cur) else (np.zeros(0), None)
        t_s, _ = top1(encode(list(cur["subject"])), base) if len(cur) else (np.zeros(0), None)
        ok = (q_s <= max_similarity) & (t_s <= max_similarity)
        counts.append({"step": "embedding", "rejected": int((~ok).sum()), "remaining": int(ok.sum())})
        cur = cur[ok]
    return cur, counts


def build_split(df: pd.DataFrame, encode=None, n_train_questions: int = 500, n_test: int = 2500,
                max_similarity: float = 0.8, seed: int = 0, rules=RULES,
                test_pool=("train", "dev", "test")) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Return (train, test, admission count table) from the cleaned table ``df``."""
    unknown = [r for r in rules if r not in RULES]
    if unknown:
        raise ValueError(f"unknown admission rule(s) {unknown}; known: {RULES}")
    train = sample_train(df, n_train_questions, seed)
    pool = df[df["split"].isin(list(test_pool)) & ~df["id"].isin(set(train["id"]))]
    pool = pool.sample(frac=1.0, random_state=seed) if len(pool) else pool
    admitted, counts = admit(train, pool, encode, rules, max_similarity)
    test = admitted.head(n_test)
    counts.append({"step": f"first {n_test}", "rejected": len(admitted) - len(test),
                   "remaining": len(test)})
    table = pd.DataFrame(counts)
    n0 = max(len(pool), 1)
    table["remaining_pct"] = 100.0 * table["remaining"] / n0
    log.info("train %d rows (%d questions); test %d of %d candidates", len(train),
             train["question"].map(question_key).nunique(), len(test), len(pool))
    return _finish(train), _finish(test), table


def _finish(df: pd.DataFrame) -> pd.DataFrame:
    out = df.rename(columns={"split": "source_split"})
    out = out.assign(label=np.where(out["majority"].astype(bool), "yes", "no"))
    cols = ["id", "source_split", "subject", "question", "label", "score", "true_votes"]
    return out[[c for c in cols if c in out.columns]].reset_index(drop=True)


def statistics(splits: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The paper's statistics table: one row per split."""
    rows = []
    for name, df in splits.items():
        rows.append({
            "split": name,
            "questions": len(df),
            "generic_questions": int(df["question"].map(question_key).nunique()),
            "topics": int(df["subject"].str.lower().nunique()),
            "mean_words": float(df["question"].map(lambda q: len(words(q))).mean()) if len(df) else 0.0,
            "pct_yes": float(100.0 * (df["label"] == "yes").mean()) if len(df) else 0.0,
        })
    return pd.DataFrame(rows)
