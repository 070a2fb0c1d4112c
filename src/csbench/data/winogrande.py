"""WinoGrande v1.1: ``<split>.jsonl`` (qID, sentence, option1, option2[, answer]) plus the optional
``<split>-labels.lst`` (one label 1/2 per line, in file order) -> one table per split
(``dev``, ``test``, ``train_xs`` ... ``train_xl``). ``test`` has no public labels."""
from __future__ import annotations

import pandas as pd

from ..errors import InputError
from ..io import expect_type, open_text, read_jsonl

SPLITS = ("dev", "test", "train_xs", "train_s", "train_m", "train_l", "train_xl", "train_debiased")

COLUMNS = {
    "id": "original item id (qID)",
    "sentence": "sentence with one `_` blank",
    "option1": "first candidate for the blank",
    "option2": "second candidate for the blank",
    "answer": "correct option number 1 or 2 (nullable Int8; null when the split has no labels)",
}


def tables(files: list[str]) -> dict[str, list[str]]:
    out = {}
    for s in SPLITS:
        if f"{s}.jsonl" in files:
            out[s] = [f"{s}.jsonl"] + ([f"{s}-labels.lst"] if f"{s}-labels.lst" in files else [])
    return out


def check_options(path, option1: str, option2: str, line: int | None) -> None:
    """The two candidates for the blank must be text: an empty or whitespace-only option would be
    scored as the bare sentence and counted like any other item. Shared by every table in this
    fill-in-the-blank form (WinoGrande, WinoWhat, WSC)."""
    for key, value in (("option1", option1), ("option2", option2)):
        if not value.strip():
            raise InputError(path, f"{key} is {'empty' if not value else 'only whitespace'} "
                             f"({value!r}): both options must be text", line)


def _label(path, value, line) -> int | None:
    if value is None or str(value).strip() == "":
        return None
    v = str(value).strip()
    if v not in ("1", "2"):
        raise InputError(path, f"answer must be 1 or 2, got {value!r}", line)
    return int(v)


def read_labels(path) -> list[tuple[int, int]]:
    """``[(line number, label)]`` of a ``-labels.lst`` file (blank lines are errors)."""
    out = []
    with open_text(path) as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip() and not out:
                raise InputError(path, "blank line", lineno)
            if not line.strip():
                continue
            out.append((lineno, _label(path, line, lineno)))
    if not out:
        raise InputError(path, "file is empty")
    return out


def normalise(table: str, paths: dict) -> pd.DataFrame:
    path = paths[f"{table}.jsonl"]
    rows, seen = [], {}
    for lineno, rec in read_jsonl(path, required=("qID", "sentence", "option1", "option2")):
        for k in ("qID", "sentence", "option1", "option2"):
            expect_type(path, rec[k], str, f"field {k!r}", lineno)
        expect_type(path, rec.get("answer"), (str, int, type(None)), "field 'answer'", lineno)
        check_options(path, rec["option1"], rec["option2"], lineno)
        if rec["sentence"].count("_") != 1:
            raise InputError(path, f"sentence must contain exactly one '_' "
                             f"(found {rec['sentence'].count('_')})", lineno)
        if rec["qID"] in seen:
            raise InputError(path, f"duplicate qID {rec['qID']} (first on line {seen[rec['qID']]})",
                             lineno)
        seen[rec["qID"]] = lineno
        rows.append({"id": rec["qID"], "sentence": rec["sentence"],
                     "option1": rec["option1"], "option2": rec["option2"],
                     "answer": _label(path, rec.get("answer"), lineno), "_line": lineno})
    lab_path = paths.get(f"{table}-labels.lst")
    if lab_path is not None:
        labels = read_labels(lab_path)
        if len(labels) != len(rows):
            raise InputError(lab_path, f"{len(labels)} labels for {len(rows)} items in {path}")
        for row, (lineno, lab) in zip(rows, labels):
            if row["answer"] is not None and row["answer"] != lab:
                raise InputError(lab_path, f"label {lab} disagrees with answer {row['answer']} "
                                 f"of {row['id']} ({path}:{row['_line']})", lineno)
            row["answer"] = lab
    df = pd.DataFrame(rows).drop(columns="_line")
    df["answer"] = df["answer"].astype("Int8")
    return df
