"""What the membership signals (:mod:`csbench.contamination.signals`) say, per model:

* :func:`auroc_table`: AUROC of each signal's membership score separating WinoGrande dev
  originals from their WinoWhat paraphrases (answer in the blank; the items that have both,
  resampled by item, so a resample keeps each original with its paraphrases), and dev
  originals from test items (option 1 in the blank on both sides: test's answers were never
  public), with percentile bootstrap intervals (:mod:`csbench.bootstrap`);
* :func:`mannwhitney_table`: the WinoWhat paper's one-sided Mann-Whitney U test, here of each
  signal's membership score on the dev originals answered right against those answered wrong
  (the WinoWhat scoring's per-item ``correct``): do items with stronger membership evidence get
  answered right more often;
* :func:`quartile_table`: the paraphrase effect (accuracy on originals minus accuracy on their
  paraphrases) per quartile of the originals' membership score.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..bootstrap import auroc, counts, interval, resamples
from .signals import MEMBER_SIGN, SIGNALS

AUROC_COLUMNS = ["model", "comparison", "signal", "n_members", "n_nonmembers", "auroc",
                 "auroc_ci_low", "auroc_ci_high", "ci_level"]
MW_COLUMNS = ["model", "signal", "n_correct", "n_wrong", "u", "auroc", "p_value"]
QUARTILE_COLUMNS = ["model", "signal", "quartile", "n_items", "acc_orig", "acc_paraphrase",
                    "effect"]
COMPARISONS = {"orig_vs_paraphrase": "dev originals vs their WinoWhat paraphrases",
               "dev_vs_test": "dev originals vs test items (option 1 in the blank)"}


def membership(df: pd.DataFrame, signal: str) -> np.ndarray:
    """A signal as a membership score: higher = more member-like."""
    return MEMBER_SIGN[signal] * df[signal].to_numpy(float)


def answer_rows(sig: pd.DataFrame, dataset="winogrande_dev", variant="orig") -> pd.DataFrame:
    """Rows of one dataset and variant with the answer in the blank."""
    s = sig[(sig["dataset"] == dataset) & (sig["variant"] == variant)]
    return s[s["label"].notna() & (s["option"] == s["label"])]


def comparison_rows(sig: pd.DataFrame, comparison: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(members, non-members) of a comparison (see the module docstring)."""
    if comparison == "orig_vs_paraphrase":
        orig, para = answer_rows(sig), answer_rows(sig, variant="paraphrase")
        both = set(orig["orig_id"]) & set(para["orig_id"])
        return orig[orig["orig_id"].isin(both)], para[para["orig_id"].isin(both)]
    dev = sig[(sig["dataset"] == "winogrande_dev") & (sig["variant"] == "orig")
              & (sig["option"] == 1)]
    test = sig[(sig["dataset"] == "winogrande_test") & (sig["variant"] == "orig")
               & (sig["option"] == 1)]
    return dev, test


def clustered_auroc(scores, gold, cluster, n_boot: int, seed: int, level: float):
    """AUROC and its percentile bootstrap interval, resampling clusters (items) with all their
    rows."""
    codes, uniq = pd.factorize(pd.Series(cluster), sort=True)
    value = auroc(scores, gold)
    boot = [auroc(scores, gold, counts(idx, len(uniq))[:, codes].astype(float))
            for idx in resamples(len(uniq), n_boot, seed)]
    lo, hi = interval(np.concatenate(boot) if boot else [], level)
    return value, lo, hi


def auroc_table(model: str, sig: pd.DataFrame, n: int = 1000, seed: int = 0,
                level: float = 0.95) -> pd.DataFrame:
    rows = []
    for comparison in COMPARISONS:
        pos, neg = comparison_rows(sig, comparison)
        both = pd.concat([pos, neg])
        gold = np.r_[np.ones(len(pos), bool), np.zeros(len(neg), bool)]
        # dev vs test: independent samples, each row its own cluster
        cluster = (both["orig_id"].astype(str) if comparison == "orig_vs_paraphrase"
                   else both["dataset"] + "/" + both["item_id"].astype(str))
        for signal in SIGNALS:
            if both.empty or both[signal].isna().all():
                value = lo = hi = np.nan
            else:
                value, lo, hi = clustered_auroc(membership(both, signal), gold, cluster.to_numpy(),
                                                n, seed, level)
            rows.append(dict(model=model, comparison=comparison, signal=signal,
                             n_members=len(pos), n_nonmembers=len(neg), auroc=value,
                             auroc_ci_low=lo, auroc_ci_high=hi, ci_level=level))
    return pd.DataFrame(rows, columns=AUROC_COLUMNS)


def with_correct(rows: pd.DataFrame, results: pd.DataFrame, variant: str) -> pd.DataFrame:
    """``rows`` joined with the WinoWhat per-item ``correct`` of winogrande_dev ``variant``."""
    r = results[(results["dataset"] == "winogrande_dev") & (results["variant"] == variant)
                & results["correct"].notna()]
    return rows.merge(r[["item_id", "correct"]], on="item_id", how="inner")


def mannwhitney_table(model: str, sig: pd.DataFrame, results: pd.DataFrame) -> pd.DataFrame:
    from scipy.stats import mannwhitneyu  # not at import: the Snakefile loads this module
    orig = with_correct(answer_rows(sig), results, "orig")
    ok = orig["correct"].astype(bool).to_numpy()
    rows = []
    for signal in SIGNALS:
        m = membership(orig, signal)
        x, y = m[ok & ~np.isnan(m)], m[~ok & ~np.isnan(m)]
        u = p = a = np.nan
        if len(x) and len(y):
            r = mannwhitneyu(x, y, alternative="greater")
            u, p, a = float(r.statistic), float(r.pvalue), float(r.statistic) / (len(x) * len(y))
        rows.append(dict(model=model, signal=signal, n_correct=len(x), n_wrong=len(y), u=u,
                         auroc=a, p_value=p))
    return pd.DataFrame(rows, columns=MW_COLUMNS)


def quartile_table(model: str, sig: pd.DataFrame, results: pd.DataFrame) -> pd.DataFrame:
    orig = with_correct(answer_rows(sig), results, "orig")
    para = results[(results["dataset"] == "winogrande_dev") & (results["variant"] == "transf")
                   & results["correct"].notna()]
    para_acc = para.groupby("orig_id")["correct"].agg(lambda c: c.astype(float).mean())
    orig = orig[orig["item_id"].isin(para_acc.index)]
    rows = []
    for signal in SIGNALS:
        m = membership(orig, signal)
        if len(orig) < 4 or np.isnan(m).all():
            continue
        q = pd.qcut(pd.Series(m).rank(method="first"), 4, labels=[1, 2, 3, 4]).to_numpy()
        for k in (1, 2, 3, 4):
            g = orig[q == k]
            a_o = float(g["correct"].astype(float).mean())
            a_p = float(para_acc.loc[g["item_id"]].mean())
            rows.append(dict(model=model, signal=signal, quartile=k, n_items=len(g),
                             acc_orig=a_o, acc_paraphrase=a_p, effect=a_o - a_p))
    return pd.DataFrame(rows, columns=QUARTILE_COLUMNS)
