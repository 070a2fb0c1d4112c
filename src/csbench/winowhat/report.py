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
from pathlib import Path

import pandas as pd

from ..findings import (Finding, anchor, at_baseline, difference_interval, effect_text, judge,
                        paired_interval, points, with_interval)
from ..sections import (Section, ci, is_random, markdown_table, num, pct, pval, random_note,
                        read_table,
                        select, write_summary)
from .stats import CATEGORIES

TITLE = "WinoWhat: WinoGrande and WSC, original vs paraphrased"
PAPER = "WinoWhat"  # whose findings this section checks


def inputs(targets: list[str]) -> dict[str, list[str]]:
    acc = select(targets, "winowhat/accuracy.tsv")
    return {"accuracy": acc, "mcnemar": select(targets, "winowhat/mcnemar.tsv"),
            # the item table's gold labels: the majority-class baseline
            "items": [p.removesuffix("accuracy.tsv") + "items.parquet" for p in acc]}


def planned(ins: dict[str, list[str]]) -> dict[str, str]:
    if not ins.get("accuracy"):
        return {}
    return {"winowhat_accuracy": "winowhat_accuracy.tsv",
            "winowhat_methods": "winowhat_methods.tsv",
            "winowhat_categories": "winowhat_categories.tsv",
            "winowhat_datasets": "winowhat_datasets.tsv",
            "paraphrase_effect": "paraphrase_effect.png"}


def section(ins: dict[str, list[str]], outputs: dict[str, str], links: dict[str, str],
            anchors: pd.DataFrame, subset: str = "in_original_experiment") -> Section:
    """``subset``: the config's ``winowhat.subset``."""
    if not ins.get("accuracy"):
        return Section("", findings=[Finding("WinoWhat", "(every WinoWhat finding)",
                                             verdict="not run", why="no accuracy table")])
    acc = read_table(ins["accuracy"][0])
    mcn = read_table(ins["mcnemar"][0]) if ins.get("mcnemar") else pd.DataFrame()
    items = ins.get("items", [])
    base = majority(pd.read_parquet(items[0], columns=["dataset", "variant", "label"])
                    if items and Path(items[0]).exists() else pd.DataFrame())
    head, cats = winowhat_tables(acc, mcn, subset)
    meth = methods_table(mcn, subset)
    write_summary(head, outputs["winowhat_accuracy"])
    write_summary(meth, outputs["winowhat_methods"])
    write_summary(cats, outputs["winowhat_categories"])
    sets = datasets_table(acc, mcn)
    write_summary(sets, outputs["winowhat_datasets"])
    plot_paraphrase_effect(cats, outputs["paraphrase_effect"], subset)
    md = (winowhat_markdown(head, meth, cats, links.get("paraphrase_effect"), base)
          + datasets_markdown(sets) + random_note(acc))
    return Section(md, tables={"winowhat_accuracy": head, "winowhat_methods": meth,
                               "winowhat_categories": cats, "winowhat_datasets": sets,
                               "winowhat_majority": base},
                   models=[("WinoWhat", acc)], findings=findings(head, cats, base, anchors))


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
                      figure: str | None, base: pd.DataFrame | None = None) -> str:
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
    if base is not None and not base.empty:  # the majority class, from the items' gold labels
        unpaired = pd.concat([unpaired, pd.DataFrame([{
            "model": "*majority class* (trivial baseline)",
            "WinoGrande dev, original": num(_share(base, "winogrande_dev")), "n (original)": "–",
            "WinoWhat paraphrased": num(_share(base, "winogrande_dev", "transf")),
            "n (paraphrased)": "–"}])], ignore_index=True)
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


DATASET_COLUMNS = ["model", "dataset", "category", "n_orig", "acc_orig", "ci_low_orig",
                   "ci_high_orig", "n_transf", "acc_transf", "n_pairs", "difference",
                   "diff_ci_low", "diff_ci_high", "p_value"]


def datasets_table(acc: pd.DataFrame, mcn: pd.DataFrame) -> pd.DataFrame:
    """Every scored data set (built-in and the user's winograd sets), paper's metric, subset
    ``all``: one row per model, data set and category (``all`` first), the original accuracy,
    the paraphrased one where the set has paraphrases, and (category ``all``) the paired
    paraphrase effect with its interval and McNemar's p."""
    acc, mcn = _with_method(acc), _with_method(mcn)
    a = acc[(acc["method"] == "paper") & (acc["subset"] == "all")]
    m = mcn[(mcn["method"] == "paper") & (mcn["subset"] == "all")] if not mcn.empty else mcn
    rows = []
    for (model, dataset), g in a.groupby(["model", "dataset"], sort=True):
        cats = ["all"] + [c for c in g["category"].unique() if c != "all"]
        for cat in cats:
            o = g[(g["variant"] == "orig") & (g["category"] == cat)]
            t = g[(g["variant"] == "transf") & (g["category"] == cat)]
            row = dict.fromkeys(DATASET_COLUMNS, NAN) | {"model": model, "dataset": dataset,
                                                        "category": cat}
            if len(o):
                row |= {"n_orig": o["n"].iloc[0], "acc_orig": o["accuracy"].iloc[0],
                        "ci_low_orig": o["ci_low"].iloc[0], "ci_high_orig": o["ci_high"].iloc[0]}
            if len(t):
                row |= {"n_transf": t["n"].iloc[0], "acc_transf": t["accuracy"].iloc[0]}
            p = m[(m["model"] == model) & (m["dataset"] == dataset)] if cat == "all" and len(m) else []
            if len(p):
                row |= {k: p[k].iloc[0] for k in ("n_pairs", "difference", "diff_ci_low",
                                                  "diff_ci_high", "p_value")}
            rows.append(row)
    return pd.DataFrame(rows, columns=DATASET_COLUMNS)


