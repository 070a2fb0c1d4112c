"""WinoWhat's part of RESULTS.md: the headline table (original, paraphrased, paired, WSC), the
per-category table and the paraphrase-effect figure, from ``accuracy.tsv`` and ``mcnemar.tsv``."""
from __future__ import annotations

import math

import pandas as pd

from ..sections import (Section, ci, markdown_table, num, pct, pval, random_note, read_table,
                        select, write_summary)
from .stats import CATEGORIES

TITLE = "WinoWhat: WinoGrande and WSC, original vs paraphrased"


def inputs(targets: list[str]) -> dict[str, list[str]]:
    return {"accuracy": select(targets, "winowhat/accuracy.tsv"),
            "mcnemar": select(targets, "winowhat/mcnemar.tsv")}


def planned(ins: dict[str, list[str]]) -> dict[str, str]:
    if not ins.get("accuracy"):
        return {}
    return {"winowhat_accuracy": "winowhat_accuracy.tsv",
            "winowhat_categories": "winowhat_categories.tsv",
            "paraphrase_effect": "paraphrase_effect.png"}


def section(ins: dict[str, list[str]], outputs: dict[str, str], links: dict[str, str],
            anchors: pd.DataFrame) -> Section:
    if not ins.get("accuracy"):
        return Section("")
    acc = read_table(ins["accuracy"][0])
    mcn = read_table(ins["mcnemar"][0]) if ins.get("mcnemar") else pd.DataFrame()
    head, cats = winowhat_tables(acc, mcn)
    write_summary(head, outputs["winowhat_accuracy"])
    write_summary(cats, outputs["winowhat_categories"])
    plot_paraphrase_effect(cats, outputs["paraphrase_effect"])
    md = winowhat_markdown(head, cats, links.get("paraphrase_effect")) + random_note(acc)
    return Section(md, tables={"winowhat_accuracy": head, "winowhat_categories": cats},
                   models=[("WinoWhat", acc)])


