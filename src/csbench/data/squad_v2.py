"""SQuAD 2.0 (``dev-v2.0.json``, ``train-v2.0.json``): one row per question.

The official file is ``{"version", "data": [{"title", "paragraphs": [{"context", "qas": [...]}]}]}``;
each question is ``{"question", "id", "answers": [{"text", "answer_start"}], "is_impossible"}`` and
unanswerable ones may carry ``plausible_answers``. The table keeps article and paragraph indices so
that the original nesting (and the file itself) can be rebuilt by :func:`to_squad_json`.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..errors import InputError
from ..io import read_json

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


def _answers(path, qa, key, qid):
    out = []
    for a in qa.get(key, []) or []:
        if not isinstance(a, dict) or "text" not in a or "answer_start" not in a:
            raise InputError(path, f"question {qid}: malformed entry in {key!r}")
        out.append({"text": str(a["text"]), "answer_start": int(a["answer_start"])})
    return out


def read_squad(path: str | Path) -> pd.DataFrame:
    """Read a SQuAD (1.1 or 2.0) JSON file into one row per question."""
    doc = read_json(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("data"), list):
        raise InputError(path, "expected an object with a 'data' list (SQuAD format)")
    rows, seen = [], set()
    for ai, art in enumerate(doc["data"]):
        if "paragraphs" not in art:
            raise InputError(path, f"article {ai} has no 'paragraphs'")
        for pi, par in enumerate(art["paragraphs"]):
            if "context" not in par or "qas" not in par:
                raise InputError(path, f"article {ai} paragraph {pi}: missing 'context' or 'qas'")
            for qa in par["qas"]:
                for k in ("id", "question"):
                    if k not in qa:
                        raise InputError(path, f"article {ai} paragraph {pi}: question without {k!r}")
                qid = str(qa["id"])
                if qid in seen:
                    raise InputError(path, f"duplicate question id {qid}")
                seen.add(qid)
                answers = _answers(path, qa, "answers", qid)
                rows.append({
                    "id": qid, "article": ai, "paragraph": pi, "title": str(art.get("title", "")),
                    "context": par["context"], "question": qa["question"], "answers": answers,
                    "plausible_answers": _answers(path, qa, "plausible_answers", qid),
                    "is_impossible": bool(qa.get("is_impossible", not answers)),
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
