"""WinoWhat's part of RESULTS.md: the headline table (original, paraphrased, paired, WSC), the
per-category table and the paraphrase-effect figure, from ``accuracy.tsv`` and ``mcnemar.tsv``."""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from ..findings import (Finding, anchor, at_baseline, difference_interval, effect_text, judge,
                        paired_interval, points, with_interval)
from ..sections import (Section, ci, markdown_table, num, pct, pval, random_note, read_table,
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
            "winowhat_categories": "winowhat_categories.tsv",
            "paraphrase_effect": "paraphrase_effect.png"}


def section(ins: dict[str, list[str]], outputs: dict[str, str], links: dict[str, str],
            anchors: pd.DataFrame) -> Section:
    if not ins.get("accuracy"):
        return Section("", findings=[Finding("WinoWhat", "(every WinoWhat finding)",
                                             verdict="not run", why="no accuracy table")])
    acc = read_table(ins["accuracy"][0])
    mcn = read_table(ins["mcnemar"][0]) if ins.get("mcnemar") else pd.DataFrame()
    items = ins.get("items", [])
    base = majority(pd.read_parquet(items[0], columns=["dataset", "variant", "label"])
                    if items and Path(items[0]).exists() else pd.DataFrame())
    head, cats = winowhat_tables(acc, mcn)
    write_summary(head, outputs["winowhat_accuracy"])
    write_summary(cats, outputs["winowhat_categories"])
    plot_paraphrase_effect(cats, outputs["paraphrase_effect"])
    md = winowhat_markdown(head, cats, links.get("paraphrase_effect"), base) + random_note(acc)
    return Section(md, tables={"winowhat_accuracy": head, "winowhat_categories": cats,
                               "winowhat_majority": base},
                   models=[("WinoWhat", acc)], findings=findings(head, cats, base, anchors))


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



def winowhat_markdown(head: pd.DataFrame, cats: pd.DataFrame, figure: str | None,
                      base: pd.DataFrame | None = None) -> str:
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
    if base is not None and not base.empty:  # the majority class, from the items' gold labels
        show = pd.concat([show, pd.DataFrame([{
            "model": "*majority class* (trivial baseline)",
            "WinoGrande dev, original": num(_share(base, "winogrande_dev")),
            "WinoWhat paraphrased": num(_share(base, "winogrande_dev", "transf")),
            "paired n": "–", "paired orig vs para": "–", "discordant (orig only / para only)": "–",
            "McNemar exact p": "–", "WSC273, original": num(_share(base, "wsc"))}])],
            ignore_index=True)
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