def datasets_markdown(sets: pd.DataFrame) -> str:
    if sets.empty:
        return ""
    show = pd.DataFrame({
        "model": sets["model"], "data set": sets["dataset"], "category": sets["category"],
        "n": [_count(v) for v in sets["n_orig"]],
        "original": [ci(r.acc_orig, r.ci_low_orig, r.ci_high_orig) for r in sets.itertuples()],
        "n (paraphrased)": [_count(v) for v in sets["n_transf"]],
        "paraphrased": [pct(v) for v in sets["acc_transf"]],
        "paraphrased − original [95% CI]": [_diff(r.difference, r.diff_ci_low, r.diff_ci_high)
                                            for r in sets.itertuples()],
        "McNemar p": [pval(p) for p in sets["p_value"]]})
    return ("\n\nEvery data set scored (`winowhat.datasets`: the built-in ones and the user's "
            "winograd sets, docs/datasets.md), paper's metric, all labelled items: accuracy in % "
            "with 95% bootstrap intervals, per common-sense category where the set has "
            "categories, and the paired paraphrase effect where it has paraphrases.\n\n"
            + markdown_table(show))


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



# ---------------------------------------------------------------------------------------------
# trivial baseline and findings

def majority(items: pd.DataFrame) -> pd.DataFrame:
    """The majority-class baseline per dataset and variant (subset ``all``, labelled items): the
    share of the most frequent gold option."""
    rows = []
    if not items.empty:
        lab = items[items["label"].notna()]
        for (dataset, variant), g in lab.groupby(["dataset", "variant"], sort=True):
            counts = g["label"].astype(str).value_counts()
            rows.append({"dataset": dataset, "variant": variant, "n": len(g),
                         "label": counts.index[0], "accuracy": counts.iloc[0] / len(g)})
    return pd.DataFrame(rows, columns=["dataset", "variant", "n", "label", "accuracy"])


def _share(base: pd.DataFrame, dataset: str, variant: str = "orig") -> float:
    b = base[(base["dataset"] == dataset) & (base["variant"] == variant)]
    return 100 * float(b["accuracy"].iloc[0]) if len(b) else float("nan")


