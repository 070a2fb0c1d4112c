"""WinoWhat's part of RESULTS.md, from ``accuracy.tsv`` and ``mcnemar.tsv`` only (rows selected
and pivoted, nothing recomputed), on one subset throughout (``winowhat.subset``, the paper's by
default):

* the headline, one row per model (:func:`winowhat_tables`): the paired comparison on WinoGrande
  dev under the paper's metric (``paired_*``) and under the control (``control_*``: the sentence
  from the blank on, scored the same way on both sides), the unpaired accuracies and WSC273;
* the metric confound, one row per model and way of reading the scores (:func:`methods_table`);
* the categories, one row per model and common-sense category (the paper's metric, with the
  control's difference beside it); the paraphrase-effect figure.
"""
from __future__ import annotations

import math

import pandas as pd

from ..sections import (Section, ci, is_random, markdown_table, pct, pval, random_note, read_table,
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
            "winowhat_methods": "winowhat_methods.tsv",
            "winowhat_categories": "winowhat_categories.tsv",
            "paraphrase_effect": "paraphrase_effect.png"}


def section(ins: dict[str, list[str]], outputs: dict[str, str], links: dict[str, str],
            anchors: pd.DataFrame, subset: str = "in_original_experiment") -> Section:
    """``subset``: the config's ``winowhat.subset``."""
    if not ins.get("accuracy"):
        return Section("")
    acc = read_table(ins["accuracy"][0])
    mcn = read_table(ins["mcnemar"][0]) if ins.get("mcnemar") else pd.DataFrame()
    head, cats = winowhat_tables(acc, mcn, subset)
    meth = methods_table(mcn, subset)
    write_summary(head, outputs["winowhat_accuracy"])
    write_summary(meth, outputs["winowhat_methods"])
    write_summary(cats, outputs["winowhat_categories"])
    plot_paraphrase_effect(cats, outputs["paraphrase_effect"], subset)
    md = winowhat_markdown(head, meth, cats, links.get("paraphrase_effect")) + random_note(acc)
    return Section(md, tables={"winowhat_accuracy": head, "winowhat_methods": meth,
                               "winowhat_categories": cats},
                   models=[("WinoWhat", acc)])