def winowhat_tables(acc: pd.DataFrame, mcn: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Headline table (one row per model) and the per-category table (one row per model and
    category), both on subset ``all``."""
    acc = acc[acc["subset"] == "all"]
    rows = []
    for model in sorted(acc["model"].astype(str).unique()):
        a = acc[(acc["model"] == model) & (acc["category"] == "all")].set_index(["dataset", "variant"])
        m = mcn[(mcn["model"] == model) & (mcn["subset"] == "all")
                & (mcn["dataset"] == "winogrande_dev")] if not mcn.empty else mcn

        def cell(dataset, variant, col):
            return a[col].get((dataset, variant), float("nan"))

        row = {"model": model}
        for key, (dataset, variant) in {"wg_orig": ("winogrande_dev", "orig"),
                                        "wg_para": ("winogrande_dev", "transf"),
                                        "wsc_orig": ("wsc", "orig")}.items():
            row[f"{key}_n"] = cell(dataset, variant, "n")
            row[f"{key}_acc"] = cell(dataset, variant, "accuracy")
            row[f"{key}_ci_low"] = cell(dataset, variant, "ci_low")
            row[f"{key}_ci_high"] = cell(dataset, variant, "ci_high")
        first = m.iloc[0] if len(m) else {}
        for col in ("n_pairs", "acc_orig", "acc_transf", "orig_only_correct", "transf_only_correct",
                    "p_value"):
            row[f"paired_{col}"] = first.get(col, float("nan")) if len(m) else float("nan")
        row["random_model"] = bool(a["random_model"].astype(str).str.lower().eq("true").any()) \
            if "random_model" in a else False
        rows.append(row)
    head = pd.DataFrame(rows)
    cats = []
    wg = acc[acc["dataset"] == "winogrande_dev"]
    for model in sorted(wg["model"].astype(str).unique()):
        g = wg[wg["model"] == model].set_index(["category", "variant"])
        for cat in ("all",) + CATEGORIES:
            o, t = g["accuracy"].get((cat, "orig"), float("nan")), g["accuracy"].get((cat, "transf"),
                                                                                     float("nan"))
            if math.isnan(o) and math.isnan(t):
                continue
            cats.append({"model": model, "category": cat,
                         "n_orig": g["n"].get((cat, "orig"), float("nan")),
                         "acc_orig": o, "ci_low_orig": g["ci_low"].get((cat, "orig"), float("nan")),
                         "ci_high_orig": g["ci_high"].get((cat, "orig"), float("nan")),
                         "n_transf": g["n"].get((cat, "transf"), float("nan")),
                         "acc_transf": t,
                         "ci_low_transf": g["ci_low"].get((cat, "transf"), float("nan")),
                         "ci_high_transf": g["ci_high"].get((cat, "transf"), float("nan")),
                         "difference": t - o})
    return head, pd.DataFrame(cats)



def winowhat_markdown(head: pd.DataFrame, cats: pd.DataFrame, figure: str | None) -> str:
    show = pd.DataFrame({
        "model": head["model"],
        "WinoGrande dev, original": [ci(r.wg_orig_acc, r.wg_orig_ci_low, r.wg_orig_ci_high)
                                     for r in head.itertuples()],
        "WinoWhat paraphrased": [ci(r.wg_para_acc, r.wg_para_ci_low, r.wg_para_ci_high)
                                 for r in head.itertuples()],
        "paired n": [num(v, 0) for v in head["paired_n_pairs"]],
        "paired orig vs para": [f"{pct(a)} vs {pct(b)}" for a, b in
                                zip(head["paired_acc_orig"], head["paired_acc_transf"])],
        "discordant (orig only / para only)": [
            f"{num(a, 0)} / {num(b, 0)}" for a, b in
            zip(head["paired_orig_only_correct"], head["paired_transf_only_correct"])],
        "McNemar exact p": [pval(p) for p in head["paired_p_value"]],
        "WSC273, original": [ci(r.wsc_orig_acc, r.wsc_orig_ci_low, r.wsc_orig_ci_high)
                             for r in head.itertuples()],
    })
    parts = ["Accuracy in % with 95% bootstrap intervals (subset `all`: WinoGrande dev = every dev "
             "item, paraphrased = every WinoWhat row); the paired columns compare each paraphrase with "
             "its original on the same items (exact McNemar test on the discordant pairs).",
             markdown_table(show)]
    if not cats.empty:
        wide = []
        for model in sorted(cats["model"].unique()):
            c = cats[cats["model"] == model].set_index("category")
            row = {"model": model}
            for cat in ("all",) + CATEGORIES:
                if cat in c.index:
                    r = c.loc[cat]
                    diff = num(r["difference"], 1, 100)
                    row[cat] = f"{pct(r['acc_orig'])} / {pct(r['acc_transf'])} ({diff})"
            wide.append(row)
        parts += ["Per common-sense category (WinoGrande dev, subset `all`): original / paraphrased "
                  "accuracy in %, and the paraphrase effect in points (paraphrased − original). An "
                  "item counts in every category WinoWhat gives it.",
                  markdown_table(pd.DataFrame(wide).fillna("–"))]
    if figure:
        parts.append(f"![Paraphrase effect per category]({figure})")
    return "\n\n".join(parts)


def plot_paraphrase_effect(cats: pd.DataFrame, path) -> None:
    """Bars: paraphrased − original accuracy (points) per category, one bar per model."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..io import atomic_path

    order = [c for c in ("all",) + CATEGORIES if c in set(cats.get("category", []))]
    models = sorted(cats["model"].unique()) if not cats.empty else []
    fig, ax = plt.subplots(figsize=(max(5.0, 1.3 * len(order) + 1), 3.6))
    width = 0.8 / max(1, len(models))
    for j, model in enumerate(models):
        d = cats[cats["model"] == model].set_index("category")["difference"]
        xs = [i + (j - (len(models) - 1) / 2) * width for i in range(len(order))]
        ax.bar(xs, [100 * d.get(c, float("nan")) for c in order], width=width, label=model)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xticks(range(len(order)), order, rotation=30, ha="right")
    ax.set_ylabel("paraphrased − original (points)")
    ax.set_title("WinoWhat paraphrase effect per category (WinoGrande dev, subset all)", fontsize=9)
    if models:
        ax.legend(fontsize=7)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110, metadata={"Software": None})
    plt.close(fig)

