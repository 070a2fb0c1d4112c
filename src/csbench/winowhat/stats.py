"""Accuracy with percentile-bootstrap intervals per group, and the paired comparison (each
paraphrase against its original on the same items): the difference with a paired bootstrap
interval and McNemar's exact test. Every table has a row per way of reading the scores
(``method``, :data:`csbench.winowhat.scoring.METHODS`): the paper's metric and its controls."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..bootstrap import interval, resamples
from .scoring import METHODS

CATEGORIES = ("physical", "social", "numerical", "temporal", "spatial")
ACC_COLUMNS = ["model", "dataset", "variant", "subset", "method", "category", "n", "accuracy",
               "ci_low", "ci_high"]
MCNEMAR_COLUMNS = ["model", "dataset", "subset", "method", "n_pairs", "acc_orig", "acc_transf",
                   "difference", "diff_ci_low", "diff_ci_high", "orig_only_correct",
                   "transf_only_correct", "p_value"]


def bootstrap_ci(correct, n_boot: int = 10000, seed: int = 0, level: float = 0.95):
    """Mean of ``correct`` (an accuracy, or of paired differences in -1/0/1) and its percentile
    bootstrap interval (NaNs for an empty sample)."""
    x = np.asarray(correct, dtype=float)
    if len(x) == 0:
        return float("nan"), float("nan"), float("nan")
    means = np.concatenate([x[idx].mean(axis=1) for idx in resamples(len(x), n_boot, seed)])
    return (float(x.mean()), *interval(means, level))


def mcnemar_exact(orig_correct, transf_correct) -> tuple[int, int, float]:
    """(orig-only correct, transf-only correct, two-sided exact p) on paired outcomes."""
    from scipy.stats import binomtest  # not at import: the Snakefile loads this module
    o = np.asarray(orig_correct, dtype=bool)
    t = np.asarray(transf_correct, dtype=bool)
    b, c = int((o & ~t).sum()), int((~o & t).sum())
    p = 1.0 if b + c == 0 else float(binomtest(min(b, c), b + c, 0.5).pvalue)
    return b, c, p


def subsets(df: pd.DataFrame):
    """``all`` and, where known, ``in_original_experiment`` (rows with the flag 1)."""
    yield "all", df
    ioe = df["in_original_experiment"]
    if ioe.notna().any():
        yield "in_original_experiment", df[ioe.fillna(0).astype(int) == 1]


def accuracy_table(scored: pd.DataFrame, n_boot: int = 10000, seed: int = 0,
                   level: float = 0.95, methods: dict = METHODS) -> pd.DataFrame:
    """Accuracy per model x dataset x variant x subset x method x category (labelled items)."""
    rows = []
    lab = scored[scored["label"].notna()]
    for (model, dataset, variant), g in lab.groupby(["model", "dataset", "variant"], sort=True):
        for subset, s in subsets(g):
            found = {c for cs in s["categories"] for c in cs} - set(CATEGORIES)
            for method, col in methods.items():
                for cat in ("all",) + CATEGORIES + tuple(sorted(found)):  # a data set's own too
                    part = s if cat == "all" else s[s["categories"].map(lambda c: cat in list(c))]
                    if cat != "all" and part.empty:
                        continue
                    acc, lo, hi = bootstrap_ci(part[col].astype(bool), n_boot, seed, level)
                    rows.append([model, dataset, variant, subset, method, cat, len(part), acc,
                                 lo, hi])
    return pd.DataFrame(rows, columns=ACC_COLUMNS)


def mcnemar_table(scored: pd.DataFrame, n_boot: int = 10000, seed: int = 0,
                  level: float = 0.95, methods: dict = METHODS) -> pd.DataFrame:
    """orig vs transf on the same items (transf rows paired with their original by orig_id):
    both accuracies, the difference (transf - orig) with its paired percentile-bootstrap
    interval (pairs resampled), the discordant counts and McNemar's exact p, per method."""
    rows = []
    lab = scored[scored["label"].notna()]
    for (model, dataset), g in lab.groupby(["model", "dataset"], sort=True):
        orig = g[g["variant"] == "orig"].drop_duplicates("orig_id").set_index("orig_id")
        t = g[g["variant"] == "transf"]
        if t.empty:
            continue
        for subset, s in subsets(t):
            s = s[s["orig_id"].isin(orig.index)]
            for method, col in methods.items():
                oc = orig.loc[s["orig_id"], col].astype(bool).to_numpy()
                tc = s[col].astype(bool).to_numpy()
                b, c, p = mcnemar_exact(oc, tc)
                diff, lo, hi = bootstrap_ci(tc.astype(float) - oc, n_boot, seed, level)
                nan = float("nan")
                rows.append([model, dataset, subset, method, len(s),
                             oc.mean() if len(s) else nan, tc.mean() if len(s) else nan,
                             diff, lo, hi, b, c, p])
    return pd.DataFrame(rows, columns=MCNEMAR_COLUMNS)
