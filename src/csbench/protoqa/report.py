"""ProtoQA's part of RESULTS.md: Max Answers@k / Max Incorrect@k per question set and answer
matching for the release's prediction files, each sampling baseline and the trivial ranked list,
and the sampling baselines' samples, from ``results/protoqa/<set>/summary.tsv`` (one per set of
``protoqa.targets``; every table names its set in a ``questions`` column); the findings' intervals
from the per-question scores (``results/protoqa/<set>/eval/<system>/<similarity>.tsv``),
questions resampled."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from ..bootstrap import cluster_means, interval
from ..findings import (Finding, anchor, at_baseline, base_model, effect_text, judge, points,
                        with_interval)
from ..sections import Section, markdown_table, pct, read_table, select, write_summary
from . import SAMPLING_ROWS, TRIVIAL

TITLE = "ProtoQA: ranked answer lists"
PAPER = "ProtoQA"  # whose findings this section checks
PQ_METRICS = ("max_answers@1", "max_answers@3", "max_answers@5", "max_answers@10",
              "max_incorrect@1", "max_incorrect@3", "max_incorrect@5")
MODEL_ROWS = ("model_source", "model_quant", "random_model", "compute_device", "compute_dtype",
              "prompt_format", "system_instruction")


def inputs(targets: list[str]) -> dict[str, list[str]]:
    return {"summary": [p for p in select(targets, "/summary.tsv") if "/protoqa/" in p],
            "eval": [p for p in select(targets, ".tsv")  # per question: <set>/eval/<system>/<sim>.tsv
                     if "/protoqa/" in p and "/eval/" in p and not p.endswith("/issues.tsv")]}


def question_set(path: str) -> str:
    """The question set of ``results/protoqa/<set>/...`` (the directory below ``protoqa``)."""
    parts = Path(path).parts
    i = parts.index("protoqa") + 1 if "protoqa" in parts else len(parts)
    return parts[i] if i < len(parts) - 1 else ""


def planned(ins: dict[str, list[str]]) -> dict[str, str]:
    return {"protoqa": "protoqa.tsv"} if ins.get("summary") else {}


def section(ins: dict[str, list[str]], outputs: dict[str, str], links: dict[str, str],
            anchors: pd.DataFrame, bootstrap: dict | None = None) -> Section:
    """``bootstrap``: ``{n, seed, level}`` of the findings' intervals (``protoqa.bootstrap``;
    none: no intervals)."""
    if not ins.get("summary"):
        return Section("", findings=findings(pd.DataFrame(), anchors))
    summaries = {question_set(p): read_table(p) for p in ins["summary"]}
    order = _files_first(list(summaries), lambda q: [c.partition("/")[2].removesuffix(
        " (random weights)") for c in summaries[q].columns[1:]])
    summaries = {q: summaries[q] for q in order}
    tables = [protoqa_table(s).assign(questions=q) for q, s in summaries.items()]
    t = pd.concat(tables, ignore_index=True) if tables else pd.DataFrame()
    if not t.empty:
        t = t[["questions", *[c for c in t.columns if c != "questions"]]]
    write_summary(t, outputs["protoqa"])
    sampling = pd.concat([protoqa_sampling(s).assign(questions=q) for q, s in summaries.items()],
                         ignore_index=True)
    sampling = sampling[["questions", *[c for c in sampling.columns if c != "questions"]]]
    scores = per_question(ins.get("eval", []))
    body = [protoqa_markdown(t, scores)]
    sampling_md = protoqa_sampling_markdown(sampling)
    if sampling_md:
        body.append(sampling_md)
    models = pd.concat([protoqa_models(s) for s in summaries.values()], ignore_index=True)
    models = models.drop_duplicates("model") if "model" in models else models
    judged = finding_set(t)
    return Section("\n\n".join(body), tables={"protoqa": t, "protoqa_sampling": sampling},
                   models=[("ProtoQA sampling", models)],
                   findings=findings(t[t["questions"] == judged].drop(columns="questions")
                                     if not t.empty else t, anchors,
                                     scores[scores["questions"] == judged], bootstrap, judged,
                                     tuned=fine_tuned(models)))


def fine_tuned(models: pd.DataFrame) -> dict[str, str]:
    """Sampling baseline of a fine-tuned model -> that of its base model (``gen-<name>``), from
    the models' ``model_source`` (:func:`csbench.findings.base_model`)."""
    if models.empty or "model_source" not in models:
        return {}
    pairs = {m: base_model(m, src) for m, src in zip(models["model"], models["model_source"])}
    return {f"gen-{m}": f"gen-{b}" for m, b in pairs.items() if b != m}


