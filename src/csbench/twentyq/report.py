"""20Q's part of RESULTS.md: the yes/no scores of every configured test set (raw and calibrated,
with the question-bias ablation) and the overlap audits, from the ``metrics.tsv`` tables and
``results/audit/summary.tsv``."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..findings import (INCONCLUSIVE, NOT_REPRODUCED, NOT_RUN, REPRODUCED, Finding, anchor,
                        at_baseline, base_model, difference_interval, effect_text, judge, points,
                        with_interval)
from ..sections import (Section, ci, markdown_table, num, pct, random_note, read_table, select,
                        summary_files, write_summary)
from .calibration import best_prompted
from .prompts import FINE_TUNED, VARIANTS

TITLE = "20Q method: yes/no scoring and overlap audits"
PAPER = "20Q"  # whose findings this section checks


def yesno_benchmark(path: str) -> str:
    """20Q metrics table -> the test set it was scored on (results/twentyq/metrics.tsv: the 20Q
    split; results/twentyq/<name>/metrics.tsv: yes/no data set <name>, csqa2 as CSQA2 dev)."""
    parts = Path(path).as_posix().split("twentyq/")[-1].split("/")
    if len(parts) == 1:
        return "20Q test split"
    return "CSQA2 dev" if parts[0] == "csqa2" else parts[0]


def inputs(targets: list[str]) -> dict[str, list[str]]:
    return {"metrics": [p for p in select(targets, "metrics.tsv") if "/twentyq/" in p],
            "admission": [p for p in select(targets, ".admission_counts.tsv")
                          if "/twentyq/finetune/" in p],
            "audits": select(targets, "audit/summary.tsv")}


def planned(ins: dict[str, list[str]]) -> dict[str, str]:
    return summary_files(ins, {"twentyq_yesno": ("twentyq_yesno.tsv", "metrics"),
                               "twentyq_ft_admission": ("twentyq_finetune_admission.tsv", "admission"),
                               "audits": ("audits.tsv", "audits")})


def section(ins: dict[str, list[str]], outputs: dict[str, str], links: dict[str, str],
            anchors: pd.DataFrame) -> Section:
    sec = Section("")
    body = []
    t, a = pd.DataFrame(), None
    if ins.get("metrics"):
        t = twentyq_table(ins["metrics"])
        sec.models.append(("20Q yes/no", t.assign(table="20Q yes/no, " + t["benchmark"])
                           if not t.empty else t))
        sec.tables["twentyq_yesno"] = t
        sec.tables["twentyq_baselines"] = baselines(t)
        write_summary(t, outputs["twentyq_yesno"])
        body.append(twentyq_markdown(t) + random_note(t))
        if not t.empty and (t["arm"] == "fine_tuned").any():
            body.append("### Fine-tuned arm (Table 5 layout)\n\n" + table5_markdown(t))
    else:
        body.append("No yes/no scores (no causal LM configured).")
    if ins.get("admission"):
        adm = pd.concat([read_table(p) for p in ins["admission"]], ignore_index=True)
        sec.tables["twentyq_ft_admission"] = adm
        write_summary(adm, outputs["twentyq_ft_admission"])
        body.append("### Fine-tuned arm: overlap-free training items\n\n" + admission_markdown(adm))
    if ins.get("audits"):
        a = read_table(ins["audits"][0])
        sec.tables["audits"] = a
        write_summary(a, outputs["audits"])
        body.append("### Overlap audits\n\n" + audits_markdown(a))
    else:
        body.append("No overlap audit is enabled (`audits`).")
    sec.markdown = "\n\n".join(body)
    sec.findings = findings(t, a, anchors)
    return sec


def twentyq_table(paths: list[str]) -> pd.DataFrame:
    frames = []
    for p in paths:
        df = read_table(p)
        if df.empty:
            continue
        df.insert(0, "benchmark", yesno_benchmark(p))
        frames.append(df)
    if not frames:
        return pd.DataFrame()
    df = pd.concat(frames, ignore_index=True)
    # the fine-tuned arm's rows: arm = fine_tuned (variants fine_tuned, fine_tuned_no_topic), and
    # every row names the model it starts from (a fine-tuned model's base, from its model_source)
    df["arm"] = df["variant"].map(lambda v: "fine_tuned" if v in FINE_TUNED else "prompted")
    df["base_model"] = [base_model(m, src) for m, src in
                        zip(df["model"], df.get("model_source", pd.Series([""] * len(df))))]
    df["_v"] = df["variant"].map(lambda v: VARIANTS.index(v) if v in VARIANTS else 9)
    df["_b"] = df["benchmark"] != "CSQA2 dev"
    return df.sort_values(["_b", "benchmark", "model", "_v"]).drop(columns=["_v", "_b"]) \
        .reset_index(drop=True)


def twentyq_markdown(df: pd.DataFrame) -> str:
    parts = []
    ft = "arm" in df and (df["arm"] == "fine_tuned").any()
    for bench in df["benchmark"].unique():
        d = df[df["benchmark"] == bench]
        show = pd.DataFrame({"model": d["model"], "prompt": d["variant"].str.replace("_", " "),
                             "n": d["n"].map(lambda v: num(v, 0)), "F1 (yes)": d["f1"].map(pct),
                             "accuracy": d["accuracy"].map(pct), "NLL": d["nll"].map(lambda v: num(v, 3)),
                             "% predicted yes": d["pct_pred_yes"].map(lambda v: num(v, 1))})
        base = baselines(d)
        if not base.empty:  # the trivial baselines, from the test set's gold labels
            show = pd.concat([show, pd.DataFrame({
                "model": "*" + base["baseline"] + "* (trivial baseline)", "prompt": "–",
                "n": base["n"].map(lambda v: num(v, 0)), "F1 (yes)": base["f1"].map(pct),
                "accuracy": base["accuracy"].map(pct), "NLL": "–",
                "% predicted yes": [num(100.0 if b == "always yes" else 0.0) for b in base["baseline"]]})],
                ignore_index=True)
        abl = []
        for model in d["model"].unique():
            g = d[d["model"] == model].set_index("variant")["accuracy"]
            row = {"model": model}
            for base in ("zero_shot", "few_shot") + (("fine_tuned",) if ft else ()):
                w, wo = g.get(base, float("nan")), g.get(f"{base}_no_topic", float("nan"))
                row[f"{base.replace('_', '-')} with / without topic"] = \
                    f"{pct(w)} / {pct(wo)} ({num(w - wo, 1, 100)})"
            abl.append(row)
        parts += [f"**{bench}**: binary F1 (yes positive), accuracy in %, mean NLL (nats) of the gold "
                  "answer with p(yes) and p(no) renormalised, per prompt (the paper's zero-shot and "
                  "4-shot prompts, and both without the topic line"
                  + ("; fine-tuned models in their training prompt, with and without the topic" if ft
                     else "") + ").",
                  markdown_table(show)]
        if "auroc" in d:  # tables written before the calibrated metrics have none
            parts += [twentyq_calibrated_markdown(d)]
        parts += ["Question-bias ablation (accuracy in %, with / without the topic line, difference "
                  "in points):", markdown_table(pd.DataFrame(abl))]
    return "\n\n".join(parts)


def twentyq_calibrated_markdown(d: pd.DataFrame) -> str:
    """The calibrated yes/no metrics of one test set (csbench.twentyq.calibration)."""
    level = ", ".join(f"{100 * v:g}%" for v in d["ci_level"].dropna().unique())
    folds = ", ".join(str(int(v)) for v in d["cal_folds"].dropna().unique())
    show = pd.DataFrame({
        "model": d["model"], "prompt": d["variant"].str.replace("_", " "),
        "AUROC [CI]": [f"{num(a, 3)} [{num(lo, 3)}, {num(hi, 3)}]" if not pd.isna(a) else "–"
                       for a, lo, hi in zip(d["auroc"], d["auroc_ci_low"], d["auroc_ci_high"])],
        "cal. accuracy [CI]": [ci(a, lo, hi) for a, lo, hi in zip(
            d["cal_accuracy"], d["cal_accuracy_ci_low"], d["cal_accuracy_ci_high"])],
        "cal. F1 [CI]": [ci(a, lo, hi) for a, lo, hi in zip(
            d["cal_f1"], d["cal_f1_ci_low"], d["cal_f1_ci_high"])],
        "cal. % yes": d["cal_pct_pred_yes"].map(lambda v: num(v, 1))})
    return ("Calibrated, whichever way a model leans (docs/twentyq.md): AUROC of the log-odds "
            "log p(yes) − log p(no) against the gold label (ties count half; 0.5 = chance), and "
            f"accuracy and F1 in % at a threshold on the log-odds cross-fitted over {folds} folds (each "
            "fold predicted with the threshold that maximises accuracy on the others); "
            f"{level} percentile bootstrap intervals over items.\n\n" + markdown_table(show))



def table5_markdown(df: pd.DataFrame) -> str:
    """The paper's Table 5 layout per test set and base model: zero-shot (Z-S), few-shot (F-S) and
    fine-tuned (F-T) side by side for F1, NLL, accuracy and AUROC, and the fine-tuned model without
    the topic (F-T −topic)."""
    cols = {"Z-S": ("prompted", "zero_shot"), "F-S": ("prompted", "few_shot"),
            "F-T": ("fine_tuned", "fine_tuned"), "F-T −topic": ("fine_tuned", "fine_tuned_no_topic")}
    fmt = {"F1": ("f1", pct), "NLL": ("nll", lambda v: num(v, 3)), "accuracy": ("accuracy", pct),
           "AUROC": ("auroc", lambda v: num(v, 3))}
    rows = []
    for bench in df["benchmark"].unique():
        d = df[df["benchmark"] == bench]
        for base in d.loc[d["arm"] == "fine_tuned", "base_model"].unique():
            for ft_model in d.loc[(d["arm"] == "fine_tuned") & (d["base_model"] == base),
                                  "model"].unique():
                row = {"test set": bench, "base model": base, "fine-tuned model": ft_model}
                for label, (col, f) in fmt.items():
                    for name, (arm, variant) in cols.items():
                        model = ft_model if arm == "fine_tuned" else base
                        hit = d[(d["model"] == model) & (d["variant"] == variant)]
                        v = hit[col].iloc[0] if len(hit) and col in hit else float("nan")
                        row[f"{label} {name}"] = f(v)
                rows.append(row)
    return ("The paper's Table 5 layout: each base model zero-shot (Z-S) and 4-shot (F-S), and "
            "fine-tuned for one epoch on its overlap-free training items (F-T; scored in its "
            "training prompt) and without the topic line (F-T −topic, the paper's ablation). F1 "
            "(yes positive) and accuracy in %, mean NLL (nats) of the gold answer, AUROC of the "
            "log-odds (intervals in the calibrated table above).\n\n" + markdown_table(pd.DataFrame(rows)))


def admission_markdown(a: pd.DataFrame) -> str:
    show = pd.DataFrame({"training items of": a["benchmark"], "rule": a["step"],
                         "against (scored items)": a["against"].map(lambda v: num(v, 0)),
                         "removed": a["removed"].map(lambda v: num(v, 0)),
                         "kept": a["kept"].map(lambda v: num(v, 0)),
                         "kept %": a["kept_pct"].map(lambda v: num(v, 1))})
    return ("Training items of the fine-tuned arm kept by the 20Q split rules against the scored "
            "test items, applied in turn (lexical: same stemmed bag of words of the question or the "
            "topic; wordnet: the topic shares a synset with a scored topic; embedding: question or "
            "topic cosine above the threshold to any scored question or topic; docs/twentyq.md)."
            "\n\n" + markdown_table(show))


# ---------------------------------------------------------------------------------------------
# trivial baselines and findings

def baselines(t: pd.DataFrame) -> pd.DataFrame:
    """Always-yes and always-no F1 and accuracy per test set, from its share of gold yes (the
    ``gold_yes_share`` column; a table written before it has none)."""
    rows = []
    if t.empty or "gold_yes_share" not in t:
        return pd.DataFrame(rows, columns=["benchmark", "baseline", "n", "f1", "accuracy"])
    for bench, d in t.groupby("benchmark", sort=False):
        y = d["gold_yes_share"].dropna()
        if y.empty:
            continue
        y, n = float(y.iloc[0]), d["n"].iloc[0]
        rows += [{"benchmark": bench, "baseline": "always yes", "n": n, "f1": 2 * y / (1 + y) if y else 0.0,
                  "accuracy": y},
                 {"benchmark": bench, "baseline": "always no", "n": n, "f1": 0.0, "accuracy": 1 - y}]
    return pd.DataFrame(rows, columns=["benchmark", "baseline", "n", "f1", "accuracy"])


def _f1(row) -> tuple[float, float, float]:
    """F1 of one metrics row in points, with its interval where the table has one."""
    lo, hi = (row.get(c, float("nan")) for c in ("f1_ci_low", "f1_ci_high"))
    return 100 * row["f1"], 100 * lo, 100 * hi


def _paired(a: dict, b: dict, fa, fb) -> tuple[float, float, float]:
    """F1 of row ``a`` minus row ``b`` in points with its interval: the paired one of the metrics
    table (``paired_*``, csbench.twentyq.calibration) where one row names the other, else the
    conservative one from the two rows' own intervals."""
    def named(row, other):
        return str(row.get("paired_ref") or "") == f"{other['model']}/{other['variant']}"
    for row, other, sign in ((a, b, 1), (b, a, -1)):
        if named(row, other) and row.get("paired_f1_diff") == row.get("paired_f1_diff"):
            lo, hi = 100 * row["paired_f1_ci_low"], 100 * row["paired_f1_ci_high"]
            return (sign * 100 * row["paired_f1_diff"] + 0.0,  # + 0.0: no "-0.0" printed
                    *sorted((sign * lo + 0.0, sign * hi + 0.0)))
    return difference_interval(*fa, *fb)


