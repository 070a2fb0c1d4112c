"""The kinds of data set: their roles, and how one record becomes one row of the normalised table.

Every kind's table has fixed columns (:data:`KINDS` ``[k].columns``); ``id`` keeps the source's
id (the ``id`` role), or is the item's position in the file (``1``, ``2``, ...) when the set has
none. A bad value raises :class:`csbench.errors.InputError` naming the file and line (a Parquet
file: the row); nothing is coerced silently (a number where text is expected is an error).
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

from ..data.protoqa import COLUMNS as PROTOQA_ALL
from ..data.protoqa import FINETUNE_COLUMNS
from ..data.protoqa import parse_record as protoqa_record
from ..data.squad_v2 import COLUMNS as SQUAD_COLUMNS

# a ProtoQA question table's columns (the source's fine-tuning text tables have others)
PROTOQA_COLUMNS = [c for c in PROTOQA_ALL if c == "id" or c not in FINETUNE_COLUMNS]


@dataclass(frozen=True)
class Kind:
    name: str
    required: tuple[str, ...]        # roles every item has
    optional: tuple[str, ...]        # roles a set may have
    columns: tuple[str, ...]         # columns of the normalised table
    roles_doc: dict                  # role -> what it holds (docs/datasets.md)

    @property
    def roles(self) -> tuple[str, ...]:
        return self.required + self.optional


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or (
        isinstance(value, str) and value.strip() == "")


def text(where, value, role: str, required: bool = True) -> str | None:
    """A text value (None for an absent optional one)."""
    if _missing(value):
        if required:
            raise where.error(f"{role} is empty")
        return None
    if not isinstance(value, str):
        raise where.error(f"{role} must be text, got {type(value).__name__} {value!r}")
    return value


def item_id(where, value, position: int) -> str:
    """The source id (text or an integer, kept as its text), or the position when absent."""
    if value is None:
        return str(position)
    if isinstance(value, bool) or not isinstance(value, (str, int)) or _missing(value):
        raise where.error(f"id must be non-empty text or an integer, got {value!r}")
    return str(value)


def winograd_answer(where, value, option1: str, option2: str):
    """1 or 2 (the number, its text, or the option's text); None when the item has no label."""
    if _missing(value):
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value in (1, 2):
        return value
    if isinstance(value, str):
        v = value.strip()
        if v in ("1", "2"):
            return int(v)
        hits = [i for i, o in ((1, option1), (2, option2)) if v == o.strip()]
        if len(hits) == 1:
            return hits[0]
        if len(hits) == 2:
            raise where.error(f"answer {value!r} is the text of both options")
    raise where.error(f"answer must be 1, 2 or the text of option1/option2, got {value!r}")


YES = {"yes": "yes", "true": "yes", "1": "yes", "no": "no", "false": "no", "0": "no"}


def yesno_answer(where, value) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) and value in (0, 1):
        return "yes" if value else "no"
    if isinstance(value, str) and value.strip().lower() in YES:
        return YES[value.strip().lower()]
    raise where.error(f"answer must be yes/no, true/false or 1/0, got {value!r}")


def categories(where, value) -> list[str]:
    """A list of names, or one text with names separated by commas, semicolons or bars."""
    if _missing(value):
        return []
    if isinstance(value, str):
        parts = re.split(r"[,;|]", value)
    elif isinstance(value, (list, tuple)) or hasattr(value, "tolist"):
        parts = list(value.tolist() if hasattr(value, "tolist") else value)
        if not all(isinstance(p, str) for p in parts):
            raise where.error(f"categories must be names, got {value!r}")
    else:
        raise where.error(f"categories must be a list or a comma-separated text, got {value!r}")
    return sorted({p.strip().lower() for p in parts if p.strip()})


