"""The top-1 similarity figure across audits (one curve per benchmark), and the audits' table in
RESULTS.md (one row per audit of ``results/audit/summary.tsv``)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..sections import markdown_table, num


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


AUDIT_COLUMNS = {"audit": "audit", "n_train": "train items", "n_test": "test items",
                 "exact_duplicate_pairs": "exact dup. pairs",
                 "normalised_duplicate_pairs": "normalised dup. pairs",
                 "test_items_with_duplicate": "test items with a dup.", "top1_mean": "top-1 mean",
                 "top1_q50": "top-1 median", "top1_q90": "top-1 90th", "top1_q99": "top-1 99th",
                 "top1_max": "top-1 max", "pct_top1_ge_0.8": "% ≥ 0.8", "pct_top1_ge_0.9": "% ≥ 0.9",
                 "pct_top1_ge_0.95": "% ≥ 0.95"}


def audits_markdown(df: pd.DataFrame) -> str:
    cols = [c for c in AUDIT_COLUMNS if c in df]
    show = df[cols].copy()
    for c in cols:
        if c.startswith("top1_"):
            show[c] = show[c].map(lambda v: num(v, 3))
        elif c.startswith("pct_"):
            show[c] = show[c].map(lambda v: num(v, 2))
    show.columns = [AUDIT_COLUMNS[c] for c in cols]
    return ("Train/test overlap per benchmark: duplicate pairs (exact, and equal after folding case, "
            "punctuation and whitespace) and the distribution of each test item's top-1 cosine "
            "similarity to the training items under the embedder.\n\n" + markdown_table(show))