def _files_first(sets: list[str], systems) -> list[str]:
    """Question sets in report order: the one the prediction files answer (the first of
    ``protoqa.targets``: the only one with systems other than the trivial list and the sampling
    baselines) first, then the others by name. ``systems(set)``: its systems."""
    def files(q):
        return any(s != TRIVIAL and not s.startswith("gen-") for s in systems(q))
    return sorted(sets, key=lambda q: (not files(q), q))


def finding_set(t: pd.DataFrame) -> str:
    """The question set the paper's finding is judged on: the one with the release's human and
    fine-tuned prediction files, else the one the prediction files answer, else the first."""
    if t.empty:
        return ""
    for q in t["questions"].unique():
        if {"human", "gpt2finetuned"} <= set(t.loc[t["questions"] == q, "system"]):
            return q
    return t["questions"].iloc[0]


def _system_label(name: str) -> str:
    if name == TRIVIAL:
        return "*most frequent answers of the other questions* (trivial baseline)"
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
    df["_g"] = [2 if s == TRIVIAL else int(s.startswith("gen-")) for s in df["system"]]
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
    return pd.DataFrame([{"model": m, **{c: col[c] for c in MODEL_ROWS if c in col.index}}
                         for m, col in _sampling_columns(summary).items()])


def protoqa_sampling(summary: pd.DataFrame) -> pd.DataFrame:
    """One row per sampling baseline (model name, so a chat-prompt variant of a model is a row of
    its own, beside the raw-prompt one): its prompt format where the summary records one
    (``prompt_format`` row), samples drawn, the share that ``max_new_tokens`` cut, the cut policy
    (empty for a summary written before these rows existed)."""
    keys = ("prompt_format", *SAMPLING_ROWS)
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

    show = pd.DataFrame({"questions": sampling["questions"], "model": sampling["model"],
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
            "stops at its recipe's stop string or the end of sequence; one that reaches "
            "`max_new_tokens` first is cut by the token budget "
            "(possibly mid-answer or mid-word), and `protoqa.generation.cut_policy` says what "
            "the ranked list did with it (`keep`, `drop`, or its `complete_words`):\n\n"
            + markdown_table(show))


def protoqa_markdown(table: pd.DataFrame, scores: pd.DataFrame | None = None) -> str:
    """One table per question set and answer matching, each headed by its set's name (and the
    number of questions scored, from the per-question ``scores``)."""
    parts = ["The paper's layout: Max Answers@k and Max Incorrect@k in %, one table per question "
             "set (`protoqa.targets`) and answer matching (exact string, WordNet, embedding), the "
             "release's prediction files (on the first set) next to the sampling baseline of each "
             "configured LM and the trivial ranked list (per question, the answers most often "
             "given to the other questions: a system that ignores the question)."]
    for q in table["questions"].unique():
        tq = table[table["questions"] == q]
        n = (scores.loc[scores["questions"] == q, "question_id"].nunique()
             if scores is not None and not scores.empty else 0)
        for sim in tq["similarity"].unique():
            t = tq[tq["similarity"] == sim]
            show = pd.DataFrame({"system": [_system_label(s) for s in t["system"]]})
            for m in PQ_METRICS:
                kind, k = m.split("@")
                show[("Max Answers" if kind == "max_answers" else "Max Incorrect") + f" @{k}"] = \
                    [pct(v) for v in t[m]]
            parts += [f"**questions `{q}`" + (f" ({n} questions)" if n else "")
                      + f", {sim} matching**", markdown_table(show)]
    return "\n\n".join(parts)


# ---------------------------------------------------------------------------------------------
# per-question scores and findings

def per_question(paths: list[str]) -> pd.DataFrame:
    """The per-question scores of ``<set>/eval/<system>/<similarity>.tsv`` files in one long
    table (``questions, system, similarity, question_id, metric, score``; the ``mean`` rows left
    out)."""
    frames = []
    for p in paths:
        parts = Path(p).parts
        df = pd.read_csv(p, sep="\t", dtype={"question_id": str})
        frames.append(df[df["question_id"] != "mean"].assign(
            questions=question_set(p), system=parts[-2], similarity=parts[-1][:-4]))
    cols = ["questions", "system", "similarity", "question_id", "metric", "score"]
    return pd.concat(frames, ignore_index=True)[cols] if frames else pd.DataFrame(columns=cols)


def resampled(scores: pd.DataFrame, systems: list[str], sim: str, metric: str,
              bootstrap: dict) -> dict[str, np.ndarray]:
    """System -> its mean ``metric`` (in points) over the same ``bootstrap["n"]`` resamples of
    the questions any of ``systems`` scored (a system's mean over the questions it scored)."""
    s = scores[(scores["similarity"] == sim) & (scores["metric"] == metric)
               & scores["system"].isin(systems)]
    wide = s.pivot_table(index="question_id", columns="system", values="score", aggfunc="first")
    wide = wide.reindex(columns=systems)
    means = cluster_means(wide.fillna(0.0).to_numpy(), wide.notna().to_numpy(),
                          bootstrap["n"], bootstrap["seed"])
    return {name: 100 * means[:, i] for i, name in enumerate(systems)}


def findings(t: pd.DataFrame, anchors, scores: pd.DataFrame | None = None,
             bootstrap: dict | None = None, questions: str = "dev",
             tuned: dict[str, str] | None = None) -> list[Finding]:
    """Human > fine-tuned GPT-2 > a zero-shot LM on Max Answers@10 (the release's prediction
    files beside each zero-shot sampling baseline; the effect is the smaller of the two gaps, its
    interval from the per-question ``scores``, questions resampled), with the trivial ranked list
    as the baseline a zero-shot LM must beat; csbench's fine-tuned arm (``tuned``: the sampling
    baseline of a fine-tuned model -> its base model's) against its base model, paired on the
    same questions; and the evaluator's agreement with manual clusters (not measured by
    csbench)."""
    tuned = tuned or {}
    sim = "wordnet" if not t.empty and (t["similarity"] == "wordnet").any() else "exact"
    a = lambda s: anchor(anchors, f"protoqa.t3.{s}.test.{sim}-max-answers-10")  # noqa: E731
    ids = [f"protoqa.t3.{s}.test.{sim}-max-answers-10" for s in ("human", "gpt2-finetuned", "gpt2")]
    paper = (f"{points(a('human'))} > {points(a('gpt2-finetuned'))} > {points(a('gpt2'))} "
             f"(human > GPT-2 fine-tuned > GPT-2, {sim} Max Answers@10, test, Table 3)")
    claim = "human > fine-tuned > zero-shot (Max Answers@10)"
    agree = anchor(anchors, "protoqa.t4.wordnet-similarity.vs-manual-clusters.f1")
    out = []
    if t.empty:
        out.append(Finding("ProtoQA", claim, paper, verdict="not run", why="no summary table",
                           anchors=ids))
    else:
        d = t[t["similarity"] == sim].set_index("system")["max_answers@10"] * 100
        gens = [s for s in d.index if s.startswith("gen-") and s not in tuned]
        triv = d.get(TRIVIAL, float("nan"))
        baseline = ("– (no trivial ranked list is scored)" if triv != triv else
                    f"most frequent answers of the other questions {points(triv)}")
        for gen in gens or [None]:
            f = Finding("ProtoQA", claim, paper, system=f"{sim} matching, {questions}" + (
                f", {gen[4:]} zero-shot" if gen else ""), metric="Max Answers@10",
                baseline=baseline, anchors=ids)
            if gen is None or "human" not in d or "gpt2finetuned" not in d:
                f.verdict, f.why = judge(missing="needs the human and fine-tuned prediction files "
                                         "and a sampling baseline")
            else:
                h, ft, zs = d["human"], d["gpt2finetuned"], d[gen]
                f.effect = min(h - ft, ft - zs)  # both gaps in the paper's direction
                zs_lo = zs_hi = float("nan")
                have = scores is not None and bootstrap and not scores[
                    (scores["system"] == gen) & (scores["similarity"] == sim)].empty
                if have:
                    r = resampled(scores, ["human", "gpt2finetuned", gen], sim,
                                  "max_answers@10", bootstrap)
                    f.ci_low, f.ci_high = interval(np.minimum(r["human"] - r["gpt2finetuned"],
                                                              r["gpt2finetuned"] - r[gen]),
                                                   bootstrap["level"])
                    zs_lo, zs_hi = interval(r[gen], bootstrap["level"])
                    f.n = int(scores.loc[(scores["system"] == gen) & (scores["similarity"] == sim),
                                         "question_id"].nunique())
                f.ours = (f"{points(h)} > {points(ft)} > {with_interval(zs, zs_lo, zs_hi)}; "
                          + effect_text(f.effect, f.ci_low, f.ci_high))
                low = zs_lo if zs_lo == zs_lo else zs
                f.verdict, f.why = judge(f.effect, f.ci_low, f.ci_high, at_baseline=(
                    f"the zero-shot LM's Max Answers@10 {points(low)} ≤ the trivial list's "
                    f"{points(triv)}" if at_baseline(low, triv) else None))
            out.append(f)
        out += arm_findings(d, tuned, sim, scores, bootstrap, questions, baseline,
                            paper=f"{points(a('gpt2-finetuned'))} vs {points(a('gpt2'))} (GPT-2 "
                            f"fine-tuned vs zero-shot, {sim} Max Answers@10, test, Table 3)")
    out.append(Finding("ProtoQA", "the WordNet matcher agrees with manual answer clusters",
                       f"F1 {points(agree / 100, 3)} (Table 4)" if agree == agree else "– (Table 4)",
                       verdict="not run", why="csbench has no manually clustered answers to "
                       "measure the matchers against",
                       anchors=["protoqa.t4.wordnet-similarity.vs-manual-clusters.f1"]))
    return out


def arm_findings(d: pd.Series, tuned: dict[str, str], sim: str, scores: pd.DataFrame | None,
                 bootstrap: dict | None, questions: str, baseline: str,
                 paper: str) -> list[Finding]:
    """Fine-tuning beats zero-shot sampling (Table 3: GPT-2 fine-tuned against GPT-2, test):
    each fine-tuned model's sampling baseline against its base model's on the same questions
    (Max Answers@10 in points; the interval from the per-question scores, questions resampled
    together, so it is paired)."""
    paper_ft = "protoqa.t3.gpt2-finetuned.test." + sim + "-max-answers-10"
    paper_zs = "protoqa.t3.gpt2.test." + sim + "-max-answers-10"
    out = []
    for ft, base in sorted(tuned.items()):
        if ft not in d:
            continue
        f = Finding("ProtoQA", "fine-tuning beats zero-shot sampling (Max Answers@10)",
                    paper, system=f"{ft[4:]} vs {base[4:]} zero-shot, {sim} matching, {questions}",
                    metric="Max Answers@10", baseline=baseline, anchors=[paper_ft, paper_zs])
        if base not in d:
            f.verdict, f.why = judge(missing=f"{base[4:]} (the base model) is not sampled")
            out.append(f)
            continue
        f.effect = d[ft] - d[base]
        lo_ft = hi_ft = lo_zs = hi_zs = float("nan")
        have = scores is not None and bootstrap and {ft, base} <= set(
            scores.loc[scores["similarity"] == sim, "system"])
        if have:
            r = resampled(scores, [ft, base], sim, "max_answers@10", bootstrap)
            f.ci_low, f.ci_high = interval(r[ft] - r[base], bootstrap["level"])
            lo_ft, hi_ft = interval(r[ft], bootstrap["level"])
            lo_zs, hi_zs = interval(r[base], bootstrap["level"])
            f.n = int(scores.loc[(scores["system"] == ft) & (scores["similarity"] == sim),
                                 "question_id"].nunique())
        f.ours = (f"{with_interval(d[ft], lo_ft, hi_ft)} vs {with_interval(d[base], lo_zs, hi_zs)}; "
                  + effect_text(f.effect, f.ci_low, f.ci_high))
        f.verdict, f.why = judge(f.effect, f.ci_low, f.ci_high)
        out.append(f)
    return out
