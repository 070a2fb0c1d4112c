"""The membership-signals part of the contamination section of RESULTS.md, from
``results/contamination/signals/{auroc,mannwhitney,quartiles}.tsv`` (written by
``contamination_signals_stats``), and its figure (also a target of that rule)."""
from __future__ import annotations

import pandas as pd

from ..findings import Finding, judge
from ..sections import Section, markdown_table, pval, read_table, select

SUFFIXES = {"signals_auroc": "contamination/signals/auroc.tsv",
            "signals_mannwhitney": "contamination/signals/mannwhitney.tsv",
            "signals_quartiles": "contamination/signals/quartiles.tsv"}

SIGNAL_NAMES = {"loss": "loss", "zlib": "zlib ratio", "mink": "Min-K%", "minkpp": "Min-K%++"}
COMPARISON_NAMES = {"orig_vs_paraphrase": "orig vs paraphrase", "dev_vs_test": "dev vs test"}


def inputs(targets) -> dict[str, list[str]]:
    """The signals' result tables among the contamination task's targets, by role."""
    return {role: select(targets, suffix) for role, suffix in SUFFIXES.items()}


def planned(ins: dict[str, list[str]]) -> dict[str, str]:
    return ({"contamination_signals": "contamination_signals.png"}
            if ins.get("signals_auroc") else {})


def section(ins: dict[str, list[str]], outputs: dict[str, str], links: dict[str, str]) -> Section:
    """The subsection (empty markdown when the signals were not computed); its figure into the
    summary files."""
    auc, mw, qt = (read_table(ins[k][0]) if ins.get(k) else pd.DataFrame() for k in SUFFIXES)
    if auc.empty:
        return Section("")
    if "contamination_signals" in outputs:
        plot(auc, qt, outputs["contamination_signals"])
    return Section(markdown(auc, mw, qt, links.get("contamination_signals")),
                   tables={"signals_auroc": auc, "signals_mannwhitney": mw,
                           "signals_quartiles": qt})


def findings(mw: pd.DataFrame, paper: str, anchors: list[str]) -> list[Finding]:
    """WinoWhat's memorisation check with membership signals in place of corpus hits: per model,
    are the dev originals with stronger membership evidence answered right more often (the
    one-sided Mann-Whitney U of ``mannwhitney.tsv``, the smallest p of the four signals deciding,
    uncorrected, as the corpus row)? Evidence, not proof: a more predictable sentence is also an
    easier one to score."""
    out = []
    for model, g in (mw.groupby("model", sort=True) if not mw.empty else ()):
        r = g.loc[g["p_value"].idxmin()]
        f = Finding("WinoWhat", "memorisation, model-based: member-like items are not scored better",
                    paper, system=f"{model}, WinoGrande dev originals, membership signals (no corpus)",
                    metric="AUROC", anchors=anchors, baseline="–", n=int(r["n_correct"] + r["n_wrong"]),
                    effect=float(r["auroc"]) - 0.5)
        f.ours = (f"smallest p {pval(r['p_value'])} of 4 signals ({SIGNAL_NAMES.get(r['signal'], r['signal'])}: "
                  f"AUROC {r['auroc']:.3f}, right {int(r['n_correct'])} / wrong {int(r['n_wrong'])})")
        f.verdict, why = judge(f.effect, null_claim=True, significant=bool(r["p_value"] < 0.05))
        f.why = (why + "; the signals measure how predictable an item is to the model, which is "
                 "evidence of membership, not proof")
        out.append(f)
    return out


def _ci(v, lo, hi) -> str:
    return "–" if pd.isna(v) else f"{v:.3f} [{lo:.3f}, {hi:.3f}]"


