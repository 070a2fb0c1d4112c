"""Glue between the Snakemake rules and the QADS library (kept out of the scripts)."""
from __future__ import annotations

import pandas as pd

from ..data.squad_v2 import to_squad_json
from . import wsd as _wsd

def check_dataset(config: dict) -> dict[str, dict]:
    """The data sets ``qads.questions.table`` names (one name or a list), in order: name ->
    entry, checked at parse time (each a ``squad`` entry of ``datasets``, none twice). The first
    is rewritten, verified, fine-tuned on and split by domain at ``results/qads/``; each other is
    rewritten and answered at ``results/qads/sets/<name>/`` (:func:`set_dir`)."""
    from ..datasets import list_of_kind

    return list_of_kind(config, config["qads"]["questions"]["table"], ("squad",),
                        "qads.questions.table")


# no selection: the further sets of qads.questions.table are read whole (their own
# datasets.<name>.settings sample them); qads.questions' limit, ids and seed select the first's
ALL_QUESTIONS = {"limit": None, "ids": [], "seed": 0}


def set_dir(names: list[str], name: str) -> str:
    """The directory prefix of set ``name``'s rewriting and QA outputs under ``results/qads/``:
    "" for the first set of ``qads.questions.table``, ``sets/<name>/`` for the others."""
    return "" if name == names[0] else f"sets/{name}/"


def read_questions(path, dataset: dict) -> pd.DataFrame:
    """The SQuAD 2.0 table (one row per question) of a ``squad`` data set's file ``path``, read as
    ``dataset`` (its registry kind, columns and settings) says."""
    from ..datasets import read_entry

    return read_entry(dataset, path)


def select_questions(df: pd.DataFrame, cfg: dict) -> pd.DataFrame:
    """Apply ``qads.questions`` (id filter, seeded sample) keeping file order."""
    if cfg["ids"]:
        df = df[df["id"].isin(set(cfg["ids"]))]
    if cfg["limit"] and cfg["limit"] < len(df):
        df = df.sample(n=cfg["limit"], random_state=cfg["seed"]).sort_index()
    return df.reset_index(drop=True)


def disambiguator(method: str, lesk: dict | None, embedder):
    """A WSD method; ``lesk`` (``qads.wsd.enhanced_lesk``) and ``embedder`` (the script's
    :class:`csbench.embed.Embedder` of the rule's ``encoder``) are read by the enhanced Lesk
    method only."""
    if method != "enhanced_lesk":
        return _wsd.Disambiguator(method)
    return _wsd.enhanced_lesk(lesk, embedder)


def squad_json(df: pd.DataFrame) -> dict:
    return to_squad_json(df)


def original_subset(questions: pd.DataFrame, generated: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Original questions that have at least one rewritten version (the comparison set)."""
    have = set()
    for g in generated.values():
        have.update(i.rsplit("-", 1)[0] for i in g["id"])
    return questions[questions["id"].isin(have)].reset_index(drop=True)


# the per-question score tables (qa_items.tsv; the fine-tuning's <model>.<tag>.items.tsv adds
# trained_on and split after model): exact 0/1 and F1 0-1 after the no-answer threshold
ITEM_COLUMNS = ["model", "questions", "id", "has_answer", "exact", "f1"]


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
    """The question sets a fine-tuning run reads: trained on, then scored, then the QADS arm's
    added set (``add_rewritten``) where it is set (no repeats)."""
    train_on = ft["train_on"] or ft["questions"]
    added = [ft["add_rewritten"]] if ft.get("add_rewritten") else []
    return list(dict.fromkeys([train_on, *(ft["score_on"] or [ft["questions"]]), *added]))


def finetune_arms(ft: dict) -> dict[str, dict]:
    """File tag -> the settings of each fine-tuning run: the plain one (``finetune_tag``, no
    ``add_rewritten``) and, with ``add_rewritten: <mode>``, the QADS arm (``<tag>+<mode>``: the
    same folds, the rewritten questions of the training groups added); ``enabled`` left out."""
    add = ft.get("add_rewritten")
    if add and add == (ft["train_on"] or ft["questions"]):
        raise ValueError(f"qads.finetune.add_rewritten: {add!r} is the set the plain run trains on "
                         "already (train_on); the QADS arm adds rewritten questions to another set, "
                         "e.g. train_on: squad")
    plain = {k: v for k, v in ft.items() if k not in ("enabled", "add_rewritten")}
    arms = {finetune_tag(ft): plain}
    if ft.get("add_rewritten"):
        arms[f"{finetune_tag(ft)}+{ft['add_rewritten']}"] = {**plain,
                                                             "add_rewritten": ft["add_rewritten"]}
    return arms


def trained_on(ft: dict) -> str:
    """What a run trained on, as RESULTS.md shows it: ``squad`` or ``squad + one`` (the QADS arm)."""
    base = ft.get("train_on") or ft["questions"]
    return f"{base} + {ft['add_rewritten']}" if ft.get("add_rewritten") else base


def finetune_inputs(set_names: list[str], set_paths: list[str], squad_tables: list[str],
                    select: dict, dataset: dict) -> dict[str, list]:
    """Set name -> SQuAD ``data`` list for a fine-tuning job: the QADS JSON files by name, and
    ``squad`` (every selected question of the ``squad`` data set, read as ``dataset`` says)."""
    from ..io import read_json

    sets = {n: read_json(p)["data"] for n, p in zip(set_names, set_paths)}
    if squad_tables:  # every question of the table (the QADS sample limit does not apply)
        every = {**select, "limit": None}
        table = read_questions(squad_tables[0], dataset)
        sets["squad"] = squad_json(select_questions(table, every))["data"]
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
