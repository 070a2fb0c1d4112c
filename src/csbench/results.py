"""RESULTS.md: every task's headline numbers in one Markdown file, built only from the result
tables the tasks wrote (plus the published anchors of ``resources/published_anchors.tsv``, each
with its source). Nothing here runs a model or recomputes a metric: tables are read, selected,
pivoted and formatted, so the file changes only when a result table (or the anchors file) does.

:func:`planned` names the summary tables (and the figure) a configuration will produce, at
DAG-build time; :func:`build` writes them and RESULTS.md. Row order and number formats are
fixed, so two runs on the same tables give byte-identical files.
"""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

TASK_ORDER = ("winowhat", "protoqa", "twentyq", "qads", "contamination")
TASK_TITLES = {
    "winowhat": "WinoWhat: WinoGrande and WSC, original vs paraphrased",
    "protoqa": "ProtoQA: ranked answer lists",
    "twentyq": "20Q method: yes/no scoring and overlap audits",
    "qads": "QADS: WSD and QA on synonym-substituted SQuAD 2.0 questions",
    "contamination": "Contamination: does it help?",
}
CATEGORIES = ("physical", "social", "numerical", "temporal", "spatial")
VARIANTS = ("zero_shot", "few_shot", "zero_shot_no_topic", "few_shot_no_topic")
PQ_METRICS = ("max_answers@1", "max_answers@3", "max_answers@5", "max_answers@10",
              "max_incorrect@1", "max_incorrect@3", "max_incorrect@5")
ANCHOR_COLUMNS = ("task", "benchmark", "system", "metric", "value", "setting", "source", "note")


# ---------------------------------------------------------------------------------------------
# which result tables belong to which section

def _select(paths, suffix: str) -> list[str]:
    return sorted(p for p in paths if Path(p).as_posix().endswith(suffix))


def yesno_benchmark(path: str) -> str:
    """20Q metrics table -> the test set it was scored on."""
    return "CSQA2 dev" if "/twentyq/csqa2/" in Path(path).as_posix() else "20Q test split"


def inputs_of(task: str, targets: list[str]) -> dict[str, list[str]]:
    """The result tables of a task RESULTS.md reads, by role (from the task's registered targets)."""
    t = [Path(p).as_posix() for p in targets]
    if task == "winowhat":
        return {"accuracy": _select(t, "winowhat/accuracy.tsv"),
                "mcnemar": _select(t, "winowhat/mcnemar.tsv")}
    if task == "protoqa":
        return {"summary": _select(t, "protoqa/summary.tsv")}
    if task == "twentyq":
        return {"metrics": [p for p in _select(t, "metrics.tsv") if "/twentyq/" in p],
                "audits": _select(t, "audit/summary.tsv")}
    if task == "qads":
        return {"wsd": _select(t, "qads/wsd_eval.tsv"), "qa": _select(t, "qads/qa_scores.tsv"),
                "finetune": [p for p in _select(t, ".tsv") if "/qads/finetune/" in p
                             and not p.endswith(".by_domain.tsv")],
                "qa_domains": _select(t, ".by_domain.tsv"),
                "domains": _select(t, "qads/domains.tsv")}
    if task == "contamination":
        return {"effect": _select(t, "contamination/effect.tsv"),
                "summary": _select(t, "contamination/summary.tsv")}
    return {}


