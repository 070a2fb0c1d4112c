"""20Q's part of RESULTS.md: the yes/no scores of every configured test set (raw and calibrated,
with the question-bias ablation) and the overlap audits, from the ``metrics.tsv`` tables and
``results/audit/summary.tsv``."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..audit.report import audits_markdown
from ..sections import (Section, ci, markdown_table, num, pct, random_note, read_table, select,
                        write_summary)
from .prompts import FINE_TUNED, VARIANTS

TITLE = "20Q method: yes/no scoring and overlap audits"


def yesno_benchmark(path: str) -> str:
    """20Q metrics table -> the test set it was scored on."""
    return "CSQA2 dev" if "/twentyq/csqa2/" in Path(path).as_posix() else "20Q test split"


def inputs(targets: list[str]) -> dict[str, list[str]]:
    return {"metrics": [p for p in select(targets, "metrics.tsv") if "/twentyq/" in p],
            "admission": [p for p in select(targets, ".admission_counts.tsv")
                          if "/twentyq/finetune/" in p],
            "audits": select(targets, "audit/summary.tsv")}


def planned(ins: dict[str, list[str]]) -> dict[str, str]:
    out = {}
    if ins.get("metrics"):
        out["twentyq_yesno"] = "twentyq_yesno.tsv"
    if ins.get("admission"):
        out["twentyq_ft_admission"] = "twentyq_finetune_admission.tsv"
    if ins.get("audits"):
        out["audits"] = "audits.tsv"
    return out


def section(ins: dict[str, list[str]], outputs: dict[str, str], links: dict[str, str],
            anchors: pd.DataFrame) -> Section:
    sec = Section("")
    body = []
    if ins.get("metrics"):
        t = twentyq_table(ins["metrics"])
        sec.models.append(("20Q yes/no", t.assign(table="20Q yes/no, " + t["benchmark"])
                           if not t.empty else t))
        sec.tables["twentyq_yesno"] = t
        write_summary(t, outputs["twentyq_yesno"])
        body.append(twentyq_markdown(t) + random_note(t))
        if not t.empty and (t["arm"] == "fine_tuned").any():
            body.append("### Fine-tuned arm (Table 5 layout)\n\n" + table5_markdown(t))
    else:
        body.append("No yes/no scores (no causal LM configured).")
    if ins.get("admission"):
        a = pd.concat([read_table(p) for p in ins["admission"]], ignore_index=True)
        sec.tables["twentyq_ft_admission"] = a
        write_summary(a, outputs["twentyq_ft_admission"])
        body.append("### Fine-tuned arm: overlap-free training items\n\n" + admission_markdown(a))
    if ins.get("audits"):
        a = read_table(ins["audits"][0])
        sec.tables["audits"] = a
        write_summary(a, outputs["audits"])
        body.append("### Overlap audits\n\n" + audits_markdown(a))
    else:
        body.append("No overlap audit is enabled (`audits`).")
    sec.markdown = "\n\n".join(body)
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



def base_model(model: str, source) -> str:
    """The model a row's model starts from: a fine-tuned model's base (its ``model_source`` reads
    ``finetune:<base>=<base source> on <data>``, :mod:`csbench.finetune`), else the model."""
    src = "" if source is None or (isinstance(source, float) and pd.isna(source)) else str(source)
    if src.startswith("finetune:") and "=" in src:
        return src[len("finetune:"):].split("=", 1)[0]
    return model


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
