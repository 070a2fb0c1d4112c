"""Percentile bootstrap over items, shared by the tasks that report intervals (WinoWhat accuracy,
20Q's calibrated yes/no metrics): one seeded stream of resamples (``numpy.random.default_rng(seed)``,
item indices drawn with replacement), in blocks of about two million indices so that memory stays
bounded whatever ``n_boot``, and the interval from the quantiles of the resampled statistic."""
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
