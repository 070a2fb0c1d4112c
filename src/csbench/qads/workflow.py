"""Glue between the Snakemake rules and the QADS library (kept out of the scripts)."""
from __future__ import annotations

import pandas as pd

from ..data.squad_v2 import to_squad_json
from . import wsd as _wsd

def select_questions(df: pd.DataFrame, cfg: dict) -> pd.DataFrame:
    """Apply ``qads.questions`` (id filter, seeded sample) keeping file order."""
    if cfg["ids"]:
        df = df[df["id"].isin(set(cfg["ids"]))]
    if cfg["limit"] and cfg["limit"] < len(df):
        df = df.sample(n=cfg["limit"], random_state=cfg["seed"]).sort_index()
    return df.reset_index(drop=True)


def disambiguator(method: str, lesk: dict | None, encoder: str | None, cache_dir: str | None):
    """A WSD method; ``lesk`` (``qads.wsd.enhanced_lesk``) and ``encoder`` are read by the
    enhanced Lesk method only."""
    if method != "enhanced_lesk":
        return _wsd.Disambiguator(method)
    from ..embed import Embedder

    return _wsd.enhanced_lesk(lesk, Embedder(encoder, cache_dir=cache_dir))


def squad_json(df: pd.DataFrame) -> dict:
    return to_squad_json(df)


def original_subset(questions: pd.DataFrame, generated: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Original questions that have at least one rewritten version (the comparison set)."""
    have = set()
    for g in generated.values():
        have.update(i.rsplit("-", 1)[0] for i in g["id"])
    return questions[questions["id"].isin(have)].reset_index(drop=True)


def score_row(model: str, questions: str, dataset: list, preds: dict, na: dict | None) -> dict:
    from .metric import evaluate

    r = evaluate(dataset, preds, na)
    return {"model": model, "questions": questions, "exact": r["exact"], "f1": r["f1"],
            "HasAns_exact": r.get("HasAns_exact"), "HasAns_f1": r.get("HasAns_f1"),
            "NoAns_exact": r.get("NoAns_exact"), "n": r["total"],
            "HasAns_n": r.get("HasAns_total", 0), "NoAns_n": r.get("NoAns_total", 0),
            "best_exact": r.get("best_exact"), "best_f1": r.get("best_f1")}


def finetune_tag(ft: dict) -> str:
    """File tag of a fine-tuning run: the QADS mode for the paper's set-up (train and score one
    mode, grouped by question), else ``<train_on>-by-<group_by>``."""
    if not ft["train_on"] and not ft["score_on"] and ft["group_by"] == "question":
        return ft["questions"]
    return f"{ft['train_on'] or ft['questions']}-by-{ft['group_by']}"


def finetune_sets(ft: dict) -> list[str]:
    """The question sets a fine-tuning run reads: trained on, then scored (no repeats)."""
    train_on = ft["train_on"] or ft["questions"]
    return list(dict.fromkeys([train_on, *(ft["score_on"] or [ft["questions"]])]))


def finetune_inputs(set_names: list[str], set_paths: list[str], squad_tables: list[str],
                    select: dict) -> dict[str, list]:
    """Set name -> SQuAD ``data`` list for a fine-tuning job: the QADS JSON files by name, and
    ``squad`` (every selected SQuAD 2.0 question) from the normalised table."""
    from ..io import read_json

    sets = {n: read_json(p)["data"] for n, p in zip(set_names, set_paths)}
    if squad_tables:  # every question of the table (the QADS sample limit does not apply)
        every = {**select, "limit": None}
        sets["squad"] = squad_json(select_questions(pd.read_parquet(squad_tables[0]), every))["data"]
    return sets


def qa_models(qa: dict, configured: dict) -> list[str]:
    """Names under ``models.qa`` scored as they are (``qads.qa.models``; null = all)."""
    names = qa.get("models")
    if names is None:
        return list(configured)
    unknown = [n for n in names if n not in configured]
    if unknown:
        raise ValueError(f"qads.qa.models names {unknown}, not under models.qa ({sorted(configured)})")
    return list(names)