def _listish(where, value, role: str) -> list:
    """A list (JSON text in a CSV/TSV cell)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise where.error(f"{role} must be a JSON list, got {value!r} ({exc.msg})") from None
    if hasattr(value, "tolist"):
        value = value.tolist()
    if not isinstance(value, list):
        raise where.error(f"{role} must be a list, got {value!r}")
    return value


def winograd_row(where, get, position):
    sentence = text(where, get("sentence"), "sentence")
    o1, o2 = text(where, get("option1"), "option1"), text(where, get("option2"), "option2")
    for key, value in (("option1", o1), ("option2", o2)):
        if not value.strip():
            raise where.error(f"{key} is only whitespace ({value!r}): both options must be text")
    para = text(where, get("paraphrase"), "paraphrase", required=False)
    for role, s in (("sentence", sentence), ("paraphrase", para)):
        if s is not None and s.count("_") != 1:
            raise where.error(f"{role} must contain exactly one '_' (found {s.count('_')})")
    return {"id": item_id(where, get("id"), position), "sentence": sentence, "option1": o1,
            "option2": o2, "answer": winograd_answer(where, get("answer"), o1, o2),
            "paraphrase": para, "categories": categories(where, get("categories"))}


def yesno_row(where, get, position):
    split = text(where, get("split"), "split", required=False)
    if split is not None and split.strip().lower() not in ("train", "dev", "test"):
        raise where.error(f"split must be train, dev or test, got {split!r}")
    topic = text(where, get("topic"), "topic", required=False)
    return {"id": item_id(where, get("id"), position), "question": text(where, get("question"), "question"),
            "answer": yesno_answer(where, get("answer")),
            "topic": topic.strip() if topic is not None else None,
            "split": split.strip().lower() if split is not None else "test"}


def protoqa_row(where, get, position):
    question = text(where, get("question"), "question")
    answers = _listish(where, get("answers"), "answers")
    clusters = []
    for c in answers:
        members = [c] if isinstance(c, str) else c
        if not isinstance(members, list) or not members or not all(
                isinstance(a, str) and a.strip() for a in members):
            raise where.error(f"each answer cluster must be a non-empty text or list of texts, got {c!r}")
        clusters.append(members)
    if not clusters:
        raise where.error("answers has no cluster")
    counts = _listish(where, get("counts"), "counts")
    if len(counts) != len(clusters) or not all(
            isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in counts):
        raise where.error(f"counts must be {len(clusters)} non-negative integers (one per answer "
                          f"cluster), got {counts!r}")
    return {"id": item_id(where, get("id"), position), "source": "", "question": question,
            "question_normalized": question.lower(),
            "cluster_ids": [str(i) for i in range(1, len(clusters) + 1)], "cluster_counts": counts,
            "cluster_answers": clusters, "raw_answers": [], "raw_counts": []}


def protoqa_native(where, rec):
    """A record in ProtoQA's own jsonl format (``metadata``, ``question``, ``answers``)."""
    return protoqa_record(where.path, where.line, rec)


def text_row(where, get, position):
    return {"id": item_id(where, get("id"), position), "text": text(where, get("text"), "text")}


KINDS = {
    "winograd": Kind("winograd", ("sentence", "option1", "option2", "answer"),
                     ("id", "paraphrase", "categories"),
                     ("id", "sentence", "option1", "option2", "answer", "paraphrase", "categories"),
                     {"sentence": "the sentence with one `_` blank",
                      "option1": "first candidate for the blank",
                      "option2": "second candidate for the blank",
                      "answer": "1 or 2, or the text of the right option (empty: unlabelled item)",
                      "id": "item id (default: position in the file, from 1)",
                      "paraphrase": "a paraphrase of the sentence, with the same one `_` blank",
                      "categories": "common-sense categories: a list, or names separated by , ; or |"}),
    "yesno": Kind("yesno", ("question", "answer"), ("topic", "id", "split"),
                  ("id", "question", "answer", "topic", "split"),
                  {"question": "the yes/no question or assertion",
                   "answer": "yes/no, true/false or 1/0 (any case), read as yes or no",
                   "topic": "the topic (20Q's subject) the question is about",
                   "id": "item id (default: position in the file, from 1)",
                   "split": "train, dev or test (default test); train rows are the few-shot pool"}),
    "protoqa": Kind("protoqa", ("question", "answers", "counts"), ("id",), tuple(PROTOQA_COLUMNS),
                    {"question": "the question",
                     "answers": "answer clusters: a list of clusters, each a list of answer texts "
                                "(JSON text in a CSV/TSV cell)",
                     "counts": "crowd answers per cluster: a list of integers, one per cluster",
                     "id": "question id (default: position in the file, from 1)"}),
    "squad": Kind("squad", (), (), tuple(SQUAD_COLUMNS), {}),
    "text": Kind("text", ("text",), ("id",), ("id", "text"),
                 {"text": "the text", "id": "item id (default: position in the file, from 1)"}),
}

ROWS = {"winograd": winograd_row, "yesno": yesno_row, "protoqa": protoqa_row, "text": text_row}
