"""QADS's part of RESULTS.md: WSD F1 per method, extractive QA (official SQuAD 2.0 metric) on the
original and synonym-substituted questions before and after fine-tuning, per topic domain, and the
articles' domains, from the tables ``workflow/rules/qads.smk`` registers; the findings' intervals
from the per-question scores (``qa_items.tsv``, the fine-tuning's ``.items.tsv``), original
questions resampled with their rewrites."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..bootstrap import cluster_means, interval
from ..findings import Finding, anchor, at_baseline, effect_text, judge, points
from ..sections import (Section, is_random, markdown_table, num, pct, random_note, read_table,
                        select, summary_files, write_summary)

# the training labels of the fine-tuned rows: the plain article folds, and the QADS arm's
# "<plain> + QADS-<mode> training questions"
PLAIN_TRAINING, ARM_TRAINING = "fine-tuned (article folds)", " + QADS-"
TITLE = "QADS: WSD and QA on synonym-substituted SQuAD 2.0 questions"
PAPER = "QADS"  # whose findings this section checks


def inputs(targets: list[str]) -> dict[str, list[str]]:
    return {"wsd": select(targets, "qads/wsd_eval.tsv"), "qa": select(targets, "qads/qa_scores.tsv"),
            # the further data sets of qads.questions.table: rewritten and answered only
            "qa_sets": [p for p in select(targets, "/qa_scores.tsv") if "/qads/sets/" in p],
            "finetune": [p for p in select(targets, ".tsv") if "/qads/finetune/" in p
                         and not p.endswith((".by_domain.tsv", ".items.tsv"))],
            "qa_items": select(targets, "qads/qa_items.tsv"),
            "ft_items": [p for p in select(targets, ".items.tsv") if "/qads/finetune/" in p],
            "qa_domains": select(targets, ".by_domain.tsv"),
            "domains": select(targets, "qads/domains.tsv")}


def planned(ins: dict[str, list[str]]) -> dict[str, str]:
    return summary_files(ins, {"qads_wsd": ("qads_wsd.tsv", "wsd"),
                               "qads_qa": ("qads_qa.tsv", "qa", "finetune"),
                               "qads_qa_domains": ("qads_qa_by_domain.tsv", "qa_domains")})


def section(ins: dict[str, list[str]], outputs: dict[str, str], links: dict[str, str],
            anchors: pd.DataFrame, bootstrap: dict | None = None) -> Section:
    """``bootstrap``: ``{n, seed, level}`` of the findings' intervals (``qads.bootstrap``; none:
    no intervals)."""
    sec = Section("")
    body = []
    if ins.get("wsd"):
        w = read_table(ins["wsd"][0])
        sec.tables["qads_wsd"] = w
        write_summary(w, outputs["qads_wsd"])
        body.append("### Word sense disambiguation\n\n" + qads_wsd_markdown(w))
    if "qads_qa" in outputs:
        q = qads_qa_table(ins.get("qa", []), ins.get("finetune", []))
        sec.models.append(("QADS QA", q.assign(table="QADS QA, training " + q["training"])
                           if not q.empty else q))
        base = no_answer_baseline(q)
        sec.tables["qads_no_answer"] = base
        items = item_table(ins.get("qa_items", []), ins.get("ft_items", []))
        sec.findings = findings(q, base, anchors, items, bootstrap)
        first = dataset_name(q)
        body.append("### Extractive QA\n\n" + (
            (f"Questions of data set `{first}`. " if first else "") + qads_qa_markdown(q, base)
            if not q.empty else
            "No QA model was scored (`qads.qa.models` is empty and fine-tuning is off)."))
        tables = [q.assign(dataset=first) if not q.empty else q]
        for p in ins.get("qa_sets", []):  # a further data set: rewritten and answered, not verified
            qs = qads_qa_table([p], [])
            if qs.empty:
                continue
            name = dataset_name(qs)
            body.append(f"Questions of data set `{name}` (rewritten and answered; verification, "
                        "fine-tuning and domains read the first data set only). "
                        + qads_qa_markdown(qs, no_answer_baseline(qs)))
            tables.append(qs.assign(dataset=name))
        q = pd.concat([t for t in tables if not t.empty], ignore_index=True) \
            if any(not t.empty for t in tables) else q
        if not q.empty:
            q = q[["dataset", *[c for c in q.columns if c != "dataset"]]]
        sec.tables["qads_qa"] = q
        write_summary(q, outputs["qads_qa"])
    if "qads_qa_domains" in outputs:
        qd = qads_qa_domains_table(ins["qa_domains"])
        sec.tables["qads_qa_domains"] = qd
        write_summary(qd, outputs["qads_qa_domains"])
        body.append("### Extractive QA by domain\n\n" + (
            qads_qa_domains_markdown(qd) if not qd.empty else "No per-domain scores."))
    if ins.get("domains"):
        d = read_table(ins["domains"][0])
        sec.tables["qads_domains"] = d
        body.append("### Domains\n\n" + qads_domains_markdown(d))
    sec.markdown = "\n\n".join(body)
    if "qads_qa" not in outputs:
        sec.findings = findings(pd.DataFrame(), pd.DataFrame(), anchors)
    return sec


def qads_wsd_markdown(df: pd.DataFrame) -> str:
    wide = df.pivot_table(index="method", columns="dataset", values="f1", aggfunc="first", sort=False)
    show = wide.reset_index()
    for c in show.columns[1:]:
        show[c] = show[c].map(pct)
    n = df.drop_duplicates("dataset").set_index("dataset")["n"]
    header = ", ".join(f"{d} {int(v):,}" for d, v in n.items())
    return (f"WSD F1 in % per method and data set of the unified WSD framework (instances: {header}).\n\n"
            + markdown_table(show))


def dataset_name(q: pd.DataFrame) -> str:
    """The data set a QA table's questions come from (qa_scores.tsv's ``dataset`` column; "" for
    a table without it)."""
    if q.empty or "dataset" not in q:
        return ""
    names = q["dataset"].dropna().astype(str)
    return names.iloc[0] if len(names) else ""


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
        df["training"] = training_labels(df)
        frames.append(df)
    if not frames:
        return pd.DataFrame()
    cols = ["model", "training", "questions", "n", "exact", "f1", "HasAns_exact", "HasAns_f1",
            "NoAns_exact", "HasAns_n", "NoAns_n", "random_model", "model_source", "model_quant",
            "compute_device", "compute_dtype", "verified", "dataset"]
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


def qads_qa_markdown(df: pd.DataFrame, base: pd.DataFrame | None = None) -> str:
    show = pd.DataFrame({
        "model": df["model"], "training": df["training"], "questions": df["questions"],
        "n": df["n"].map(lambda v: num(v, 0)), "EM": df["exact"].map(num), "F1": df["f1"].map(num),
        "HasAns EM": df["HasAns_exact"].map(num), "HasAns F1": df["HasAns_f1"].map(num),
        "NoAns EM": df["NoAns_exact"].map(num),
        "F1 − original": df["f1_minus_original"].map(lambda v: num(v, 1)),
        "HasAns F1 − original": df["hasans_f1_minus_original"].map(lambda v: num(v, 1))})
    if base is not None and not base.empty:  # always "no answer", from the gold answerability
        show = pd.concat([show, pd.DataFrame({
            "model": "*always no answer* (trivial baseline)", "training": "–",
            "questions": base["questions"], "n": base["n"].map(lambda v: num(v, 0)),
            "EM": base["exact"].map(num), "F1": base["f1"].map(num),
            "HasAns EM": base["HasAns_exact"].map(num), "HasAns F1": base["HasAns_f1"].map(num),
            "NoAns EM": base["NoAns_exact"].map(num), "F1 − original": "–",
            "HasAns F1 − original": "–"})], ignore_index=True)
    return ("Official SQuAD 2.0 metric (EM and F1 in %) on the original questions and the QADS sets "
            "(`one`: one word replaced by a synonym, `all`: every replaceable word); fine-tuned rows "
            "pool the held-out predictions of every article fold. `F1 − original` and `HasAns F1 − "
            "original` are the synonym effect in points, over all questions and over the answerable "
            "ones: the overall F1 also counts the unanswerable questions, where a model that "
            "abstains more often on the rewritten questions gains, so the answerable-only change is "
            "the one to compare with a drop in answering." + random_note(df) + "\n\n"
            + markdown_table(show))


def qads_qa_domains_table(paths: list[str]) -> pd.DataFrame:
    """Per model and topic domain: articles, and n / F1 / HasAns F1 per question set (wide), with
    the HasAns F1 change from the original questions to ``one`` and ``all``."""
    frames = [read_table(p) for p in paths]
    frames = [f.assign(model=f["model"].astype(str) + f" + QADS-{qads_arm(f)} training")
              if qads_arm(f) else f for f in frames if not f.empty]
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
        show[f"n {q}"] = df[f"n_{q}"].map(lambda v: num(v, 0))
    for q in sets:
        show[f"HasAns F1 {q}"] = df[f"HasAns_f1_{q}"].map(num)
    for q in sets[1:]:
        show[f"Δ {q}"] = df[f"HasAns_f1_{q}_minus_original"].map(num)
    return ("The fine-tuned QA model's pooled held-out predictions per article topic domain (the "
            "article's most frequent WordNet domain, table below): HasAns F1 in % per question set "
            "and its change from the original questions in points. Domains with few articles are "
            "small samples; the articles behind each row are in `qads_qa_by_domain.tsv`."
            + random_note(df) + "\n\n" + markdown_table(show))


def qads_domains_markdown(df: pd.DataFrame) -> str:
    return ("Per article: the WordNet topic domains of the disambiguated words of a seeded sample of its "
            "questions (`qads.domains`).\n\n" + markdown_table(df.fillna("–")))



def training_labels(df: pd.DataFrame) -> list[str]:
    """The ``training`` label of each row of a fine-tuning table (its ``split``): before
    fine-tuning, the plain article folds, or (the QADS arm, Table 2's third row) what was added."""
    arm = qads_arm(df)
    tuned = f"{PLAIN_TRAINING}{ARM_TRAINING}{arm} training questions" if arm else PLAIN_TRAINING
    return [{"base": "none (before fine-tuning)", "finetuned": tuned}.get(s, s) for s in df["split"]]


def item_table(qa_paths: list[str], ft_paths: list[str]) -> pd.DataFrame:
    """Every question's F1 (0-1) by ``model``, ``training`` (the labels of :func:`qads_qa_table`)
    and ``questions`` set, with ``group``: the original question a rewritten one comes from (QADS
    ids are ``<original id>-<n>``), the unit the findings' bootstrap resamples."""
    cols = ["model", "training", "questions", "id", "group", "f1"]
    frames = []
    for p in qa_paths:
        df = pd.read_csv(p, sep="\t", dtype={"id": str})
        frames.append(df.assign(training="none (as configured)"))
    for p in ft_paths:
        df = pd.read_csv(p, sep="\t", dtype={"id": str})
        frames.append(df.assign(training=training_labels(df)) if not df.empty else df)
    frames = [f for f in frames if not f.empty]
    if not frames:
        return pd.DataFrame(columns=cols)
    df = pd.concat(frames, ignore_index=True)
    df["group"] = [i if q == "original" else i.rsplit("-", 1)[0]
                   for i, q in zip(df["id"], df["questions"])]
    return df[cols]


def resampled_f1(items: pd.DataFrame, keys: list[tuple], bootstrap: dict) -> list[np.ndarray]:
    """F1 in points of each ``(model, training, questions)`` key over the same
    ``bootstrap["n"]`` resamples of the original questions (each with its rewrites)."""
    parts = [items[(items["model"] == m) & (items["training"] == t) & (items["questions"] == q)]
             for m, t, q in keys]
    groups = pd.Index(sorted(set().union(*(set(p["group"]) for p in parts))))
    sums = np.column_stack([p.groupby("group")["f1"].sum().reindex(groups, fill_value=0.0)
                            for p in parts])
    sizes = np.column_stack([p.groupby("group")["f1"].size().reindex(groups, fill_value=0)
                             for p in parts])
    means = cluster_means(sums, sizes, bootstrap["n"], bootstrap["seed"])
    return [100 * means[:, i] for i in range(len(keys))]


def _count(items: pd.DataFrame, key: tuple) -> int:
    m, t, q = key
    return int(((items["model"] == m) & (items["training"] == t) & (items["questions"] == q)).sum())


def _has(items: pd.DataFrame | None, keys: list[tuple]) -> bool:
    if items is None or items.empty:
        return False
    have = set(zip(items["model"], items["training"], items["questions"]))
    return all(k in have for k in keys)


def qads_arm(df: pd.DataFrame) -> str:
    """The QADS mode a fine-tuning table's run added to its training questions (``trained_on``
    ``squad + one``: the QADS arm), or "" for a plain run (and tables written before the arm)."""
    if "trained_on" not in df or df.empty:
        return ""
    v = str(df["trained_on"].iloc[0])
    return v.split("+", 1)[1].strip() if "+" in v else ""


# ---------------------------------------------------------------------------------------------
# trivial baseline and findings

def no_answer_baseline(q: pd.DataFrame) -> pd.DataFrame:
    """Always answering "no answer", per question set, as the official metric scores it: EM = F1
    = the share of unanswerable questions overall, 0 on the answerable ones, 100 on the others
    (from the ``HasAns_n`` / ``NoAns_n`` counts of the score tables; none before they had them)."""
    cols = ["questions", "n", "exact", "f1", "HasAns_exact", "HasAns_f1", "NoAns_exact"]
    if q.empty or "NoAns_n" not in q:
        return pd.DataFrame(columns=cols)
    rows = []
    order = {"original": 0, "one": 1, "all": 2}
    for qs, g in sorted(q.dropna(subset=["NoAns_n"]).groupby("questions", sort=False),
                        key=lambda kv: order.get(kv[0], 9)):
        n, none = float(g["n"].iloc[0]), float(g["NoAns_n"].iloc[0])
        share = 100 * none / n if n else float("nan")
        rows.append({"questions": qs, "n": n, "exact": share, "f1": share, "HasAns_exact": 0.0,
                     "HasAns_f1": 0.0, "NoAns_exact": 100.0 if none else float("nan")})
    return pd.DataFrame(rows, columns=cols)


def findings(q: pd.DataFrame, base: pd.DataFrame, anchors, items: pd.DataFrame | None = None,
             bootstrap: dict | None = None) -> list[Finding]:
    """Synonyms lower the QA scores (original vs the QADS set, before fine-tuning on QADS), and
    fine-tuning on QADS recovers little of the drop (a recovered share below one half); the
    intervals from the per-question ``items`` (:func:`item_table`) where given."""
    a = lambda s: anchor(anchors, f"qads.t2.electra-large.{s}.accuracy")  # noqa: E731
    ids = [f"qads.t2.electra-large.{s}.accuracy" for s in ("squad2-dev", "qads-before-ft", "qads-after-ft")]
    drop_paper = (f"ELECTRA-large {points(a('squad2-dev'), 2)} → {points(a('qads-before-ft'), 2)} "
                  "(SQuAD 2.0 dev → QADS, Table 2)")
    rec_paper = (f"ELECTRA-large {points(a('qads-before-ft'), 2)} → {points(a('qads-after-ft'), 2)} "
                 "after fine-tuning on QADS (Table 2)")
    drop_claim, rec_claim = "synonyms lower QA scores (F1)", "fine-tuning on QADS recovers little"
    if q.empty:
        why = "no QA model was scored"
        return [Finding("QADS", drop_claim, drop_paper, verdict="not run", why=why, anchors=ids[:2]),
                Finding("QADS", rec_claim, rec_paper, verdict="not run", why=why, anchors=ids[1:])]
    b = base.set_index("questions")["f1"] if not base.empty else pd.Series(dtype=float)
    baseline = f"always no answer {points(b.get('original', float('nan')))}" if len(b) else "–"
    f1 = q.set_index(["model", "training", "questions"])["f1"]
    out = []
    for (model, training), g in q.groupby(["model", "training"], sort=False):
        if training.startswith("fine-tuned") or not (g["questions"] == "original").any():
            continue  # the fine-tuning folds score the QADS questions only
        qads = "all" if (g["questions"] == "all").any() else "one"
        orig, sub = f1.get((model, training, "original")), f1.get((model, training, qads))
        f = Finding("QADS", drop_claim, drop_paper, baseline=baseline, metric="F1",
                    system=f"{model}, original → {qads}, training {training}", anchors=ids[:2])
        if orig is None or sub is None:
            f.verdict, f.why = judge(missing=f"no scores on the original and `{qads}` questions")
        else:
            f.effect = orig - sub
            keys = [(model, training, "original"), (model, training, qads)]
            o_lo = float("nan")
            if bootstrap and _has(items, keys):
                r_orig, r_sub = resampled_f1(items, keys, bootstrap)
                f.ci_low, f.ci_high = interval(r_orig - r_sub, bootstrap["level"])
                o_lo = interval(r_orig, bootstrap["level"])[0]
                f.n = _count(items, keys[0])
            f.ours = f"{points(orig)} → {points(sub)}; " + effect_text(f.effect, f.ci_low, f.ci_high)
            low = b.get("original", float("nan"))
            score = o_lo if o_lo == o_lo else orig
            f.verdict, f.why = judge(f.effect, f.ci_low, f.ci_high, at_baseline=random_weights(g) or (
                f"F1 on the original questions {points(score)} ≤ always no answer {points(low)}"
                if at_baseline(score, low) else None))
        out.append(f)
    if not out:
        out.append(Finding("QADS", drop_claim, drop_paper, verdict="not run", anchors=ids[:2],
                           why="no QA model scored before fine-tuning on QADS"))
    tuned = q.loc[q["training"].str.startswith("fine-tuned"), "questions"]
    qads = "all" if (tuned == "all").any() else "one"
    arm = q.loc[q["training"].str.contains(ARM_TRAINING, regex=False), "training"]
    if not arm.empty:  # the QADS arm: its added mode is the set Table 2's third row scores
        qads = arm.iloc[0].split(ARM_TRAINING, 1)[1].split()[0]
    out.append(_recovery(q, f1, qads, baseline, rec_paper, rec_claim, ids[1:], items, bootstrap))
    return out


def _recovery(q, f1, qads, baseline, paper, claim, ids, items=None, bootstrap=None) -> Finding:
    f = Finding("QADS", claim, paper, baseline=baseline, metric="F1", anchors=ids)
    tuned = q[q["training"].str.startswith("fine-tuned")]
    if tuned.empty:
        f.verdict, f.why = judge(missing="fine-tuning on QADS is off (`qads.finetune.enabled`)")
        return f
    model, training = tuned["model"].iloc[0], tuned["training"].iloc[0]
    before = "none (before fine-tuning)"
    f.system = f"{model}, `{qads}` questions"
    arm = tuned[tuned["training"].str.contains(ARM_TRAINING, regex=False)]
    if not arm.empty:  # the QADS arm beside the plain folds: before = without the QADS questions
        model, training = arm["model"].iloc[0], arm["training"].iloc[0]
        before = PLAIN_TRAINING
        f.system = (f"{model}, `{qads}` questions, article folds without → with QADS-{qads} "
                    "training questions")
    orig_key = next((k for k in ((model, before, "original"),
                                 (model, "none (as configured)", "original")) if k in f1), None)
    orig = f1.get(orig_key) if orig_key else None
    keys = [orig_key, (model, before, qads), (model, training, qads)]
    vals = [orig, f1.get(keys[1]), f1.get(keys[2])]
    if any(v is None for v in vals):
        f.verdict, f.why = judge(missing="no scores before and after fine-tuning on the same questions")
        return f
    orig, pre, post = vals
    lost = orig - pre
    share = (post - pre) / lost if lost > 0 else float("nan")
    f.effect = 50 - 100 * share  # recovers little: under half of the drop
    if lost > 0 and bootstrap and _has(items, keys):
        r_orig, r_pre, r_post = resampled_f1(items, keys, bootstrap)
        r_lost = r_orig - r_pre
        with np.errstate(invalid="ignore", divide="ignore"):
            r_share = np.where(r_lost > 0, (r_post - r_pre) / np.where(r_lost > 0, r_lost, 1), np.nan)
        f.ci_low, f.ci_high = interval(50 - 100 * r_share, bootstrap["level"])
        f.n = _count(items, keys[0])
    f.ours = "; ".join(t for t in (
        f"{points(pre)} → {points(post)} of {points(orig)} on the original questions: "
        f"{points(100 * share)}% of the drop recovered", effect_text(f.effect, f.ci_low, f.ci_high))
        if t)
    f.verdict, f.why = judge(f.effect, f.ci_low, f.ci_high,
                             missing=None if lost > 0 else "no drop to recover",
                             at_baseline=random_weights(tuned))
    return f


def random_weights(df: pd.DataFrame) -> str | None:
    """Why a model's numbers cannot support a finding: its weights are random."""
    if "random_model" in df and is_random(df["random_model"]).any():
        return "random weights (`random_model = true`): the numbers only show that the pipeline runs"
    return None