def markdown(auc: pd.DataFrame, mw: pd.DataFrame, qt: pd.DataFrame,
             figure_link: str | None = None) -> str:
    """The subsection's text from the three tables."""
    parts = ["### Membership signals (model-based, no corpus)", "",
             "Per item, the model's loss, zlib ratio, Min-K% Prob and Min-K%++ on the item's text "
             "(the answer in the blank), k = the `k` column of `results/contamination/signals/"
             "<model>.parquet`. AUROC is the chance that an original scores as more member-like "
             "than a non-member text (0.5: no separation), with a percentile bootstrap interval "
             "over items. This is evidence, not proof of membership: a paraphrase differs from its "
             "original in wording, length and fluency as well as in never having been published, "
             "and WinoGrande test items differ from dev items in more than the publication of their "
             "answers; a control pair that no model saw (the demo's synthetic items, `make demo`) "
             "shows how far the signals move without membership."]
    a = auc.copy()
    a["comparison"] = pd.Categorical(a["comparison"].map(COMPARISON_NAMES),
                                     list(COMPARISON_NAMES.values()))
    wide = a.assign(cell=[_ci(v, lo, hi) for v, lo, hi in
                          zip(a["auroc"], a["auroc_ci_low"], a["auroc_ci_high"])],
                    n=[f"{x} / {y}" for x, y in zip(a["n_members"], a["n_nonmembers"])])
    show = wide.pivot_table(index=["model", "comparison", "n"], columns="signal", values="cell",
                            aggfunc="first", observed=True).reset_index()
    show = show[["model", "comparison", "n"] + [s for s in SIGNAL_NAMES if s in show.columns]]
    show.columns = ["model", "comparison", "n members / non-members"] + [
        SIGNAL_NAMES[s] for s in SIGNAL_NAMES if s in show.columns]
    parts += ["", "AUROC [95% CI] of each signal:", "", markdown_table(show)]
    if not mw.empty:
        m = pd.DataFrame({"model": mw["model"], "signal": mw["signal"].map(SIGNAL_NAMES),
                          "n right / wrong": [f"{x} / {y}" for x, y in
                                              zip(mw["n_correct"], mw["n_wrong"])],
                          "AUROC (right vs wrong)": mw["auroc"].map(lambda v: "–" if pd.isna(v)
                                                                   else f"{v:.3f}"),
                          "one-sided p": mw["p_value"].map(pval)})
        parts += ["", "Are WinoGrande dev originals with stronger membership evidence answered "
                  "right more often (WinoWhat scoring; one-sided Mann-Whitney U, alternative: the "
                  "membership score is higher on items answered right)?", "", markdown_table(m)]
    if not qt.empty:
        q = qt.assign(cell=[f"{100 * e:+.1f} ({n})" for e, n in zip(qt["effect"], qt["n_items"])])
        q["signal"] = pd.Categorical(q["signal"].map(SIGNAL_NAMES), list(SIGNAL_NAMES.values()))
        w = q.pivot_table(index=["model", "signal"], columns="quartile", values="cell",
                          aggfunc="first", observed=True).reset_index()
        w.columns = ["model", "signal"] + [f"Q{c} (points, items)" for c in w.columns[2:]]
        parts += ["", "Paraphrase effect (accuracy on originals minus on their paraphrases, "
                  "points) by quartile of the originals' membership score (Q4: most "
                  "member-like):", "", markdown_table(w)]
    if figure_link:
        parts += ["", f"![membership signals]({figure_link})"]
    return "\n".join(parts)


def plot(auc: pd.DataFrame, quart: pd.DataFrame, path) -> None:
    """AUROC with intervals per signal and comparison (left), paraphrase effect by quartile of
    each signal (right), one marker style per model."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..io import atomic_path

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    sigs = list(SIGNAL_NAMES)
    models = sorted(auc["model"].unique()) if not auc.empty else []
    width = 0.8 / max(1, 2 * len(models))
    j = 0
    for model in models:
        for comp, label in (("orig_vs_paraphrase", "orig vs paraphrase"),
                            ("dev_vs_test", "dev vs test")):
            d = auc[(auc["model"] == model) & (auc["comparison"] == comp)].set_index("signal")
            d = d.reindex(sigs)
            x = [i - 0.4 + width * (j + 0.5) for i in range(len(sigs))]
            ax1.errorbar(x, d["auroc"], yerr=[d["auroc"] - d["auroc_ci_low"],
                                              d["auroc_ci_high"] - d["auroc"]],
                         fmt="o", capsize=3, label=f"{model}: {label}")
            j += 1
    ax1.axhline(0.5, color="grey", lw=0.8, ls="--")
    ax1.set_xticks(range(len(sigs)), [SIGNAL_NAMES[s] for s in sigs])
    ax1.set_ylabel("AUROC (member = original / dev)")
    ax1.legend(fontsize=7)
    for (model, signal), d in (quart.groupby(["model", "signal"]) if not quart.empty else []):
        ax2.plot(d["quartile"], 100 * d["effect"], marker="o",
                 label=f"{model}: {SIGNAL_NAMES.get(signal, signal)}")
    ax2.axhline(0, color="grey", lw=0.8, ls="--")
    ax2.set_xticks([1, 2, 3, 4], ["Q1", "Q2", "Q3", "Q4\n(most member-like)"])
    ax2.set_ylabel("accuracy orig - paraphrase (points)")
    ax2.legend(fontsize=6)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=120, format="png", metadata={"Software": None})
    plt.close(fig)
