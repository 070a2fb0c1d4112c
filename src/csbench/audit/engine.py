"""One audit end to end: training and test tables in, overlap tables out.

``run_audit`` returns a dict of DataFrames written by the rules to ``results/audit/<name>/``:
``top1`` (test_id, train_id, similarity), ``duplicates`` (test_id, train_id, kind) and
``top_pairs.<method>`` (rank, test_id, train_id, test_text, train_text, score) for the methods
``trigram``, ``bm25``, ``embedding`` and ``wordnet`` (the last one over ``short_field``; empty
when the audit has none), plus a one-row ``summary``.
"""
from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import InputError
from .. import nearest
from . import lexical, wordnet_sim

log = logging.getLogger(__name__)

METHODS = ("trigram", "bm25", "embedding", "wordnet")
PAIR_COLUMNS = ["rank", "test_id", "train_id", "test_text", "train_text", "score"]
SUMMARY_QUANTILES = (0.5, 0.9, 0.99)
SIM_BINS = (0.8, 0.9, 0.95, 0.99)


def read_table(path: str | Path) -> pd.DataFrame:
    """Read a user benchmark table: Parquet, JSON Lines (.jsonl[.gz]), CSV or TSV."""
    path = Path(path)
    name = path.name.lower()
    if not path.exists():
        raise InputError(path, "file not found")
    try:
        if name.endswith(".parquet"):
            return pd.read_parquet(path)
        if ".jsonl" in name or name.endswith(".json.gz"):
            from ..io import read_jsonl

            return pd.DataFrame([rec for _, rec in read_jsonl(path)])
        if name.endswith(".json"):
            from ..io import read_json

            data = read_json(path)
            if not isinstance(data, list):
                raise InputError(path, "expected a JSON array of records")
            return pd.DataFrame(data)
        if name.endswith((".tsv", ".tsv.gz")):
            return pd.read_csv(path, sep="\t")
        if name.endswith((".csv", ".csv.gz")):
            return pd.read_csv(path)
    except (ValueError, OSError) as exc:
        if isinstance(exc, InputError):
            raise
        raise InputError(path, f"cannot read table ({exc})") from None
    raise InputError(path, "unknown table format (use .parquet, .jsonl, .json, .csv or .tsv)")


def texts_of(df: pd.DataFrame, fields, path="<table>") -> list[str]:
    fields = [fields] if isinstance(fields, str) else list(fields)
    missing = [f for f in fields if f not in df.columns]
    if missing:
        raise InputError(path, f"missing column(s) {missing}; columns are {list(df.columns)}")
    parts = df[fields].astype("string").fillna("")
    return [" ".join(p for p in row if p) for row in parts.itertuples(index=False, name=None)]


def ids_of(df: pd.DataFrame, field: str | None, path="<table>") -> list[str]:
    if field is None:
        return [str(i) for i in range(len(df))]
    if field not in df.columns:
        raise InputError(path, f"missing id column {field!r}; columns are {list(df.columns)}")
    return [str(x) for x in df[field]]


def top_pairs(best: np.ndarray, arg: np.ndarray, test_ids, train_ids, test_texts, train_texts,
              k: int) -> pd.DataFrame:
    """The ``k`` test items with the highest best-match score, with that match (ties by position)."""
    valid = np.flatnonzero(arg >= 0)
    order = valid[np.lexsort((valid, -best[valid]))][:k]
    return pd.DataFrame({
        "rank": np.arange(1, len(order) + 1),
        "test_id": [test_ids[i] for i in order],
        "train_id": [train_ids[arg[i]] for i in order],
        "test_text": [test_texts[i] for i in order],
        "train_text": [train_texts[arg[i]] for i in order],
        "score": best[order].astype(float),
    }, columns=PAIR_COLUMNS)


def run_audit(train: pd.DataFrame, test: pd.DataFrame, encode, text_fields, id_field="id",
              short_field=None, methods=METHODS, top_k: int = 15, search_method: str = "exact",
              block: int = 16384, lexical_block: int = 2000, trigram_max_df: float = 1.0,
              threads: int | None = None, name: str = "audit", train_path="<train>",
              test_path="<test>") -> dict[str, pd.DataFrame]:
    timings: dict[str, float] = {}
    tr_ids, te_ids = ids_of(train, id_field, train_path), ids_of(test, id_field, test_path)
    tr_txt, te_txt = texts_of(train, text_fields, train_path), texts_of(test, text_fields, test_path)

    t0 = time.perf_counter()
    base = encode(tr_txt)
    queries = encode(te_txt)
    timings["encode_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    best, arg = nearest.top1(queries, base, method=search_method, block=block, threads=threads)
    timings["search_s"] = time.perf_counter() - t0
    out: dict[str, pd.DataFrame] = {
        "top1": pd.DataFrame({"test_id": te_ids,
                              "train_id": [tr_ids[j] if j >= 0 else None for j in arg],
                              "similarity": best.astype(float)}),
    }
    out["duplicates"] = lexical.duplicates(te_ids, te_txt, tr_ids, tr_txt)

    for method in METHODS:
        t0 = time.perf_counter()
        tt, rt = te_txt, tr_txt
        if method not in methods:
            b, a = np.zeros(0, np.float32), np.zeros(0, np.int64)
        elif method == "embedding":
            b, a = best, arg
        elif method == "trigram":
            b, a = lexical.trigram_top1(te_txt, tr_txt, block=lexical_block, max_df=trigram_max_df)
        elif method == "bm25":
            b, a = lexical.bm25_top1(te_txt, tr_txt, block=lexical_block)
        elif short_field:
            tt, rt = texts_of(test, short_field, test_path), texts_of(train, short_field, train_path)
            b, a = wordnet_sim.wordnet_top1(tt, rt)
        else:
            b, a = np.zeros(0, np.float32), np.zeros(0, np.int64)
        out[f"top_pairs.{method}"] = top_pairs(b, a, te_ids, tr_ids, tt, rt, top_k)
        timings[f"{method}_s"] = time.perf_counter() - t0

    out["summary"] = summarise(name, best, out["duplicates"], len(tr_txt), len(te_txt), timings)
    return out


def summarise(name, best, dups, n_train, n_test, timings=None) -> pd.DataFrame:
    kinds = dups["kind"].value_counts() if len(dups) else pd.Series(dtype=int)
    row = {"audit": name, "n_train": n_train, "n_test": n_test,
           "exact_duplicate_pairs": int(kinds.get("exact", 0)),
           "normalised_duplicate_pairs": int(kinds.get("normalised", 0)),
           "test_items_with_duplicate": int(dups["test_id"].nunique()) if len(dups) else 0}
    finite = best[np.isfinite(best)]
    row["top1_mean"] = float(finite.mean()) if len(finite) else float("nan")
    for q in SUMMARY_QUANTILES:
        row[f"top1_q{int(q * 100)}"] = float(np.quantile(finite, q)) if len(finite) else float("nan")
    row["top1_max"] = float(finite.max()) if len(finite) else float("nan")
    for t in SIM_BINS:
        row[f"pct_top1_ge_{t}"] = float(100.0 * (finite >= t - 1e-6).mean()) if len(finite) else 0.0
    row.update(timings or {})
    return pd.DataFrame([row])
