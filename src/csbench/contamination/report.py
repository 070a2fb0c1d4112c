"""Contamination's part of RESULTS.md: the share of each benchmark found in each corpus, and model
correctness on contaminated vs clean items, from ``results/contamination/{summary,effect}.tsv``."""
from __future__ import annotations

import pandas as pd

from ..findings import Finding, anchor, judge, points
from ..sections import Section, markdown_table, num, pct, pval, read_table, select, write_summary
from . import signals_report

TITLE = "Contamination: does it help?"
PAPER = "WinoWhat"  # whose findings this section checks


def inputs(targets: list[str]) -> dict[str, list[str]]:
    return {"effect": select(targets, "contamination/effect.tsv"),
            "summary": select(targets, "contamination/summary.tsv"),
            **signals_report.inputs(targets)}


def planned(ins: dict[str, list[str]]) -> dict[str, str]:
    return ({"contamination_effect": "contamination_effect.tsv"} if ins.get("effect") else {}) \
        | signals_report.planned(ins)


def section(ins: dict[str, list[str]], outputs: dict[str, str], links: dict[str, str],
            anchors: pd.DataFrame) -> Section:
    signals = signals_report.section(ins, outputs, links)
    paper, ids = memorisation_anchors(anchors)
    by_signals = signals_report.findings(signals.tables.get("signals_mannwhitney", pd.DataFrame()),
                                         paper, ids)
    if not (ins.get("effect") or ins.get("summary")):
        md = ("No corpus is configured (`contamination.corpora` is empty), so nothing was "
              "scanned and there is no effect table.")
        return Section("\n\n".join([md, signals.markdown]) if signals.markdown else md,
                       tables=signals.tables,
                       findings=findings(pd.DataFrame(), anchors) + by_signals)
    e = read_table(ins["effect"][0]) if ins.get("effect") else pd.DataFrame()
    s = read_table(ins["summary"][0]) if ins.get("summary") else pd.DataFrame()
    if "contamination_effect" in outputs:
        write_summary(e, outputs["contamination_effect"])
    md = "\n\n".join(p for p in (contamination_markdown(e, s), signals.markdown) if p)
    return Section(md, tables={"contamination_effect": e, "contamination_summary": s,
                               **signals.tables},
                   findings=findings(e, anchors) + by_signals)


def contamination_markdown(effect: pd.DataFrame, summary: pd.DataFrame) -> str:
    parts = []
    if not summary.empty:
        show = summary.copy()
        show["rate"] = show["rate"].map(pct)
        show.columns = ["benchmark", "corpus", "method", "items", "contaminated", "% contaminated"]
        parts += ["Benchmark items found in each configured corpus:", markdown_table(show)]
    if not effect.empty:
        show = pd.DataFrame({
            "model": effect["model"], "variant": effect["variant"], "benchmark": effect["benchmark"],
            "corpus": effect["corpus"], "method": effect["method"],
            "n contaminated / clean": [f"{num(a, 0)} / {num(b, 0)}" for a, b in
                                       zip(effect["n_contaminated"], effect["n_clean"])],
            "accuracy contaminated": effect["acc_contaminated"].map(pct),
            "accuracy clean": effect["acc_clean"].map(pct),
            "difference (points)": effect["difference"].map(lambda v: num(v, 1, 100)),
            "one-sided p (Mann-Whitney U)": effect["p_value"].map(pval)})
        parts += ["Model correctness (WinoWhat per-item results) on contaminated vs clean items:",
                  markdown_table(show)]
    return "\n\n".join(parts)



def memorisation_anchors(anchors) -> tuple[str, list[str]]:
    """The paper's Section 4.2 figures (the Mann-Whitney p of its LLaMA 1 models) as the
    published column of the memorisation rows, and their anchor ids."""
    ids = ["winowhat.s4-2.llama1.wg-val-contaminated-vs-clean.mann-whitney-p-min",
           "winowhat.s4-2.llama1.wg-val-contaminated-vs-clean.mann-whitney-p-max"]
    lo, hi = (anchor(anchors, i) for i in ids)
    return f"p {points(lo, 3)} to {points(hi, 3)} (LLaMA 1 models, Section 4.2)", ids


def findings(effect: pd.DataFrame, anchors) -> list[Finding]:
    """WinoWhat's memorisation check (its Section 4.2): contaminated WinoGrande items are not
    scored significantly better than clean ones (one-sided Mann-Whitney U). One row per model, on
    the original items: every corpus x method test with contaminated items, the smallest p
    deciding (uncorrected, so a difference anywhere counts against the paper's null finding)."""
    paper, ids = memorisation_anchors(anchors)
    claim = "memorisation: contaminated items are not scored better"
    e = effect[(effect["variant"] == "orig") & (effect["n_contaminated"] > 0)] if not effect.empty \
        else effect
    if e.empty:
        why = ("no contamination effect table (no corpus scanned)" if effect.empty else
               "no original item was found in any corpus")
        return [Finding("WinoWhat", claim, paper, verdict="not run", why=why, anchors=ids)]
    out = []
    for model, g in e.groupby("model", sort=True):
        r = g.loc[g["p_value"].idxmin()]
        f = Finding("WinoWhat", claim, paper, system=f"{model}, {r['benchmark']} originals",
                    metric="accuracy", anchors=ids, effect=100 * r["difference"],
                    n=r["n_contaminated"] + r["n_clean"], baseline="–")
        f.ours = (f"{len(g)} corpus × method tests; smallest p {pval(r['p_value'])} ({r['corpus']}, "
                  f"{r['method']}: contaminated {pct(r['acc_contaminated'])} vs clean "
                  f"{pct(r['acc_clean'])}, n {int(r['n_contaminated'])} / {int(r['n_clean'])})")
        f.verdict, f.why = judge(f.effect, null_claim=True, significant=bool(r["p_value"] < 0.05))
        out.append(f)
    return out