def planned(targets_by_task: dict[str, list[str]]) -> dict[str, str]:
    """Summary output key -> file name (under the summary directory) for the configured tasks."""
    out = {}
    for task in TASK_ORDER:
        if task not in targets_by_task:
            continue
        ins = inputs_of(task, targets_by_task[task])
        if task == "winowhat" and ins["accuracy"]:
            out.update(winowhat_accuracy="winowhat_accuracy.tsv",
                       winowhat_categories="winowhat_categories.tsv",
                       paraphrase_effect="paraphrase_effect.png")
        if task == "protoqa" and ins["summary"]:
            out["protoqa"] = "protoqa.tsv"
        if task == "twentyq":
            if ins["metrics"]:
                out["twentyq_yesno"] = "twentyq_yesno.tsv"
            if ins["audits"]:
                out["audits"] = "audits.tsv"
        if task == "qads":
            if ins["wsd"]:
                out["qads_wsd"] = "qads_wsd.tsv"
            if ins["qa"] or ins["finetune"]:
                out["qads_qa"] = "qads_qa.tsv"
            if ins["qa_domains"]:
                out["qads_qa_domains"] = "qads_qa_by_domain.tsv"
        if task == "contamination" and ins["effect"]:
            out["contamination_effect"] = "contamination_effect.tsv"
    return out


# ---------------------------------------------------------------------------------------------
# formatting

def read_table(path) -> pd.DataFrame:
    """A TSV result table; an empty file (a task that scored nothing) is an empty table."""
    try:
        return pd.read_csv(path, sep="\t")
    except pd.errors.EmptyDataError:
        return pd.DataFrame()


def _num(x, digits: int = 1, scale: float = 1.0) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return f"{float(x) * scale:.{digits}f}"


def pct(x, digits: int = 1) -> str:
    """A fraction in [0, 1] as a percentage."""
    return _num(x, digits, 100.0)


def pval(p) -> str:
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return "–"
    return f"{float(p):.2g}" if float(p) < 0.001 else f"{float(p):.3f}"


