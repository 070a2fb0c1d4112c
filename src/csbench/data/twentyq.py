"""AllenAI Twenty Questions (v1.0): ``twentyquestions-{train,dev,test}.jsonl`` -> tables of the same name.

Each line is one crowd-sourced question about a subject with its quality annotations
(``subject, question, answer, quality_labels, score, high_quality, labels, is_bad, true_votes,
majority, subject_split_index, question_split_index``). The source has no item id: ``id`` is
``<split>-<line number>``.
"""
from __future__ import annotations

import pandas as pd

from ..errors import InputError
from ..io import expect_type, read_jsonl

SPLITS = ("train", "dev", "test")
REQUIRED = ("subject", "question", "score", "majority")

COLUMNS = {
    "id": "`<split>-<line>` (the source has no id)",
    "split": "original split (train, dev, test)",
    "subject": "the topic being guessed (WordNet lemma; multi-word subjects keep their spaces)",
    "question": "the yes/no question, referring to the topic as 'it'",
    "answer": "the original answer of the question asker (bool)",
    "score": "quality score: number of annotators (0-3) who judged the question good",
    "high_quality": "source flag: score is 3",
    "majority": "majority yes/no label of the annotators (bool): the gold label",
    "true_votes": "annotators (of 3) who answered yes",
    "labels": "annotators' graded answers (always, usually, sometimes, rarely, never)",
}


def file_name(split: str) -> str:
    return f"twentyquestions-{split}.jsonl"


def tables(files: list[str]) -> dict[str, list[str]]:
    return {s: [file_name(s)] for s in SPLITS if file_name(s) in files}


def _bool(path, value, field, line):
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise InputError(path, f"field {field!r} must be a boolean, got {value!r}", line)


def normalise(table: str, paths: dict) -> pd.DataFrame:
    path = paths[file_name(table)]
    rows = []
    for line, rec in read_jsonl(path, REQUIRED):
        subject, question = rec["subject"], rec["question"]
        if not isinstance(subject, str) or not subject.strip():
            raise InputError(path, "empty or non-string 'subject'", line)
        if not isinstance(question, str) or not question.strip():
            raise InputError(path, "empty or non-string 'question'", line)
        score = expect_type(path, rec["score"], int, "field 'score'", line)
        labels = expect_type(path, rec.get("labels") or [], list, "field 'labels'", line)
        for x in labels:
            expect_type(path, x, str, "each of 'labels'", line)
        true_votes = expect_type(path, rec.get("true_votes") or 0, int, "field 'true_votes'", line)
        high = rec.get("high_quality", score == 3)
        expect_type(path, high, bool, "field 'high_quality'", line)
        rows.append({
            "id": f"{table}-{line}",
            "split": table,
            "subject": subject.strip(),
            "question": question.strip(),
            "answer": _bool(path, rec["answer"], "answer", line) if rec.get("answer") is not None else None,
            "score": score,
            "high_quality": high,
            "majority": _bool(path, rec["majority"], "majority", line),
            "true_votes": true_votes,
            "labels": labels,
        })
    return pd.DataFrame(rows, columns=list(COLUMNS))