def winowhat_tables(acc: pd.DataFrame, mcn: pd.DataFrame, subset: str = "in_original_experiment"
                    ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Headline table (one row per model) and the per-category table (one row per model and
    category), both on ``subset``."""
    return headline_table(acc, mcn, subset), categories_table(acc, subset)


CONTROL = "sentence"  # the control reported beside the paper's metric in the headline
METHOD_LABELS = {
    "paper": "paper's metric (partial scoring on originals, option tokens on paraphrases)",
    "sentence": "control: the sentence from the blank on, on both sides",
    "sentence_norm": "control, per character (lm-eval's acc_norm)",
}
PAIRED = ("n_pairs", "acc_orig", "acc_transf", "difference", "diff_ci_low", "diff_ci_high",
          "orig_only_correct", "transf_only_correct", "p_value")
NAN = float("nan")


def _with_method(df: pd.DataFrame) -> pd.DataFrame:
    """Tables written before the control existed hold the paper's metric only."""
    return df if df.empty or "method" in df else df.assign(method="paper")


def _is_random(df: pd.DataFrame) -> bool:
    return "random_model" in df and bool(is_random(df["random_model"]).any())


def _paired(mcn: pd.DataFrame, model: str, subset: str, method: str) -> dict:
    if mcn.empty:
        return {c: NAN for c in PAIRED}
    m = mcn[(mcn["model"] == model) & (mcn["subset"] == subset) & (mcn["method"] == method)
            & (mcn["dataset"] == "winogrande_dev")]
    return {c: (m.iloc[0][c] if len(m) and c in m else NAN) for c in PAIRED}


def headline_table(acc: pd.DataFrame, mcn: pd.DataFrame, subset: str) -> pd.DataFrame:
    """One row per model (``subset`` of WinoGrande dev; WSC273 has no subsets: all its items)."""
    acc, mcn = _with_method(acc), _with_method(mcn)
    paper = acc[acc["method"] == "paper"]
    rows = []
    for model in sorted(paper["model"].astype(str).unique()):
        a = paper[(paper["model"] == model) & (paper["category"] == "all")]
        a = a.set_index(["dataset", "variant", "subset"])
        row = {"model": model, "subset": subset}
        for key, idx in {"wg_orig": ("winogrande_dev", "orig", subset),
                         "wg_para": ("winogrande_dev", "transf", subset),
                         "wsc_orig": ("wsc", "orig", "all")}.items():
            for col in ("n", "accuracy", "ci_low", "ci_high"):
                name = "acc" if col == "accuracy" else col
                row[f"{key}_{name}"] = a[col].get(idx, NAN)
        row.update({f"paired_{c}": v for c, v in _paired(mcn, model, subset, "paper").items()})
        row.update({f"control_{c}": v for c, v in _paired(mcn, model, subset, CONTROL).items()})
        row["random_model"] = _is_random(a)
        rows.append(row)
    return pd.DataFrame(rows)


def methods_table(mcn: pd.DataFrame, subset: str) -> pd.DataFrame:
    """One row per model and method: the paired comparison on WinoGrande dev."""
    mcn = _with_method(mcn)
    if mcn.empty:
        return pd.DataFrame(columns=["model", "method", *PAIRED])
    d = mcn[(mcn["dataset"] == "winogrande_dev") & (mcn["subset"] == subset)]
    order = {m: i for i, m in enumerate(METHOD_LABELS)}
    d = d.assign(_o=d["method"].map(order)).sort_values(["model", "_o"], kind="stable")
    return d.reindex(columns=["model", "method", *PAIRED]).reset_index(drop=True)


def categories_table(acc: pd.DataFrame, subset: str) -> pd.DataFrame:
    """One row per model and category: the paper's metric orig / transf (unpaired, with CIs), and
    the difference under the paper's metric and under the control."""
    acc = _with_method(acc)
    wg = acc[(acc["dataset"] == "winogrande_dev") & (acc["subset"] == subset)]
    out = []
    for model in sorted(wg["model"].astype(str).unique()):
        g = wg[wg["model"] == model].set_index(["method", "category", "variant"])

        def get(method, cat, variant, col="accuracy"):
            return g[col].get((method, cat, variant), NAN)

        for cat in ("all",) + CATEGORIES:
            o, t = get("paper", cat, "orig"), get("paper", cat, "transf")
            if math.isnan(o) and math.isnan(t):
                continue
            out.append({"model": model, "category": cat, "subset": subset,
                        "n_orig": get("paper", cat, "orig", "n"), "acc_orig": o,
                        "ci_low_orig": get("paper", cat, "orig", "ci_low"),
                        "ci_high_orig": get("paper", cat, "orig", "ci_high"),
                        "n_transf": get("paper", cat, "transf", "n"), "acc_transf": t,
                        "ci_low_transf": get("paper", cat, "transf", "ci_low"),
                        "ci_high_transf": get("paper", cat, "transf", "ci_high"),
                        "difference": t - o,
                        "control_difference": (get(CONTROL, cat, "transf")
                                               - get(CONTROL, cat, "orig"))})
    return pd.DataFrame(out)


# ---------------------------------------------------------------------------------------------
# text

def _pts(x) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) \
        else f"{100 * float(x):+.1f}"


def _diff(d, lo, hi) -> str:
    return "–" if math.isnan(float(d)) else f"{_pts(d)} [{_pts(lo)}, {_pts(hi)}]"


def _count(x) -> str:
    return "–" if math.isnan(float(x)) else f"{int(x):,}"


SUBSET_TEXT = {
    "in_original_experiment": "subset `in_original_experiment`: the WinoWhat rows the paper's "
    "experiments used and their original dev items",
    "all": "subset `all`: every WinoGrande dev item and every WinoWhat row",
}


