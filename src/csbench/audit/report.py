"""The top-1 similarity figure across audits (one curve per benchmark). The audits' table in
RESULTS.md (one row per audit of ``results/audit/summary.tsv``) is the 20Q section's
(:func:`csbench.twentyq.report.audits_markdown`)."""
from __future__ import annotations

import numpy as np
import pandas as pd


def plot_top1(top1: dict[str, pd.DataFrame], path) -> None:
    """Cumulative distribution of top-1 cosine similarity, one curve per audit."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..io import atomic_path

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    bins = np.linspace(-0.2, 1.0, 61)
    for name, df in sorted(top1.items()):
        s = np.sort(df["similarity"].to_numpy(dtype=float))
        s = s[np.isfinite(s)]
        if not len(s):
            continue
        ax1.hist(s, bins=bins, density=True, histtype="step", label=f"{name} (n={len(s)})")
        ax2.step(s, 1.0 - np.arange(len(s)) / len(s), where="post", label=name)
    ax1.set_xlabel("top-1 cosine similarity to training set")
    ax1.set_ylabel("density")
    ax2.set_xlabel("similarity threshold")
    ax2.set_ylabel("fraction of test items with top-1 >= threshold")
    for ax in (ax1, ax2):
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=120)
    plt.close(fig)
