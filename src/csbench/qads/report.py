"""QADS's part of RESULTS.md: WSD F1 per method, extractive QA (official SQuAD 2.0 metric) on the
original and synonym-substituted questions before and after fine-tuning, per topic domain, and the
articles' domains, from the tables ``workflow/rules/qads.smk`` registers."""
from __future__ import annotations

import pandas as pd

from ..sections import (Section, markdown_table, num, pct, random_note, read_table, select,
                        write_summary)

TITLE = "QADS: WSD and QA on synonym-substituted SQuAD 2.0 questions"


def inputs(targets: list[str]) -> dict[str, list[str]]:
    return {"wsd": select(targets, "qads/wsd_eval.tsv"), "qa": select(targets, "qads/qa_scores.tsv"),
            "finetune": [p for p in select(targets, ".tsv") if "/qads/finetune/" in p
                         and not p.endswith(".by_domain.tsv")],
            "qa_domains": select(targets, ".by_domain.tsv"),
            "domains": select(targets, "qads/domains.tsv")}


def planned(ins: dict[str, list[str]]) -> dict[str, str]:
    out = {}
    if ins.get("wsd"):
        out["qads_wsd"] = "qads_wsd.tsv"
    if ins.get("qa") or ins.get("finetune"):
        out["qads_qa"] = "qads_qa.tsv"
    if ins.get("qa_domains"):
        out["qads_qa_domains"] = "qads_qa_by_domain.tsv"
    return out


def section(ins: dict[str, list[str]], outputs: dict[str, str], links: dict[str, str],
            anchors: pd.DataFrame) -> Section:
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
        sec.tables["qads_qa"] = q
        write_summary(q, outputs["qads_qa"])
        body.append("### Extractive QA\n\n" + (qads_qa_markdown(q) if not q.empty else
                    "No QA model was scored (`qads.qa.models` is empty and fine-tuning is off)."))
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
        arm = qads_arm(df)
        if arm:  # the QADS arm (Table 2's third row): its fine-tuned rows say what was added
            df.loc[df["split"] == "finetuned", "training"] = \
                f"fine-tuned (article folds) + QADS-{arm} training questions"
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
        "n": df["n"].map(lambda v: num(v, 0)), "EM": df["exact"].map(num), "F1": df["f1"].map(num),
        "HasAns EM": df["HasAns_exact"].map(num), "HasAns F1": df["HasAns_f1"].map(num),
        "NoAns EM": df["NoAns_exact"].map(num),
        "F1 − original": df["f1_minus_original"].map(lambda v: num(v, 1)),
        "HasAns F1 − original": df["hasans_f1_minus_original"].map(lambda v: num(v, 1))})
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



def qads_arm(df: pd.DataFrame) -> str:
    """The QADS mode a fine-tuning table's run added to its training questions (``trained_on``
    ``squad + one``: the QADS arm), or "" for a plain run (and tables written before the arm)."""
    if "trained_on" not in df or df.empty:
        return ""
    v = str(df["trained_on"].iloc[0])
    return v.split("+", 1)[1].strip() if "+" in v else ""
