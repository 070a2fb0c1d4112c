"""Percentile bootstrap over items, shared by the tasks that report intervals (WinoWhat accuracy,
20Q's calibrated yes/no metrics): one seeded stream of resamples (``numpy.random.default_rng(seed)``,
item indices drawn with replacement), in blocks of about two million indices so that memory stays
bounded whatever ``n_boot``, and the interval from the quantiles of the resampled statistic; the
AUROC, weighted by resample multiplicities (20Q's calibration, contamination signals); means
of several scores over the same cluster resamples (the ProtoQA and QADS findings)."""
from __future__ import annotations

import numpy as np


def resamples(n: int, n_boot: int, seed: int):
    """Blocks of item indices, each ``(k, n)``: ``n_boot`` resamples of ``n`` items in all."""
    rng = np.random.default_rng(seed)
    step = max(1, 2_000_000 // n)
    for s in range(0, n_boot, step):
        yield rng.integers(0, n, size=(min(step, n_boot - s), n))


def counts(idx: np.ndarray, n: int) -> np.ndarray:
    """``(k, n)`` index block -> ``(k, n)`` multiplicities (how often each item was drawn)."""
    k = idx.shape[0]
    flat = (idx + n * np.arange(k)[:, None]).ravel()
    return np.bincount(flat, minlength=k * n).reshape(k, n)


def interval(values, level: float = 0.95) -> tuple[float, float]:
    """Percentile interval of resampled statistics; NaN resamples (a statistic undefined on that
    resample) are left out; NaNs when none is defined."""
    v = np.asarray(values, dtype=float)
    if not np.isfinite(v).any():
        return float("nan"), float("nan")
    a = (1 - level) / 2
    return float(np.nanquantile(v, a)), float(np.nanquantile(v, 1 - a))


def auroc(scores, gold, weights=None) -> np.ndarray | float:
    """Mann-Whitney AUROC of ``scores`` for ``gold`` (bool), ties counted half; NaN without both
    classes. ``weights``: a ``(k, n)`` matrix of item multiplicities (bootstrap resamples) gives
    the ``k`` weighted AUROCs, each in one pass over the items sorted once."""
    s, g = np.asarray(scores, float), np.asarray(gold, bool)
    single = weights is None
    w = np.ones((1, len(s))) if single else np.asarray(weights, float)
    if len(s) == 0:
        return float("nan") if single else np.full(len(w), np.nan)
    order = np.argsort(s, kind="stable")
    s, g, w = s[order], g[order], w[:, order]
    starts = np.concatenate([[0], np.flatnonzero(np.diff(s)) + 1])  # groups of tied scores
    pos = np.add.reduceat(w * g, starts, axis=1)
    neg = np.add.reduceat(w * ~g, starts, axis=1)
    below = np.cumsum(neg, axis=1) - neg  # negative weight strictly below each group
    num = (pos * (below + 0.5 * neg)).sum(axis=1)
    den = pos.sum(axis=1) * neg.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)
    return float(out[0]) if single else out


def cluster_means(sums, sizes, n_boot: int, seed: int) -> np.ndarray:
    """Means of ``k`` scores over the same cluster resamples (ProtoQA's questions, QADS's
    original questions with their rewrites): ``sums`` and ``sizes`` are ``(n, k)``: per cluster
    and score, the sum of its items' values and how many items it has there (0: none). Each
    resample draws ``n`` clusters with replacement and gives each score the mean over the items
    of the clusters drawn (a cluster drawn twice counts twice); returns ``(n_boot, k)``, NaN where
    a resample holds no item of a score."""
    s, c = np.asarray(sums, float), np.asarray(sizes, float)
    if s.ndim == 1:
        s, c = s[:, None], c[:, None]
    n = len(s)
    if n == 0:
        return np.full((n_boot, s.shape[1]), np.nan)
    out = []
    for idx in resamples(n, n_boot, seed):
        w = counts(idx, n)
        num, den = w @ s, w @ c
        with np.errstate(invalid="ignore", divide="ignore"):
            out.append(np.where(den > 0, num / np.where(den > 0, den, 1), np.nan))
    return np.vstack(out)
