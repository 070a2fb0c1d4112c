"""Contamination's part of RESULTS.md: the share of each benchmark found in each corpus, and model
correctness on contaminated vs clean items, from ``results/contamination/{summary,effect}.tsv``."""
from __future__ import annotations

import pandas as pd

from ..sections import Section, markdown_table, num, pct, pval, read_table, select, write_summary

TITLE = "Contamination: does it help?"


def inputs(targets: list[str]) -> dict[str, list[str]]:
    return {"effect": select(targets, "contamination/effect.tsv"),
            "summary": select(targets, "contamination/summary.tsv")}


def planned(ins: dict[str, list[str]]) -> dict[str, str]:
    return {"contamination_effect": "contamination_effect.tsv"} if ins.get("effect") else {}


def section(ins: dict[str, list[str]], outputs: dict[str, str], links: dict[str, str],
            anchors: pd.DataFrame) -> Section:
    if not (ins.get("effect") or ins.get("summary")):
        return Section("No corpus is configured (`contamination.corpora` is empty), so nothing was "
                       "scanned and there is no effect table.")
    e = read_table(ins["effect"][0]) if ins.get("effect") else pd.DataFrame()
    s = read_table(ins["summary"][0]) if ins.get("summary") else pd.DataFrame()
    if "contamination_effect" in outputs:
        write_summary(e, outputs["contamination_effect"])
    return Section(contamination_markdown(e, s),
                   tables={"contamination_effect": e, "contamination_summary": s})


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