def winowhat_markdown(head: pd.DataFrame, meth: pd.DataFrame, cats: pd.DataFrame,
                      figure: str | None) -> str:
    """The section's text: the paired headline with the control, the unpaired accuracies, the
    metric-confound table, the categories."""
    subset = head["subset"].iloc[0] if len(head) else "in_original_experiment"
    show = pd.DataFrame({
        "model": head["model"],
        "pairs": [_count(v) for v in head["paired_n_pairs"]],
        "original": [pct(v) for v in head["paired_acc_orig"]],
        "paraphrased": [pct(v) for v in head["paired_acc_transf"]],
        "paraphrased − original [95% CI]": [
            _diff(r.paired_difference, r.paired_diff_ci_low, r.paired_diff_ci_high)
            for r in head.itertuples()],
        "discordant (orig only / para only)": [
            f"{_count(a)} / {_count(b)}" for a, b in
            zip(head["paired_orig_only_correct"], head["paired_transf_only_correct"])],
        "McNemar p": [pval(p) for p in head["paired_p_value"]],
        "control: original → paraphrased": [
            f"{pct(a)} → {pct(b)}" for a, b in
            zip(head["control_acc_orig"], head["control_acc_transf"])],
        "control difference [95% CI]": [
            _diff(r.control_difference, r.control_diff_ci_low, r.control_diff_ci_high)
            for r in head.itertuples()],
        "control McNemar p": [pval(p) for p in head["control_p_value"]],
        "WSC273 sample, original": [ci(r.wsc_orig_acc, r.wsc_orig_ci_low, r.wsc_orig_ci_high)
                                    for r in head.itertuples()],
    })
    parts = [
        f"WinoGrande dev, {SUBSET_TEXT.get(subset, f'subset `{subset}`')} (`winowhat.subset`). "
        "Headline: each paraphrase against its own original, on the same items: accuracy in %, "
        "the difference in points with a 95% paired bootstrap interval, the discordant pairs and "
        "McNemar's exact test. Paper's metric: the original sentences by partial scoring (the "
        "text after the option), the paraphrases by the option's own tokens; the two sides use "
        "different metrics, a confound the paper names. Control: both sides scored the same way, "
        "on the sentence from the blank to its end (the option and everything after it), which "
        "ranks the options as the whole sentence's log-probability does.",
        markdown_table(show)]
    unpaired = pd.DataFrame({
        "model": head["model"],
        "WinoGrande dev, original": [ci(r.wg_orig_acc, r.wg_orig_ci_low, r.wg_orig_ci_high)
                                     for r in head.itertuples()],
        "n (original)": [_count(v) for v in head["wg_orig_n"]],
        "WinoWhat paraphrased": [ci(r.wg_para_acc, r.wg_para_ci_low, r.wg_para_ci_high)
                                 for r in head.itertuples()],
        "n (paraphrased)": [_count(v) for v in head["wg_para_n"]],
    })
    parts += ["Unpaired accuracy (paper's metric, % with 95% bootstrap intervals), as the paper's "
              "tables report it:", markdown_table(unpaired)]
    if not meth.empty:
        conf = pd.DataFrame({
            "model": meth["model"],
            "scoring": [METHOD_LABELS.get(m, m) for m in meth["method"]],
            "original": [pct(v) for v in meth["acc_orig"]],
            "paraphrased": [pct(v) for v in meth["acc_transf"]],
            "difference [95% CI]": [_diff(r.difference, r.diff_ci_low, r.diff_ci_high)
                                    for r in meth.itertuples()],
            "McNemar p": [pval(p) for p in meth["p_value"]],
        })
        parts += ["The metric confound: the same pairs read three ways (accuracy in %, "
                  "difference in points).", markdown_table(conf)]
    if not cats.empty:
        wide = []
        for model in sorted(cats["model"].unique()):
            c = cats[cats["model"] == model].set_index("category")
            row = {"model": model}
            for cat in ("all",) + CATEGORIES:
                if cat in c.index:
                    r = c.loc[cat]
                    row[cat] = (f"{pct(r['acc_orig'])} / {pct(r['acc_transf'])} "
                                f"({_pts(r['difference'])}; control {_pts(r['control_difference'])})")
            wide.append(row)
        parts += [f"Per common-sense category (WinoGrande dev, subset `{subset}`): original / "
                  "paraphrased accuracy in % under the paper's metric, and the paraphrase effect "
                  "in points under the paper's metric and under the control. An item counts in "
                  "every category WinoWhat gives it.",
                  markdown_table(pd.DataFrame(wide).fillna("–"))]
    if figure:
        parts.append(f"![Paraphrase effect per category]({figure})")
    return "\n\n".join(parts)


def plot_paraphrase_effect(cats: pd.DataFrame, path, subset: str = "in_original_experiment") -> None:
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
    ax.set_title(f"WinoWhat paraphrase effect per category (WinoGrande dev, subset {subset}), "
                 "paper's metric", fontsize=9)
    if models:
        ax.legend(fontsize=7)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110, metadata={"Software": None})
    plt.close(fig)

