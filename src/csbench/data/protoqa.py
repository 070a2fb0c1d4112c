"""ProtoQA (iesl/protoqa-data): JSON-lines question files -> tables.

``dev.crowdsourced.jsonl`` -> ``dev_crowdsourced``, ``dev.scraped.jsonl`` -> ``dev_scraped``,
``test.questions.jsonl`` -> ``test_questions``, ``train.jsonl`` -> ``train`` and
``all_crowdsourced.questions.jsonl`` -> ``all_crowdsourced_questions`` (each only when configured).
Question-only files (test) give empty answer lists. Cluster answer strings are kept exactly as
released (the evaluator compares predictions against them verbatim).
The GPT-2 baseline's fine-tuning text (iesl/ProtoQA_GPT2 ``data/finetune_{train,dev}.txt``: one
``<completion prompt>\t<answer>.`` per line) -> ``finetune_train`` / ``finetune_dev``: one row per
line, with the text a fine-tuned model trains on (``prompt`` + ``completion``, :mod:`csbench.finetune`).
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..errors import InputError
from ..io import read_jsonl

FILES = {
    "dev_crowdsourced": "dev.crowdsourced.jsonl",
    "dev_scraped": "dev.scraped.jsonl",
    "test_questions": "test.questions.jsonl",
    "train": "train.jsonl",
    "all_crowdsourced_questions": "all_crowdsourced.questions.jsonl",
    "finetune_train": "gpt2/finetune_train.txt",
    "finetune_dev": "gpt2/finetune_dev.txt",
}
FINETUNE_TABLES = ("finetune_train", "finetune_dev")

COLUMNS = {
    "id": "original question id (metadata.id, e.g. r1q1)",
    "source": "where the question came from (metadata.source)",
    "question": "question as written (question.original)",
    "question_normalized": "lower-cased question (question.normalized), used by the evaluator",
    "cluster_ids": "answer-cluster ids (list; empty for question-only files)",
    "cluster_counts": "number of crowd answers in each cluster (list, parallel to cluster_ids)",
    "cluster_answers": "answer strings of each cluster (list of lists, parallel to cluster_ids)",
    "raw_answers": "distinct raw crowd answers (list)",
    "raw_counts": "how often each raw answer was given (list, parallel to raw_answers)",
    # the fine-tuning tables (finetune_train, finetune_dev) have id and these instead:
    "line": "finetune tables: line number in the file (the id is `<file>:<line>`)",
    "prompt": "finetune tables: the completion prompt (text before the tab), verbatim",
    "answer": "finetune tables: the answer after the tab, verbatim (with its final `.`)",
    "completion": "finetune tables: what a fine-tuned model learns to continue the prompt with: "
                  "a space and the answer (the sampler continues the prompt after its last word)",
}
FINETUNE_COLUMNS = ["id", "line", "prompt", "answer", "completion"]


def tables(files: list[str]) -> dict[str, list[str]]:
    return {t: [f] for t, f in FILES.items() if f in files}


def _str(path, line, value, what) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(path, f"{what} must be a non-empty string, got {value!r}", line)
    return value


def parse_record(path, line: int, rec: dict) -> dict:
    """One ProtoQA JSON record -> one table row (raises InputError naming file and line)."""
    meta, question = rec.get("metadata"), rec.get("question")
    if not isinstance(meta, dict) or "id" not in meta:
        raise InputError(path, "missing metadata.id", line)
    if not isinstance(question, dict):
        raise InputError(path, "missing 'question' object", line)
    qid = _str(path, line, meta["id"], "metadata.id")
    original = _str(path, line, question.get("original", question.get("normalized")),
                    "question.original")
    normalized = question.get("normalized") or original.lower()
    if not isinstance(normalized, str):
        raise InputError(path, f"question.normalized must be a string, got {normalized!r}", line)
    source = meta.get("source", "")
    if not isinstance(source, str):
        raise InputError(path, f"metadata.source must be a string, got {source!r}", line)
    answers = rec.get("answers") or {}
    if not isinstance(answers, dict):
        raise InputError(path, "'answers' must be an object", line)
    clusters = answers.get("clusters") or {}
    raw = answers.get("raw") or {}
    if not isinstance(clusters, dict) or not isinstance(raw, dict):
        raise InputError(path, "answers.clusters and answers.raw must be objects", line)
    cids, counts, members = [], [], []
    for cid, cl in clusters.items():
        if not isinstance(cl, dict) or not isinstance(cl.get("answers"), list):
            raise InputError(path, f"cluster {cid!r} lacks an 'answers' list", line)
        count = cl.get("count")
        # count 0 occurs in the released dev.scraped.jsonl (a cluster no survey answer fell in)
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise InputError(path, f"cluster {cid!r} has a bad count {count!r}", line)
        if not cl["answers"] or not all(isinstance(a, str) for a in cl["answers"]):
            raise InputError(path, f"cluster {cid!r} must list answer strings", line)
        cids.append(cid)                   # (JSON object keys are always strings)
        counts.append(count)
        members.append([a for a in cl["answers"]])
    for ans, n in raw.items():
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise InputError(path, f"raw answer {ans!r} has a bad count {n!r}", line)
    return {
        "id": qid, "source": source, "question": original,
        "question_normalized": normalized, "cluster_ids": cids, "cluster_counts": counts,
        "cluster_answers": members, "raw_answers": list(raw), "raw_counts": list(raw.values()),
    }


def read_finetune_text(path) -> pd.DataFrame:
    """One row per line of a ``<prompt>\t<answer>`` file; a line without exactly one tab, or
    with an empty prompt or answer, is an :class:`InputError` naming the line."""
    from ..io import open_text

    rows = []
    with open_text(path) as fh:
        for line, text in enumerate(fh, 1):
            text = text.rstrip("\r\n")
            parts = text.split("\t")
            if len(parts) != 2:
                raise InputError(path, f"expected <prompt><TAB><answer>, found {len(parts) - 1} "
                                 f"tab(s): {text[:80]!r}", line)
            prompt, answer = parts
            if not prompt.strip() or not answer.strip():
                raise InputError(path, f"empty prompt or answer: {text[:80]!r}", line)
            rows.append({"id": f"{Path(path).name}:{line}", "line": line, "prompt": prompt,
                         "answer": answer, "completion": " " + answer.strip()})
    if not rows:
        raise InputError(path, "no lines")
    return pd.DataFrame(rows, columns=FINETUNE_COLUMNS)


def normalise(table: str, paths: dict) -> pd.DataFrame:
    path = paths[FILES[table]]
    if table in FINETUNE_TABLES:
        return read_finetune_text(path)
    rows, seen = [], {}
    for line, rec in read_jsonl(path):
        row = parse_record(path, line, rec)
        if row["id"] in seen:
            raise InputError(path, f"duplicate question id {row['id']!r} (first on line "
                             f"{seen[row['id']]})", line)
        seen[row["id"]] = line
        rows.append(row)
    return pd.DataFrame(rows, columns=list(COLUMNS))
