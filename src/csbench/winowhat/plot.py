"""Figure: accuracy orig vs transf per model and category (95% bootstrap intervals), paper's metric."""
from __future__ import annotations

import pandas as pd


def plot_accuracy(acc: pd.DataFrame, path, dataset: str = "winogrande_dev",
                  subset: str = "in_original_experiment", title_note: str = "") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..io import atomic_path

    acc = acc[acc["method"] == "paper"] if "method" in acc else acc
    d = acc[(acc["dataset"] == dataset) & (acc["subset"] == subset)]
    if d.empty:
        d = acc[acc["dataset"] == dataset]
    models = sorted(d["model"].unique()) or ["(no data)"]
    cats = [c for c in ["all", "physical", "social", "numerical", "temporal", "spatial"]
            if c in set(d["category"])]
    fig, axes = plt.subplots(1, len(models), figsize=(4.5 * len(models), 3.6), squeeze=False,
                             sharey=True)
    for ax, model in zip(axes[0], models):
        for j, (variant, colour) in enumerate((("orig", "#4c72b0"), ("transf", "#dd8452"))):
            v = d[(d["model"] == model) & (d["variant"] == variant)].set_index("category")
            xs = [i + (j - 0.5) * 0.38 for i in range(len(cats))]
            ys = [v["accuracy"].get(c, float("nan")) for c in cats]
            lo = [y - v["ci_low"].get(c, y) for c, y in zip(cats, ys)]
            hi = [v["ci_high"].get(c, y) - y for c, y in zip(cats, ys)]
            ax.bar(xs, ys, width=0.38, color=colour, label=variant, yerr=[lo, hi], capsize=2)
        ax.axhline(0.5, color="grey", lw=0.8, ls="--")
        ax.set_xticks(range(len(cats)), cats, rotation=35, ha="right")
        ax.set_title(f"{model}{title_note}", fontsize=9)
        ax.set_ylim(0, 1)
    axes[0][0].set_ylabel("accuracy")
    fig.suptitle(f"{dataset}, {subset}: orig vs transf (95% bootstrap CI)", fontsize=10)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=120)
    plt.close(fig)
