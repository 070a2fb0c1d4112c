"""Com2Sense: ``{train,dev,test}.json`` (JSON arrays) plus ``pair_id_<split>.json`` (id -> the id of
its complementary pair) -> tables ``train``, ``dev``, ``test`` (test has no labels)."""
from __future__ import annotations

import pandas as pd

from ..errors import InputError
from ..io import read_json

SPLITS = ("train", "dev", "test")

COLUMNS = {
    "id": "original item id",
    "sent": "the statement",
    "label": "True/False plausibility label (bool; null in test)",
    "domain": "physical, social or time",
    "scenario": "causal or comparison",
    "numeracy": "statement needs numeracy (bool)",
    "pair_id": "id of the complementary statement (null when the pair file is skipped or lacks the id)",
}


def tables(files: list[str]) -> dict[str, list[str]]:
    out = {}
    for s in SPLITS:
        if f"{s}.json" in files:
            out[s] = [f"{s}.json"] + ([f"pair_id_{s}.json"] if f"pair_id_{s}.json" in files else [])
    return out


KNOWN_TYPOS = {"Flase": False, "Ture": True}


def _bool(path, value, field, where):
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    if str(value) in ("True", "False", "true", "false"):
        return str(value).lower() == "true"
    if str(value) in KNOWN_TYPOS:  # the released dev.json spells False "Flase" once
        return KNOWN_TYPOS[str(value)]
    raise InputError(path, f"item {where}: {field!r} must be True or False, got {value!r}")


def normalise(table: str, paths: dict) -> pd.DataFrame:
    path = paths[f"{table}.json"]
    items = read_json(path)
    if not isinstance(items, list):
        raise InputError(path, "expected a JSON array of items")
    pairs = {}
    pair_path = paths.get(f"pair_id_{table}.json")
    if pair_path is not None:
        pairs = read_json(pair_path)
        if not isinstance(pairs, dict):
            raise InputError(pair_path, "expected a JSON object id -> pair id")
    rows = []
    for i, rec in enumerate(items):
        if not isinstance(rec, dict) or "id" not in rec or "sent" not in rec:
            raise InputError(path, f"item {i} lacks 'id' or 'sent'")
        if table != "test" and "label" not in rec:
            raise InputError(path, f"item {i} ({rec['id']}) lacks 'label'")
        rows.append({
            "id": str(rec["id"]), "sent": rec["sent"],
            "label": _bool(path, rec.get("label"), "label", i),
            "domain": rec.get("domain"), "scenario": rec.get("scenario"),
            "numeracy": _bool(path, rec.get("numeracy"), "numeracy", i),
            "pair_id": pairs.get(str(rec["id"])),
        })
    return pd.DataFrame(rows, columns=list(COLUMNS))
