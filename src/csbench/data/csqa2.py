"""CommonsenseQA 2.0: ``CSQA2_{train,dev}.json.gz`` and ``CSQA2_test_no_answers.json.gz`` (JSON Lines
despite the name) -> tables ``train``, ``dev``, ``test`` (the test table has no answers)."""
from __future__ import annotations

import pandas as pd

from ..errors import InputError
from ..io import expect_type, read_jsonl

FILES = {"train": "CSQA2_train.json.gz", "dev": "CSQA2_dev.json.gz",
         "test": "CSQA2_test_no_answers.json.gz"}

COLUMNS = {
    "id": "original item id",
    "question": "the yes/no assertion or question",
    "answer": "gold answer yes/no (null in the test table)",
    "confidence": "annotator confidence recorded by the source",
    "topic_prompt": "the topic word the author was prompted with",
    "relational_prompt": "the relational prompt the author was given",
}


def tables(files: list[str]) -> dict[str, list[str]]:
    return {t: [f] for t, f in FILES.items() if f in files}


def normalise(table: str, paths: dict) -> pd.DataFrame:
    path = paths[FILES[table]]
    rows, seen = [], {}
    for line, rec in read_jsonl(path, ("id", "question")):
        qid = expect_type(path, rec["id"], str, "field 'id'", line)
        if qid in seen:
            raise InputError(path, f"duplicate id {qid!r} (first on line {seen[qid]})", line)
        seen[qid] = line
        expect_type(path, rec.get("confidence"), (float, int, type(None)), "field 'confidence'", line)
        for k in ("topic_prompt", "relational_prompt"):
            expect_type(path, rec.get(k), (str, type(None)), f"field {k!r}", line)
        answer = rec.get("answer")
        if table != "test" and answer not in ("yes", "no"):
            raise InputError(path, f"'answer' must be yes or no, got {answer!r}", line)
        if not isinstance(rec["question"], str) or not rec["question"].strip():
            raise InputError(path, "empty 'question'", line)
        rows.append({
            "id": qid, "question": rec["question"], "answer": answer,
            "confidence": rec.get("confidence"), "topic_prompt": rec.get("topic_prompt"),
            "relational_prompt": rec.get("relational_prompt"),
        })
    return pd.DataFrame(rows, columns=list(COLUMNS))