def markdown_table(df: pd.DataFrame) -> str:
    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in df.itertuples(index=False):
        cells = ["" if v is None else str(v).replace("|", "\\|").replace("\n", " ") for v in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _tsv(df: pd.DataFrame, path) -> None:
    from .io import write_tsv

    write_tsv(df, path, float_format="%.4f")


def _random_note(df: pd.DataFrame) -> str:
    if "random_model" in df and df["random_model"].astype(str).str.lower().eq("true").any():
        models = sorted(df.loc[df["random_model"].astype(str).str.lower() == "true", "model"]
                        .astype(str).unique())
        return (f"\n\n**Random weights:** {', '.join(models)} "
                "(`random_model = true`): its numbers only show that the pipeline runs.")
    return ""


# ---------------------------------------------------------------------------------------------
# sections

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


def _ci(acc, lo, hi) -> str:
    if acc is None or (isinstance(acc, float) and math.isnan(acc)):
        return "–"
    return f"{pct(acc)} [{pct(lo)}, {pct(hi)}]"


def winowhat_markdown(head: pd.DataFrame, cats: pd.DataFrame, figure: str | None) -> str:
    show = pd.DataFrame({
        "model": head["model"],
        "WinoGrande dev, original": [_ci(r.wg_orig_acc, r.wg_orig_ci_low, r.wg_orig_ci_high)
                                     for r in head.itertuples()],
        "WinoWhat paraphrased": [_ci(r.wg_para_acc, r.wg_para_ci_low, r.wg_para_ci_high)
                                 for r in head.itertuples()],
        "paired n": [_num(v, 0) for v in head["paired_n_pairs"]],
        "paired orig vs para": [f"{pct(a)} vs {pct(b)}" for a, b in
                                zip(head["paired_acc_orig"], head["paired_acc_transf"])],
        "discordant (orig only / para only)": [
            f"{_num(a, 0)} / {_num(b, 0)}" for a, b in
            zip(head["paired_orig_only_correct"], head["paired_transf_only_correct"])],
        "McNemar exact p": [pval(p) for p in head["paired_p_value"]],
        "WSC273, original": [_ci(r.wsc_orig_acc, r.wsc_orig_ci_low, r.wsc_orig_ci_high)
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
                    diff = _num(r["difference"], 1, 100)
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

    from .io import atomic_path

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


def _system_label(name: str) -> str:
    if name.startswith("gen-"):
        return f"{name[4:]} (sampling baseline, csbench)"
    return {"gpt2finetuned": "GPT-2 fine-tuned (release predictions file)",
            "human": "human (release predictions file)"}.get(name, name)


def protoqa_table(summary: pd.DataFrame) -> pd.DataFrame:
    """summary.tsv (metric x <similarity>/<system>; below the metrics, the provenance rows of the
    sampling baselines) -> one row per (similarity, system)."""
    s = summary.set_index("metric")
    rows = []
    for col in s.columns:
        sim, _, system = col.partition("/")
        row = {"similarity": sim, "system": system}
        for m in PQ_METRICS:
            row[m] = float(s[col].get(m, float("nan")))  # text in a column with provenance rows
        rows.append(row)
    sims = {"exact": 0, "wordnet": 1, "embedding": 2}
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    df["_s"] = df["similarity"].map(lambda x: sims.get(x, 9))
    df["_g"] = df["system"].str.startswith("gen-")
    return df.sort_values(["_s", "similarity", "_g", "system"]).drop(columns=["_s", "_g"]) \
        .reset_index(drop=True)


def _sampling_columns(summary: pd.DataFrame) -> dict[str, pd.Series]:
    """Model name -> its sampling baseline's first column of summary.tsv (indexed by metric),
    in column order."""
    s = summary.set_index("metric")
    out: dict[str, pd.Series] = {}
    for col in s.columns:
        system = col.partition("/")[2].removesuffix(" (random weights)")
        if system.startswith("gen-") and system[4:] not in out:
            out[system[4:]] = s[col]
    return out


def protoqa_models(summary: pd.DataFrame) -> pd.DataFrame:
    """The sampling baselines' models with the provenance rows of summary.tsv (one row per model;
    a summary written before it had them gives the models alone)."""
    return pd.DataFrame([{"model": m, **{c: col[c] for c in MODEL_COLUMNS if c in col.index}}
                         for m, col in _sampling_columns(summary).items()])


PQ_SAMPLING_ROWS = ("samples", "samples_cut_share", "cut_policy", "recipe")  # protoqa.SAMPLING_ROWS


def protoqa_sampling(summary: pd.DataFrame) -> pd.DataFrame:
    """One row per sampling baseline (model name, so a chat-prompt variant of a model is a row of
    its own, beside the raw-prompt one): its prompt format where the summary records one
    (``prompt_format`` row), samples drawn, the share that ``max_new_tokens`` cut, the cut policy
    (empty for a summary written before these rows existed)."""
    keys = ("prompt_format", *PQ_SAMPLING_ROWS)
    return pd.DataFrame([{"model": m, **{r: col.get(r, "") for r in keys}}
                         for m, col in _sampling_columns(summary).items()],
                        columns=["model", *keys])


def protoqa_sampling_markdown(sampling: pd.DataFrame) -> str:
    if sampling.empty:
        return ""

    def text(v) -> str:
        if isinstance(v, float):
            return "" if math.isnan(v) else f"{v:g}"
        return "" if v is None else str(v)

    def share(v) -> str:
        v = text(v)
        return f"{100 * float(v):.1f}%" if v else "not recorded"

    show = pd.DataFrame({"model": sampling["model"],
                         "prompt": [text(v) for v in sampling["prompt_format"]],
                         "samples": [text(v) or "not recorded" for v in sampling["samples"]],
                         "cut by max_new_tokens": [share(v) for v in
                                                   sampling["samples_cut_share"]],
                         "cut policy": [text(v) or "not recorded"
                                        for v in sampling["cut_policy"]],
                         "recipe": [text(v) or "not recorded" for v in sampling["recipe"]]})
    if not any(show["prompt"]):            # no prompt format recorded
        show = show.drop(columns=["prompt"])
    return ("Samples of the sampling baselines (`protoqa.generation.recipe`: `paper` stops at the "
            "first \".\" and removes stop words, `raw` stops at the first sentence end): each "
            "stops at its recipe's stop string or the end of sequence; one that reaches `max_new_tokens` first is cut by the token budget "
            "(possibly mid-answer or mid-word), and `protoqa.generation.cut_policy` says what "
            "the ranked list did with it (`keep`, `drop`, or its `complete_words`):\n\n"
            + markdown_table(show))


def protoqa_markdown(table: pd.DataFrame) -> str:
    parts = ["The paper's layout: Max Answers@k and Max Incorrect@k in %, one table per answer "
             "matching (exact string, WordNet, embedding), the release's prediction files next to "
             "the sampling baseline of each configured LM, on the crowdsourced dev questions."]
    for sim in table["similarity"].unique():
        t = table[table["similarity"] == sim]
        show = pd.DataFrame({"system": [_system_label(s) for s in t["system"]]})
        for m in PQ_METRICS:
            kind, k = m.split("@")
            show[("Max Answers" if kind == "max_answers" else "Max Incorrect") + f" @{k}"] = \
                [pct(v) for v in t[m]]
        parts += [f"**{sim} matching**", markdown_table(show)]
    return "\n\n".join(parts)


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
    df["_v"] = df["variant"].map(lambda v: VARIANTS.index(v) if v in VARIANTS else 9)
    df["_b"] = df["benchmark"] != "CSQA2 dev"
    return df.sort_values(["_b", "benchmark", "model", "_v"]).drop(columns=["_v", "_b"]) \
        .reset_index(drop=True)


def twentyq_markdown(df: pd.DataFrame) -> str:
    parts = []
    for bench in df["benchmark"].unique():
        d = df[df["benchmark"] == bench]
        show = pd.DataFrame({"model": d["model"], "prompt": d["variant"].str.replace("_", " "),
                             "n": d["n"].map(lambda v: _num(v, 0)), "F1 (yes)": d["f1"].map(pct),
                             "accuracy": d["accuracy"].map(pct), "NLL": d["nll"].map(lambda v: _num(v, 3)),
                             "% predicted yes": d["pct_pred_yes"].map(lambda v: _num(v, 1))})
        abl = []
        for model in d["model"].unique():
            g = d[d["model"] == model].set_index("variant")["accuracy"]
            row = {"model": model}
            for base in ("zero_shot", "few_shot"):
                w, wo = g.get(base, float("nan")), g.get(f"{base}_no_topic", float("nan"))
                row[f"{base.replace('_', '-')} with / without topic"] = \
                    f"{pct(w)} / {pct(wo)} ({_num(w - wo, 1, 100)})"
            abl.append(row)
        parts += [f"**{bench}**: binary F1 (yes positive), accuracy in %, mean NLL (nats) of the gold "
                  "answer with p(yes) and p(no) renormalised, per prompt (the paper's zero-shot and "
                  "4-shot prompts, and both without the topic line).",
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
        "AUROC [CI]": [f"{_num(a, 3)} [{_num(lo, 3)}, {_num(hi, 3)}]" if not pd.isna(a) else "–"
                       for a, lo, hi in zip(d["auroc"], d["auroc_ci_low"], d["auroc_ci_high"])],
        "cal. accuracy [CI]": [_ci(a, lo, hi) for a, lo, hi in zip(
            d["cal_accuracy"], d["cal_accuracy_ci_low"], d["cal_accuracy_ci_high"])],
        "cal. F1 [CI]": [_ci(a, lo, hi) for a, lo, hi in zip(
            d["cal_f1"], d["cal_f1_ci_low"], d["cal_f1_ci_high"])],
        "cal. % yes": d["cal_pct_pred_yes"].map(lambda v: _num(v, 1))})
    return ("Calibrated, whichever way a model leans (docs/twentyq.md): AUROC of the log-odds "
            "log p(yes) − log p(no) against the gold label (ties count half; 0.5 = chance), and "
            f"accuracy and F1 in % at a threshold on the log-odds cross-fitted over {folds} folds (each "
            "fold predicted with the threshold that maximises accuracy on the others); "
            f"{level} percentile bootstrap intervals over items.\n\n" + markdown_table(show))


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
            show[c] = show[c].map(lambda v: _num(v, 3))
        elif c.startswith("pct_"):
            show[c] = show[c].map(lambda v: _num(v, 2))
    show.columns = [AUDIT_COLUMNS[c] for c in cols]
    return ("Train/test overlap per benchmark: duplicate pairs (exact, and equal after folding case, "
            "punctuation and whitespace) and the distribution of each test item's top-1 cosine "
            "similarity to the training items under the embedder.\n\n" + markdown_table(show))


def qads_wsd_markdown(df: pd.DataFrame) -> str:
    wide = df.pivot_table(index="method", columns="dataset", values="f1", aggfunc="first", sort=False)
    show = wide.reset_index()
    for c in show.columns[1:]:
        show[c] = show[c].map(pct)
    n = df.drop_duplicates("dataset").set_index("dataset")["n"]
    header = ", ".join(f"{d} {int(v):,}" for d, v in n.items())
    return (f"WSD F1 in % per method and data set of the unified WSD framework (instances: {header}).\n\n"
            + markdown_table(show))


def qads_qa_table(qa_paths: list[str], ft_paths: list[str]) -> pd.DataFrame:
    frames = []
    for p in qa_paths:
        df = read_table(p)
        if not df.empty:
            df.insert(1, "training", "none (as configured)")
            frames.append(df)
    for p in ft_paths:
        df = read_table(p)
        if df.empty:
            continue
        df = df[df["fold"].astype(str) == "pooled"].copy()
        df["training"] = df["split"].map({"base": "none (before fine-tuning)",
                                          "finetuned": "fine-tuned (article folds)"}).fillna(df["split"])
        frames.append(df)
    if not frames:
        return pd.DataFrame()
    cols = ["model", "training", "questions", "n", "exact", "f1", "HasAns_exact", "HasAns_f1",
            "NoAns_exact", "random_model", "model_source", "model_quant", "compute_device",
            "compute_dtype", "verified"]
    df = pd.concat(frames, ignore_index=True)
    df = df[[c for c in cols if c in df]]
    order = {"original": 0, "one": 1, "all": 2}
    df["_q"] = df["questions"].map(lambda q: order.get(q, 9))
    df = df.sort_values(["model", "training", "_q", "questions"]).drop(columns="_q")
    orig = df[df["questions"] == "original"].set_index(["model", "training"])
    for col, out in (("f1", "f1_minus_original"), ("HasAns_f1", "hasans_f1_minus_original")):
        if col not in df:
            continue
        df[out] = [v - orig[col].get((m, t), float("nan"))
                   for v, m, t in zip(df[col], df["model"], df["training"])]
    return df.reset_index(drop=True)


def qads_qa_markdown(df: pd.DataFrame) -> str:
    show = pd.DataFrame({
        "model": df["model"], "training": df["training"], "questions": df["questions"],
        "n": df["n"].map(lambda v: _num(v, 0)), "EM": df["exact"].map(_num), "F1": df["f1"].map(_num),
        "HasAns EM": df["HasAns_exact"].map(_num), "HasAns F1": df["HasAns_f1"].map(_num),
        "NoAns EM": df["NoAns_exact"].map(_num),
        "F1 − original": df["f1_minus_original"].map(lambda v: _num(v, 1)),
        "HasAns F1 − original": df["hasans_f1_minus_original"].map(lambda v: _num(v, 1))})
    return ("Official SQuAD 2.0 metric (EM and F1 in %) on the original questions and the QADS sets "
            "(`one`: one word replaced by a synonym, `all`: every replaceable word); fine-tuned rows "
            "pool the held-out predictions of every article fold. `F1 − original` and `HasAns F1 − "
            "original` are the synonym effect in points, over all questions and over the answerable "
            "ones: the overall F1 also counts the unanswerable questions, where a model that "
            "abstains more often on the rewritten questions gains, so the answerable-only change is "
            "the one to compare with a drop in answering." + _random_note(df) + "\n\n"
            + markdown_table(show))


def qads_qa_domains_table(paths: list[str]) -> pd.DataFrame:
    """Per model and topic domain: articles, and n / F1 / HasAns F1 per question set (wide), with
    the HasAns F1 change from the original questions to ``one`` and ``all``."""
    frames = [read_table(p) for p in paths]
    frames = [f for f in frames if not f.empty]
    if not frames:
        return pd.DataFrame()
    df = pd.concat(frames, ignore_index=True)
    sets = [q for q in ("original", "one", "all") if q in set(df["questions"])]
    sets += sorted(set(df["questions"]) - set(sets))
    rows = []
    for (model, domain), g in df.groupby(["model", "domain"], sort=True):
        g = g.set_index("questions")
        row = {"model": model, "domain": domain, "articles": int(g["articles"].iloc[0]),
               "titles": g["titles"].iloc[0]}
        if "random_model" in g:
            row["random_model"] = g["random_model"].iloc[0]
        for q in sets:
            for col in ("n", "f1", "HasAns_f1"):
                row[f"{col}_{q}"] = g[col].get(q, float("nan"))
        for q in sets[1:]:
            row[f"HasAns_f1_{q}_minus_original"] = (row[f"HasAns_f1_{q}"] - row["HasAns_f1_original"]
                                                    if "original" in sets else float("nan"))
        rows.append(row)
    out = pd.DataFrame(rows)
    return out.sort_values(["model", "n_original" if "original" in sets else "domain", "domain"],
                           ascending=[True, False, True]).reset_index(drop=True)


def qads_qa_domains_markdown(df: pd.DataFrame) -> str:
    sets = [c[2:] for c in df.columns if c.startswith("n_")]
    show = pd.DataFrame({"model": df["model"], "domain": df["domain"], "articles": df["articles"]})
    for q in sets:
        show[f"n {q}"] = df[f"n_{q}"].map(lambda v: _num(v, 0))
    for q in sets:
        show[f"HasAns F1 {q}"] = df[f"HasAns_f1_{q}"].map(_num)
    for q in sets[1:]:
        show[f"Δ {q}"] = df[f"HasAns_f1_{q}_minus_original"].map(_num)
    return ("The fine-tuned QA model's pooled held-out predictions per article topic domain (the "
            "article's most frequent WordNet domain, table below): HasAns F1 in % per question set "
            "and its change from the original questions in points. Domains with few articles are "
            "small samples; the articles behind each row are in `qads_qa_by_domain.tsv`."
            + _random_note(df) + "\n\n" + markdown_table(show))


def qads_domains_markdown(df: pd.DataFrame) -> str:
    return ("Per article: the WordNet topic domains of the disambiguated words of a seeded sample of its "
            "questions (`qads.domains`).\n\n" + markdown_table(df.fillna("–")))


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
            "n contaminated / clean": [f"{_num(a, 0)} / {_num(b, 0)}" for a, b in
                                       zip(effect["n_contaminated"], effect["n_clean"])],
            "accuracy contaminated": effect["acc_contaminated"].map(pct),
            "accuracy clean": effect["acc_clean"].map(pct),
            "difference (points)": effect["difference"].map(lambda v: _num(v, 1, 100)),
            "one-sided p (Mann-Whitney U)": effect["p_value"].map(pval)})
        parts += ["Model correctness (WinoWhat per-item results) on contaminated vs clean items:",
                  markdown_table(show)]
    return "\n\n".join(parts)


def anchors_markdown(anchors: pd.DataFrame, task: str) -> str:
    a = anchors[anchors["task"] == task]
    if a.empty:
        return ("No **published** number is listed for this task in `resources/published_anchors.tsv` "
                "(none could be sourced; see docs/reproduce.md).")
    show = pd.DataFrame({"benchmark": a["benchmark"], "system": a["system"], "metric": a["metric"],
                         "published": a["value"].map(lambda v: f"{float(v):.1f}"),
                         "setting": a["setting"], "source": a["source"], "note": a["note"].fillna("")})
    return ("**Published** numbers for orientation (from `resources/published_anchors.tsv`; other "
            "models, weights, prompts or splits than the rows above, so not directly comparable):\n\n"
            + markdown_table(show))


def read_anchors(path) -> pd.DataFrame:
    df = pd.read_csv(path, sep="\t", comment="#", dtype=str, keep_default_na=False)
    missing = [c for c in ANCHOR_COLUMNS if c not in df]
    if missing:
        raise ValueError(f"{path}: missing columns {missing}")
    bad = df[(df["source"].str.strip() == "") | (df["value"].str.strip() == "")]
    if len(bad):
        raise ValueError(f"{path}: every published number needs a value and a source "
                         f"(rows {list(bad.index + 2)})")
    df["value"] = df["value"].astype(float)
    df["note"] = df["note"].replace("", None)
    return df


MODEL_COLUMNS = {"model_source": "source", "model_quant": "quantisation",
                 "random_model": "random weights", "compute_device": "compute device",
                 "compute_dtype": "compute dtype", "prompt_format": "prompt format",
                 "system_instruction": "system instruction"}


def models_markdown(tables: list[tuple[str, pd.DataFrame]]) -> str:
    """One row per model and table (``(label, table)`` pairs; a ``table`` column, where a table
    has one, labels its rows): where the weights came from, what computed the table and, for a
    causal LM's, in which prompt format. A table written before csbench recorded the compute
    device and dtype says so."""
    rows = []
    for label, f in tables:
        if f.empty or "model" not in f:
            continue
        d = f.copy()
        if "table" not in d:
            d["table"] = label
        for c in ("compute_device", "compute_dtype"):
            if c not in d:
                d[c] = "not recorded"
        rows.append(d.reindex(columns=["model", "table", *MODEL_COLUMNS]))
    if not rows:
        return ""
    df = pd.concat(rows, ignore_index=True).astype(object).fillna("").astype(str).drop_duplicates()
    df = df.sort_values("model", kind="stable")
    return ("Models behind the tables, from their provenance columns: where the weights came from, "
            "what computed each table and a causal LM's prompt format (`raw` or `chat`: its chat "
            "template; one set of weights in two formats is two model names) "
            "(`served`: an endpoint computed it; scores read back "
            "from the LM cache were computed from the same weights in the same dtype, the cache's "
            "key, possibly on another device):\n\n"
            + markdown_table(df.rename(columns=MODEL_COLUMNS)))


# ---------------------------------------------------------------------------------------------

def build(tables: dict[str, dict[str, list[str]]], configured: list[str], anchors_path,
          markdown_path, outputs: dict[str, str], log=None) -> None:
    """Write RESULTS.md and the planned summary files.

    ``tables``: task -> role -> result table paths (:func:`inputs_of`); ``configured``: the tasks
    of the run's config; ``outputs``: summary key -> path (:func:`planned`, made absolute).
    """
    from .io import atomic_open

    anchors = read_anchors(anchors_path)
    md_dir = Path(markdown_path).parent
    rel = {k: Path(v).resolve().relative_to(md_dir.resolve()).as_posix() if Path(v).resolve()
           .is_relative_to(md_dir.resolve()) else str(v) for k, v in outputs.items()}
    seen = []
    out = ["# csbench results", "",
           "Built by the `results` rule from the result tables of this run only: every number below is "
           "read from a table under `results/`, except the rows labelled **published**, which come from "
           "`resources/published_anchors.tsv` with their sources. Tasks in this run's config: "
           + ", ".join(f"`{t}`" for t in configured if t != "results") + "."]
    for task in TASK_ORDER:
        out += ["", f"## {TASK_TITLES[task]}", ""]
        if task not in configured:
            out.append(f"Skipped: `{task}` is not in this run's `tasks`, so it has no result tables.")
            continue
        ins = tables.get(task, {})
        body = []
        if task == "winowhat" and ins.get("accuracy"):
            acc = read_table(ins["accuracy"][0])
            mcn = read_table(ins["mcnemar"][0]) if ins.get("mcnemar") else pd.DataFrame()
            seen.append(("WinoWhat", acc))
            head, cats = winowhat_tables(acc, mcn)
            _tsv(head, outputs["winowhat_accuracy"])
            _tsv(cats, outputs["winowhat_categories"])
            plot_paraphrase_effect(cats, outputs["paraphrase_effect"])
            body.append(winowhat_markdown(head, cats, rel.get("paraphrase_effect")) + _random_note(acc))
        elif task == "protoqa" and ins.get("summary"):
            summary = read_table(ins["summary"][0])
            t = protoqa_table(summary)
            seen.append(("ProtoQA sampling", protoqa_models(summary)))
            _tsv(t, outputs["protoqa"])
            body.append(protoqa_markdown(t))
            sampling = protoqa_sampling_markdown(protoqa_sampling(summary))
            if sampling:
                body.append(sampling)
        elif task == "twentyq":
            if ins.get("metrics"):
                t = twentyq_table(ins["metrics"])
                seen.append(("20Q yes/no", t.assign(table="20Q yes/no, " + t["benchmark"])
                             if not t.empty else t))
                _tsv(t, outputs["twentyq_yesno"])
                body.append(twentyq_markdown(t) + _random_note(t))
            else:
                body.append("No yes/no scores (no causal LM configured).")
            if ins.get("audits"):
                a = read_table(ins["audits"][0])
                _tsv(a, outputs["audits"])
                body.append("### Overlap audits\n\n" + audits_markdown(a))
            else:
                body.append("No overlap audit is enabled (`audits`).")
        elif task == "qads":
            if ins.get("wsd"):
                w = read_table(ins["wsd"][0])
                _tsv(w, outputs["qads_wsd"])
                body.append("### Word sense disambiguation\n\n" + qads_wsd_markdown(w))
            if "qads_qa" in outputs:
                q = qads_qa_table(ins.get("qa", []), ins.get("finetune", []))
                seen.append(("QADS QA", q.assign(table="QADS QA, training " + q["training"])
                             if not q.empty else q))
                _tsv(q, outputs["qads_qa"])
                body.append("### Extractive QA\n\n" + (qads_qa_markdown(q) if not q.empty else
                            "No QA model was scored (`qads.qa.models` is empty and fine-tuning is off)."))
            if "qads_qa_domains" in outputs:
                qd = qads_qa_domains_table(ins["qa_domains"])
                _tsv(qd, outputs["qads_qa_domains"])
                body.append("### Extractive QA by domain\n\n" + (
                    qads_qa_domains_markdown(qd) if not qd.empty else "No per-domain scores."))
            if ins.get("domains"):
                body.append("### Domains\n\n" + qads_domains_markdown(read_table(ins["domains"][0])))
        elif task == "contamination":
            if ins.get("effect") or ins.get("summary"):
                e = read_table(ins["effect"][0]) if ins.get("effect") else pd.DataFrame()
                s = read_table(ins["summary"][0]) if ins.get("summary") else pd.DataFrame()
                if "contamination_effect" in outputs:
                    _tsv(e, outputs["contamination_effect"])
                body.append(contamination_markdown(e, s))
            else:
                body.append("No corpus is configured (`contamination.corpora` is empty), so nothing was "
                            "scanned and there is no effect table.")
        if not body:
            body.append("This task wrote none of the tables summarised here.")
        out.append("\n\n".join(body))
        anchor_md = anchors_markdown(anchors, task)
        if anchor_md:
            out += ["", anchor_md]
    models = models_markdown(seen)
    if models:
        out += ["", "## Models", "", models]
    with atomic_open(markdown_path) as fh:
        fh.write("\n".join(out).rstrip() + "\n")
    if log is not None:
        log.info("wrote %s and %d summary files", markdown_path, len(outputs))
