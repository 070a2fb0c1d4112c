"""Unified WSD evaluation framework (Raganato et al. 2017): one table per data set.

Files: ``Evaluation_Datasets/<name>/<name>.data.xml`` (``<corpus><text><sentence><wf|instance
lemma pos>``, universal POS tags) and ``<name>.gold.key.txt`` (``<instance_id> <sensekey>...``,
WordNet 3.0 sense keys). Each row is one ``<instance>`` with its sentence and gold keys.
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd

from ..errors import InputError
from ..io import line_of, open_text

DATASETS = ("ALL", "senseval2", "senseval3", "semeval2007", "semeval2013", "semeval2015")

COLUMNS = {
    "id": "instance id as in the data set (ALL ids carry a data-set prefix)",
    "dataset": "data set name (the table name)",
    "sentence_id": "id of the sentence holding the instance",
    "position": "token index of the instance in the sentence",
    "word": "surface form",
    "lemma": "lemma given by the framework",
    "pos": "universal POS tag (NOUN, VERB, ADJ, ADV)",
    "tokens": "all tokens of the sentence",
    "gold": "gold WordNet 3.0 sense keys",
}


def files_of(name: str) -> tuple[str, str]:
    base = f"Evaluation_Datasets/{name}/{name}"
    return f"{base}.data.xml", f"{base}.gold.key.txt"


def tables(files: list[str]) -> dict[str, list[str]]:
    out = {}
    for name in DATASETS:
        pair = files_of(name)
        if all(f in files for f in pair):
            out[name] = list(pair)
    return out


# WordNet sense key: lemma%ss_type:lex_filenum:lex_id:head_word:head_id
SENSE_KEY = re.compile(r"^[^%\s]+%[1-5]:\d{2}:\d{2}:[^:\s]*:(\d{2})?$")


def read_keys(path: str | Path) -> dict[str, list[str]]:
    keys: dict[str, list[str]] = {}
    with open_text(path) as fh:
        for lineno, line in enumerate(fh, start=1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) < 2:
                raise InputError(path, "expected '<instance_id> <sensekey> [...]'", lineno)
            bad = [k for k in parts[1:] if not SENSE_KEY.match(k)]
            if bad:
                raise InputError(path, f"not a WordNet sense key: {bad[0]!r} (a truncated line?)",
                                 lineno)
            if parts[0] in keys:
                raise InputError(path, f"duplicate instance id {parts[0]}", lineno)
            keys[parts[0]] = parts[1:]
    if not keys:
        raise InputError(path, "file is empty")
    return keys


def read_instances(path: str | Path, name: str) -> list[dict]:
    rows, seen = [], set()
    try:
        events = ET.iterparse(str(path), events=("end",))
        for _, el in events:
            if el.tag != "sentence":
                continue
            toks = [t.text or "" for t in el]
            for i, t in enumerate(el):
                if t.tag == "instance":
                    for k in ("id", "lemma", "pos"):
                        if k not in t.attrib:
                            raise InputError(path, f"instance without {k!r} in sentence {el.get('id')}",
                                             line_of(path, f'id="{el.get("id")}"'))
                    if t.get("id") in seen:
                        raise InputError(path, f"duplicate instance id {t.get('id')}",
                                         line_of(path, f'id="{t.get("id")}"', nth=2))
                    seen.add(t.get("id"))
                    rows.append({"id": t.get("id"), "dataset": name, "sentence_id": el.get("id"),
                                 "position": i, "word": t.text or "", "lemma": t.get("lemma"),
                                 "pos": t.get("pos"), "tokens": toks})
            el.clear()
    except ET.ParseError as exc:
        raise InputError(path, f"invalid XML ({exc.msg})", exc.position[0]) from None
    if not rows:
        raise InputError(path, "no <instance> elements")
    return rows


def normalise(table: str, paths: dict) -> pd.DataFrame:
    xml_name, key_name = files_of(table)
    rows = read_instances(paths[xml_name], table)
    keys = read_keys(paths[key_name])
    for r in rows:
        if r["id"] not in keys:
            raise InputError(paths[key_name], f"no gold key for instance {r['id']}")
        r["gold"] = keys[r["id"]]
    return pd.DataFrame(rows, columns=list(COLUMNS))