def findings(head: pd.DataFrame, cats: pd.DataFrame, base: pd.DataFrame, anchors) -> list[Finding]:
    """Per model: lower accuracy on the paraphrases (paired, McNemar's items), in every category,
    and WSC above WinoGrande; each judged against the majority-class baseline."""
    a = lambda m, s, t="t1": anchor(anchors, f"winowhat.{t}.{m}.{s}.accuracy")  # noqa: E731
    para = "; ".join(f"{name} {points(a(m, 'wg-val-original', t))} → "
                     f"{points(a(m, 'wg-val-paraphrased', t))}"
                     for name, m, t in (("OPT 1.3B", "opt-1.3b", "t2"), ("Gemma 2 2B", "gemma2-2b", "t1"),
                                        ("Pythia 1B", "pythia-1b", "t4")))
    ids_para = [f"winowhat.{t}.{m}.wg-val-{v}.accuracy" for m, t in
                (("opt-1.3b", "t2"), ("gemma2-2b", "t1"), ("pythia-1b", "t4"))
                for v in ("original", "paraphrased")]
    lower = [c for c in CATEGORIES if a("gemma2-2b", f"wg-val-{c}-paraphrased")
             < a("gemma2-2b", f"wg-val-{c}-original")]
    known = all(a("gemma2-2b", f"wg-val-{c}-{v}") == a("gemma2-2b", f"wg-val-{c}-{v}")
                for c in CATEGORIES for v in ("original", "paraphrased"))
    cat_paper = (f"Gemma 2 2B lower in {len(lower) if known else '–'} of {len(CATEGORIES)} "
                 "categories (Table 1)")
    ids_cat = [f"winowhat.t1.gemma2-2b.wg-val-{c}-{v}.accuracy" for c in CATEGORIES
               for v in ("original", "paraphrased")]
    wsc_paper = "; ".join(f"{name} WSC {points(a(m, 'wsc-original', 't3'))} vs WinoGrande "
                          f"{points(a(m, 'wg-val-original', 't3'))}"
                          for name, m in (("OPT 1.3B", "opt-1.3b"), ("Gemma 2 2B", "gemma2-2b")))
    ids_wsc = [f"winowhat.t3.{m}.{s}.accuracy" for m in ("opt-1.3b", "gemma2-2b")
               for s in ("wsc-original", "wg-val-original")]
    wg_major, wsc_major = _share(base, "winogrande_dev"), _share(base, "wsc")
    wg_base = f"majority class {points(wg_major)}" if wg_major == wg_major else "–"
    out = []
    for r in head.itertuples():
        wg = (100 * r.wg_orig_acc, 100 * r.wg_orig_ci_low, 100 * r.wg_orig_ci_high)
        below = (f"original accuracy {points(wg[1])} (interval low) ≤ majority class {points(wg_major)}"
                 if at_baseline(wg[1], wg_major) else None)
        f = Finding("WinoWhat", "every model scores lower on the paraphrases (paired)", para,
                    baseline=wg_base, system=f"{r.model}, WinoGrande dev", metric="accuracy",
                    anchors=ids_para)
        d, lo, hi = paired_interval(r.paired_n_pairs, r.paired_orig_only_correct,
                                    r.paired_transf_only_correct)
        f.effect, f.ci_low, f.ci_high, f.n = 100 * d, 100 * lo, 100 * hi, r.paired_n_pairs
        if r.paired_n_pairs != r.paired_n_pairs:
            f.verdict, f.why = judge(missing="no paired comparison (mcnemar.tsv has no row)")
        else:
            f.ours = (f"{points(100 * r.paired_acc_orig)} → {points(100 * r.paired_acc_transf)} "
                      f"(n {int(r.paired_n_pairs)}); " + effect_text(f.effect, f.ci_low, f.ci_high)
                      + f", McNemar p {pval(r.paired_p_value)}")
            f.verdict, f.why = judge(f.effect, f.ci_low, f.ci_high, at_baseline=below)
        out.append(f)
        out.append(_category_finding(r.model, cats, cat_paper, wg_base, below, ids_cat))
        f = Finding("WinoWhat", "WSC scores above WinoGrande", wsc_paper,
                    baseline=f"majority class {points(wsc_major)}" if wsc_major == wsc_major else "–",
                    system=f"{r.model}, originals", metric="accuracy", anchors=ids_wsc)
        wsc = (100 * r.wsc_orig_acc, 100 * r.wsc_orig_ci_low, 100 * r.wsc_orig_ci_high)
        if wsc[0] != wsc[0]:
            f.verdict, f.why = judge(missing="WSC was not scored (`winowhat.benchmarks`)")
        else:
            f.effect, f.ci_low, f.ci_high = difference_interval(*wsc, *wg)
            f.n = r.wsc_orig_n
            f.ours = (f"WSC {with_interval(*wsc)} vs WinoGrande {with_interval(*wg)}; "
                      + effect_text(f.effect, f.ci_low, f.ci_high))
            f.verdict, f.why = judge(f.effect, f.ci_low, f.ci_high, at_baseline=(
                f"WSC accuracy {points(wsc[1])} (interval low) ≤ majority class {points(wsc_major)}"
                if at_baseline(wsc[1], wsc_major) else None))
        out.append(f)
    return out


def _category_finding(model, cats, paper, baseline, below, ids) -> Finding:
    f = Finding("WinoWhat", "lower on the paraphrases in every category", paper, baseline=baseline,
                system=f"{model}, WinoGrande dev", metric="accuracy", anchors=ids)
    c = cats[(cats["model"] == model) & cats["category"].isin(CATEGORIES)] if not cats.empty else cats
    if c.empty:
        f.verdict, f.why = judge(missing="no per-category accuracy")
        return f
    drops = [difference_interval(100 * r.acc_orig, 100 * r.ci_low_orig, 100 * r.ci_high_orig,
                                 100 * r.acc_transf, 100 * r.ci_low_transf, 100 * r.ci_high_transf)
             for r in c.itertuples()]
    lower = sum(d > 0 for d, _, _ in drops)
    f.ours = (f"lower in {lower} of {len(drops)} categories; interval above 0 in "
              f"{sum(lo > 0 for _, lo, _ in drops)}, below 0 in {sum(hi < 0 for _, _, hi in drops)}")
    f.n = len(drops)
    # every category must show the drop: the weakest category decides
    f.effect, f.ci_low, f.ci_high = min(drops, key=lambda x: x[1])
    if any(hi < 0 for _, _, hi in drops):
        f.ci_low, f.ci_high = min(lo for _, lo, _ in drops), min(hi for _, _, hi in drops)
    f.verdict, f.why = judge(f.effect, f.ci_low, f.ci_high, at_baseline=below)
    return f