def findings(t: pd.DataFrame, audits: pd.DataFrame | None, anchors) -> list[Finding]:
    """20Q's headline findings: fine-tuning beats prompting, removing the topic lowers F1 (on the
    20Q test split where it was scored), and the overlap audits' duplicates."""
    a = lambda i: anchor(anchors, f"20q.{i}")  # noqa: E731
    paper_ft = (f"GPT-3 175B F1 {points(a('t5.gpt3-175b.zero-shot.f1'), 2)} / "
                f"{points(a('t5.gpt3-175b.few-shot.f1'), 2)} / {points(a('t5.gpt3-175b.fine-tuned.f1'), 2)} "
                "(zero-shot / few-shot / fine-tuned, Table 5)")
    paper_topic = (f"GPT-3 175B fine-tuned F1 {points(a('s7-4.gpt3-175b.fine-tuned.f1'), 2)} → "
                   f"{points(a('s7-4.gpt3-175b.fine-tuned-no-topic.f1'), 2)} without the topic (Section 7.4)")
    ids_ft = [f"20q.t5.gpt3-175b.{v}.f1" for v in ("zero-shot", "few-shot", "fine-tuned")]
    ids_topic = [f"20q.s7-4.gpt3-175b.{v}.f1" for v in ("fine-tuned", "fine-tuned-no-topic")]
    claim_ft, claim_topic = "fine-tuning beats prompting (F1)", "removing the topic lowers F1"
    out = []
    if t.empty:
        why = "no yes/no scores: no causal LM configured"
        out += [Finding("20Q", claim_ft, paper_ft, verdict=NOT_RUN, why=why, anchors=ids_ft),
                Finding("20Q", claim_topic, paper_topic, verdict=NOT_RUN, why=why, anchors=ids_topic)]
    else:
        bench = "20Q test split" if (t["benchmark"] == "20Q test split").any() else t["benchmark"].iloc[0]
        d = t[t["benchmark"] == bench]
        base = baselines(d)
        yes_f1 = 100 * base.loc[base["baseline"] == "always yes", "f1"].iloc[0] if len(base) else float("nan")
        baseline = f"always yes {points(yes_f1)}" if len(base) else "–"
        has_arm = d["variant"].str.startswith("fine_tuned").any()
        # a fine-tuned model (a `finetune` spec, its own rows) is compared with its base model's
        # prompted rows; that base then needs no "no fine-tuned arm" row of its own
        ft_base = ({m: b for m, b, arm in zip(d["model"], d["base_model"], d["arm"])
                    if arm == "fine_tuned" and b != m} if "base_model" in d else {})
        for model in d["model"].unique():
            g = {r["variant"]: r for r in d[d["model"] == model].to_dict("records")}
            if model in ft_base:
                for r in d[(d["model"] == ft_base[model]) & (d["arm"] == "prompted")].to_dict("records"):
                    g.setdefault(r["variant"], r)
            tuned = next((v for v in g if v.startswith("fine_tuned") and "no_topic" not in v), None)
            f = Finding("20Q", claim_ft, paper_ft, baseline=baseline, system=f"{model}, {bench}",
                        metric="F1", anchors=ids_ft)
            if model in ft_base:
                f.system = f"{model} vs {ft_base[model]} prompted, {bench}"
            if tuned is None and model in set(ft_base.values()):
                pass  # its fine-tuned model's row says it
            elif tuned is None and (has_arm or model == d["model"].iloc[0]):
                if not has_arm:  # one row says it for every model
                    f.system = f"every model, {bench}"
                f.verdict, f.why = judge(missing="no fine-tuned arm in this run: prompting only")
                out.append(f)
            elif tuned is not None and not any(v in g for v in ("zero_shot", "few_shot")):
                f.verdict, f.why = judge(missing="no prompted scores of the same base model")
                out.append(f)
            elif tuned is not None:
                best = best_prompted({v: r["f1"] for v, r in g.items()})
                ft, pr = _f1(g[tuned]), _f1(g[best])
                f.effect, f.ci_low, f.ci_high = _paired(g[tuned], g[best], ft, pr)
                f.n = g[tuned]["n"]
                f.ours = (f"{with_interval(*ft)} vs {with_interval(*pr)} ({best.replace('_', '-')}); "
                          + effect_text(f.effect, f.ci_low, f.ci_high))
                f.verdict, f.why = judge(f.effect, f.ci_low, f.ci_high, at_baseline=(
                    f"fine-tuned F1 {points(ft[1])} ≤ always-yes F1 {points(yes_f1)}"
                    if at_baseline(ft[1] if ft[1] == ft[1] else ft[0], yes_f1) else None))
                out.append(f)
            arm = tuned or ("few_shot" if "few_shot" in g else "zero_shot")
            f = Finding("20Q", claim_topic, paper_topic, baseline=baseline,
                        system=f"{model}, {arm.replace('_', '-')}, {bench}", metric="F1", anchors=ids_topic)
            if arm not in g or f"{arm}_no_topic" not in g:
                f.verdict, f.why = judge(missing=f"no {arm} scores without the topic")
            else:
                w, wo = _f1(g[arm]), _f1(g[f"{arm}_no_topic"])
                f.effect, f.ci_low, f.ci_high = _paired(g[arm], g[f"{arm}_no_topic"], w, wo)
                f.n = g[arm]["n"]
                f.ours = (f"{with_interval(*w)} → {with_interval(*wo)}; "
                          + effect_text(f.effect, f.ci_low, f.ci_high))
                low = w[1] if w[1] == w[1] else w[0]
                f.verdict, f.why = judge(f.effect, f.ci_low, f.ci_high, at_baseline=(
                    f"F1 with the topic {points(low)} ≤ always-yes F1 {points(yes_f1)}"
                    if at_baseline(low, yes_f1) else None))
            out.append(f)
    out += audit_findings(audits, anchors)
    return out


