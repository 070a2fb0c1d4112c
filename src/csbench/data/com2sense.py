"""Com2Sense: ``{train,dev,test}.json`` (JSON arrays) plus ``pair_id_<split>.json`` (id -> the id of
its complementary pair) -> tables ``train``, ``dev``, ``test`` (test has no labels)."""
from __future__ import annotations

import json

import pandas as pd

from ..errors import InputError
from ..io import expect_type, line_of, read_json, read_json_array

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


def _bool(path, value, field, where, line=None):
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value in ("True", "False", "true", "false"):
        return value.lower() == "true"
    if isinstance(value, str) and value in KNOWN_TYPOS:  # the released dev.json spells False "Flase" once
        return KNOWN_TYPOS[value]
    raise InputError(path, f"item {where}: {field!r} must be True or False, got {value!r}", line)


def normalise(table: str, paths: dict) -> pd.DataFrame:
    path = paths[f"{table}.json"]
    items = read_json_array(path)            # [(line, item)]: bad items are named with their line
    pairs = {}
    pair_path = paths.get(f"pair_id_{table}.json")
    if pair_path is not None:
        pairs = read_json(pair_path)
        if not isinstance(pairs, dict):
            raise InputError(pair_path, "expected a JSON object id -> pair id")
    rows, seen = [], {}
    for i, (line, rec) in enumerate(items):
        if not isinstance(rec, dict) or "id" not in rec or "sent" not in rec:
            raise InputError(path, f"item {i} lacks 'id' or 'sent'", line)
        if table != "test" and "label" not in rec:
            raise InputError(path, f"item {i} ({rec['id']}) lacks 'label'", line)
        qid = expect_type(path, rec["id"], str, f"item {i}: 'id'", line)
        if qid in seen:
            raise InputError(path, f"item {i}: duplicate id {qid!r} (first on line {seen[qid]})",
                             line)
        seen[qid] = line
        expect_type(path, rec["sent"], str, f"item {i}: 'sent'", line)
        for k in ("domain", "scenario"):
            expect_type(path, rec.get(k), (str, type(None)), f"item {i}: {k!r}", line)
        pair = pairs.get(qid)
        if pair is not None and not isinstance(pair, str):
            raise InputError(pair_path, f"pair id of {qid!r} must be a string, got {pair!r}",
                             line_of(pair_path, json.dumps(qid)))
        rows.append({
            "id": qid, "sent": rec["sent"],
            "label": _bool(path, rec.get("label"), "label", i, line),
            "domain": rec.get("domain"), "scenario": rec.get("scenario"),
            "numeracy": _bool(path, rec.get("numeracy"), "numeracy", i, line),
            "pair_id": pair,
        })
    return pd.DataFrame(rows, columns=list(COLUMNS))
