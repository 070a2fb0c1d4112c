"""SQuAD 2.0 (``dev-v2.0.json``, ``train-v2.0.json``): one row per question.

The official file is ``{"version", "data": [{"title", "paragraphs": [{"context", "qas": [...]}]}]}``;
each question is ``{"question", "id", "answers": [{"text", "answer_start"}], "is_impossible"}`` and
unanswerable ones may carry ``plausible_answers``. The table keeps article and paragraph indices so
that the original nesting (and the file itself) can be rebuilt by :func:`to_squad_json`.
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ..errors import InputError
from ..io import expect_type, line_of, read_json

FILES = {"dev": "dev-v2.0.json", "train": "train-v2.0.json"}

COLUMNS = {
    "id": "SQuAD question id",
    "article": "index of the article in the file",
    "paragraph": "index of the paragraph within the article",
    "title": "article title",
    "context": "paragraph text",
    "question": "question text",
    "answers": "list of {text, answer_start} gold answers (empty when unanswerable)",
    "plausible_answers": "list of {text, answer_start} plausible (wrong) answers of unanswerable questions",
    "is_impossible": "true when the question has no answer in the paragraph",
}


def tables(files: list[str]) -> dict[str, list[str]]:
    return {t: [f] for t, f in FILES.items() if f in files}


def _where(path, qid) -> int | None:
    """Line of question ``qid`` (its ``"id"`` entry) in the file, for error messages."""
    return line_of(path, json.dumps(qid)) if isinstance(qid, str) else None


def _answers(path, qa, key, qid):
    out = []
    entries = qa.get(key, []) or []
    if not isinstance(entries, list):
        raise InputError(path, f"question {qid}: {key!r} must be a list", _where(path, qid))
    for a in entries:
        if not isinstance(a, dict) or "text" not in a or "answer_start" not in a:
            raise InputError(path, f"question {qid}: malformed entry in {key!r}", _where(path, qid))
        if (not isinstance(a["text"], str) or not isinstance(a["answer_start"], int)
                or isinstance(a["answer_start"], bool)):
            raise InputError(path, f"question {qid}: {key!r} entries need a string 'text' and an "
                             f"integer 'answer_start', got {a!r}", _where(path, qid))
        out.append({"text": a["text"], "answer_start": a["answer_start"]})
    return out


def read_squad(path: str | Path) -> pd.DataFrame:
    """Read a SQuAD (1.1 or 2.0) JSON file into one row per question."""
    doc = read_json(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("data"), list):
        raise InputError(path, "expected an object with a 'data' list (SQuAD format)")
    rows, seen = [], set()
    for ai, art in enumerate(doc["data"]):
        if not isinstance(art, dict) or not isinstance(art.get("paragraphs"), list):
            raise InputError(path, f"article {ai} has no 'paragraphs' list")
        title = art.get("title", "")
        if not isinstance(title, str):
            raise InputError(path, f"article {ai}: 'title' must be a string, got {title!r}",
                             line_of(path, json.dumps(title)))
        for pi, par in enumerate(art["paragraphs"]):
            if not isinstance(par, dict) or "context" not in par or "qas" not in par:
                raise InputError(path, f"article {ai} paragraph {pi}: missing 'context' or 'qas'")
            if not isinstance(par["context"], str) or not isinstance(par["qas"], list):
                raise InputError(path, f"article {ai} paragraph {pi}: 'context' must be a string "
                                 "and 'qas' a list")
            for qa in par["qas"]:
                for k in ("id", "question"):
                    if not isinstance(qa, dict) or k not in qa:
                        raise InputError(path, f"article {ai} paragraph {pi}: question without {k!r}")
                qid = qa["id"]
                if not isinstance(qid, str):
                    raise InputError(path, f"article {ai} paragraph {pi}: question id must be a "
                                     f"string, got {qid!r}", line_of(path, json.dumps(qid)))
                expect_type(path, qa["question"], str, f"question {qid}: 'question'",
                            lambda: _where(path, qid))
                if qid in seen:
                    raise InputError(path, f"duplicate question id {qid}",
                                     line_of(path, json.dumps(qid), nth=2))
                seen.add(qid)
                answers = _answers(path, qa, "answers", qid)
                rows.append({
                    "id": qid, "article": ai, "paragraph": pi, "title": title,
                    "context": par["context"], "question": qa["question"], "answers": answers,
                    "plausible_answers": _answers(path, qa, "plausible_answers", qid),
                    "is_impossible": expect_type(path, qa.get("is_impossible", not answers), bool,
                                                 f"question {qid}: 'is_impossible'",
                                                 lambda: _where(path, qid)),
                })
    if not rows:
        raise InputError(path, "no questions found")
    return pd.DataFrame(rows, columns=list(COLUMNS))


def normalise(table: str, paths: dict) -> pd.DataFrame:
    return read_squad(paths[FILES[table]])


def _as_list(v):
    return [dict(a) for a in v] if v is not None else []


def to_squad_json(df: pd.DataFrame, version: str = "v2.0") -> dict:
    """Rebuild a SQuAD 2.0 JSON document (same titles, contexts, answers) from question rows."""
    data, arts = [], {}
    for row in df.itertuples(index=False):
        akey = (row.article, row.title)
        if akey not in arts:
            arts[akey] = {"title": row.title, "paragraphs": [], "_p": {}}
            data.append(arts[akey])
        art = arts[akey]
        if row.paragraph not in art["_p"]:
            art["_p"][row.paragraph] = {"qas": [], "context": row.context}
            art["paragraphs"].append(art["_p"][row.paragraph])
        qa = {"question": row.question, "id": row.id, "answers": _as_list(row.answers),
              "is_impossible": bool(row.is_impossible)}
        plaus = _as_list(getattr(row, "plausible_answers", None))
        if row.is_impossible:
            qa = {"plausible_answers": plaus, **qa}
        art["_p"][row.paragraph]["qas"].append(qa)
    for art in data:
        del art["_p"]
    return {"version": version, "data": data}