AUDIT_ANCHORS = {"twentyq": "20q.appa-3.20q.train-test.overlapping-pairs",
                 "com2sense": "20q.appa-2.com2sense.train-test.exact-duplicates"}


def audit_findings(audits: pd.DataFrame | None, anchors) -> list[Finding]:
    """The paper's overlap counts (20Q: no train/test overlap; Com2Sense: exact duplicates) beside
    the audits' exact duplicate pairs: reproduced when both are zero or both are not."""
    out = []
    for name, aid in AUDIT_ANCHORS.items():
        paper = anchor(anchors, aid)
        f = Finding("20Q", f"{name} train/test duplicates ({'none' if name == 'twentyq' else 'some'})",
                    f"{points(paper, 0)} (Appendix A)", system=f"{name} audit", metric="exact duplicate pairs",
                    baseline="–", anchors=[aid])
        row = audits[audits["audit"] == name] if audits is not None and not audits.empty else None
        if row is None or row.empty:
            f.verdict, f.why = judge(missing=f"the {name} audit is not enabled")
        else:
            ours = row["exact_duplicate_pairs"].iloc[0]
            f.ours, f.n = f"{int(ours)} exact duplicate pairs", row["n_test"].iloc[0]
            if paper != paper:
                f.verdict, f.why = INCONCLUSIVE, "no published count to compare"
            elif (ours > 0) == (paper > 0):
                f.verdict, f.why = REPRODUCED, "both counts are zero" if not ours else "both find duplicates"
            else:
                f.verdict, f.why = NOT_REPRODUCED, "one count is zero, the other not"
        out.append(f)
    return out


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

