"""The WinoWhat summary RESULTS.md shows, from the task's result tables only (``accuracy.tsv``,
``mcnemar.tsv``): one subset throughout (``winowhat.subset``, the paper's by default), the paired
comparison as the headline, and the control for the paper's metric confound beside it.

* :func:`headline`: one row per model: the paired comparison on WinoGrande dev under the paper's
  metric (``paired_*``) and under the control (``control_*``: the sentence from the blank on,
  scored the same way on both sides), the unpaired accuracies and WSC273;
* :func:`methods`: one row per model and way of reading the scores (the confound table);
* :func:`categories`: one row per model and common-sense category (the paper's metric, with the
  control's paired difference beside it);
* :func:`markdown`: the section's text.

Nothing is recomputed here: rows are selected and pivoted.
"""
from __future__ import annotations

import math

import pandas as pd

from .stats import CATEGORIES

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
    return "random_model" in df and bool(df["random_model"].astype(str).str.lower()
                                         .eq("true").any())


def _paired(mcn: pd.DataFrame, model: str, subset: str, method: str) -> dict:
    if mcn.empty:
        return {c: NAN for c in PAIRED}
    m = mcn[(mcn["model"] == model) & (mcn["subset"] == subset) & (mcn["method"] == method)
            & (mcn["dataset"] == "winogrande_dev")]
    return {c: (m.iloc[0][c] if len(m) and c in m else NAN) for c in PAIRED}


def headline(acc: pd.DataFrame, mcn: pd.DataFrame, subset: str) -> pd.DataFrame:
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


def methods(mcn: pd.DataFrame, subset: str) -> pd.DataFrame:
    """One row per model and method: the paired comparison on WinoGrande dev."""
    mcn = _with_method(mcn)
    if mcn.empty:
        return pd.DataFrame(columns=["model", "method", *PAIRED])
    d = mcn[(mcn["dataset"] == "winogrande_dev") & (mcn["subset"] == subset)]
    order = {m: i for i, m in enumerate(METHOD_LABELS)}
    d = d.assign(_o=d["method"].map(order)).sort_values(["model", "_o"], kind="stable")
    return d.reindex(columns=["model", "method", *PAIRED]).reset_index(drop=True)


def categories(acc: pd.DataFrame, subset: str) -> pd.DataFrame:
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

def _pct(x) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * float(x):.1f}"


def _pts(x) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) \
        else f"{100 * float(x):+.1f}"


def _ci(acc, lo, hi) -> str:
    return "–" if math.isnan(float(acc)) else f"{_pct(acc)} [{_pct(lo)}, {_pct(hi)}]"


def _diff(d, lo, hi) -> str:
    return "–" if math.isnan(float(d)) else f"{_pts(d)} [{_pts(lo)}, {_pts(hi)}]"


def _count(x) -> str:
    return "–" if math.isnan(float(x)) else f"{int(x):,}"


SUBSET_TEXT = {
    "in_original_experiment": "subset `in_original_experiment`: the WinoWhat rows the paper's "
    "experiments used and their original dev items",
    "all": "subset `all`: every WinoGrande dev item and every WinoWhat row",
}


def markdown(head: pd.DataFrame, meth: pd.DataFrame, cats: pd.DataFrame, figure: str | None,
             table, pval) -> str:
    """The WinoWhat section (``table``: DataFrame -> Markdown; ``pval``: p-value format)."""
    subset = head["subset"].iloc[0] if len(head) else "in_original_experiment"
    show = pd.DataFrame({
        "model": head["model"],
        "pairs": [_count(v) for v in head["paired_n_pairs"]],
        "original": [_pct(v) for v in head["paired_acc_orig"]],
        "paraphrased": [_pct(v) for v in head["paired_acc_transf"]],
        "paraphrased − original [95% CI]": [
            _diff(r.paired_difference, r.paired_diff_ci_low, r.paired_diff_ci_high)
            for r in head.itertuples()],
        "discordant (orig only / para only)": [
            f"{_count(a)} / {_count(b)}" for a, b in
            zip(head["paired_orig_only_correct"], head["paired_transf_only_correct"])],
        "McNemar p": [pval(p) for p in head["paired_p_value"]],
        "control: original → paraphrased": [
            f"{_pct(a)} → {_pct(b)}" for a, b in
            zip(head["control_acc_orig"], head["control_acc_transf"])],
        "control difference [95% CI]": [
            _diff(r.control_difference, r.control_diff_ci_low, r.control_diff_ci_high)
            for r in head.itertuples()],
        "control McNemar p": [pval(p) for p in head["control_p_value"]],
        "WSC273 sample, original": [_ci(r.wsc_orig_acc, r.wsc_orig_ci_low, r.wsc_orig_ci_high)
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
        table(show)]
    unpaired = pd.DataFrame({
        "model": head["model"],
        "WinoGrande dev, original": [_ci(r.wg_orig_acc, r.wg_orig_ci_low, r.wg_orig_ci_high)
                                     for r in head.itertuples()],
        "n (original)": [_count(v) for v in head["wg_orig_n"]],
        "WinoWhat paraphrased": [_ci(r.wg_para_acc, r.wg_para_ci_low, r.wg_para_ci_high)
                                 for r in head.itertuples()],
        "n (paraphrased)": [_count(v) for v in head["wg_para_n"]],
    })
    parts += ["Unpaired accuracy (paper's metric, % with 95% bootstrap intervals), as the paper's "
              "tables report it:", table(unpaired)]
    if not meth.empty:
        conf = pd.DataFrame({
            "model": meth["model"],
            "scoring": [METHOD_LABELS.get(m, m) for m in meth["method"]],
            "original": [_pct(v) for v in meth["acc_orig"]],
            "paraphrased": [_pct(v) for v in meth["acc_transf"]],
            "difference [95% CI]": [_diff(r.difference, r.diff_ci_low, r.diff_ci_high)
                                    for r in meth.itertuples()],
            "McNemar p": [pval(p) for p in meth["p_value"]],
        })
        parts += ["The metric confound: the same pairs read three ways (accuracy in %, "
                  "difference in points).", table(conf)]
    if not cats.empty:
        wide = []
        for model in sorted(cats["model"].unique()):
            c = cats[cats["model"] == model].set_index("category")
            row = {"model": model}
            for cat in ("all",) + CATEGORIES:
                if cat in c.index:
                    r = c.loc[cat]
                    row[cat] = (f"{_pct(r['acc_orig'])} / {_pct(r['acc_transf'])} "
                                f"({_pts(r['difference'])}; control {_pts(r['control_difference'])})")
            wide.append(row)
        parts += [f"Per common-sense category (WinoGrande dev, subset `{subset}`): original / "
                  "paraphrased accuracy in % under the paper's metric, and the paraphrase effect "
                  "in points under the paper's metric and under the control. An item counts in "
                  "every category WinoWhat gives it.",
                  table(pd.DataFrame(wide).fillna("–"))]
    if figure:
        parts.append(f"![Paraphrase effect per category]({figure})")
    return "\n\n".join(parts)
