"""ProtoQA inputs: target questions (with answer clusters) and predictions files.

Targets come from a ``protoqa`` data set of the ``datasets`` registry (``protoqa.targets``: the
built-in ``protoqa_dev`` or a user's set), or straight from a normalised table or a ProtoQA
``.jsonl`` file. Predictions come in the two formats of the release:

* one JSON object ``{"<qid>": ["answer", ...], ...}`` (``dev.predictions.gpt2finetuned.json``);
* JSON lines, each ``{"<qid>": [...]}`` or ``{"question_id": "<qid>", "ranked_answers": [...]}``.

Unknown ids, empty lists, empty answer strings and ids given twice are kept (or skipped) and
recorded as *issues*, never raised; malformed JSON or a non-list answer field is bad input and
raises :class:`~csbench.errors.InputError` naming the file and line.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError
from ..io import PairsDict, line_of, open_text, read_jsonl


@dataclass(frozen=True)
class Question:
    qid: str
    question: str                      # the normalised question text
    clusters: tuple[tuple[str, ...], ...]
    counts: tuple[int, ...]
    cluster_ids: tuple[str, ...] = ()
    raw: tuple[tuple[str, int], ...] = ()


def questions_from_frame(df) -> dict[str, Question]:
    """Questions with clusters from a normalised ``protoqa`` table (rows without clusters dropped)."""
    out: dict[str, Question] = {}
    for r in df.itertuples(index=False):
        if len(r.cluster_ids) == 0:
            continue
        out[r.id] = Question(
            qid=r.id, question=r.question_normalized,
            clusters=tuple(tuple(str(a) for a in c) for c in r.cluster_answers),
            counts=tuple(int(c) for c in r.cluster_counts),
            cluster_ids=tuple(str(c) for c in r.cluster_ids),
            raw=tuple((str(a), int(n)) for a, n in zip(r.raw_answers, r.raw_counts)),
        )
    return out


def load_questions(path: str | Path, dataset: dict | None = None) -> dict[str, Question]:
    """Questions of a ``protoqa`` data set: its file ``path`` read as ``dataset`` says (the
    registry entry's kind, columns and settings, :func:`csbench.datasets.read_params`); without
    ``dataset``, a normalised ``.parquet`` table or a ProtoQA ``.jsonl`` file."""
    if dataset is not None:
        from ..datasets import read_entry

        return questions_from_frame(read_entry(dataset, path))
    import pandas as pd

    path = Path(path)
    if path.suffix == ".parquet":
        return questions_from_frame(pd.read_parquet(path))
    from ..data.protoqa import normalise

    return questions_from_frame(normalise("dev_crowdsourced", {"dev.crowdsourced.jsonl": path}))


@dataclass
class Predictions:
    answers: dict[str, list[str]]
    issues: list[dict] = field(default_factory=list)
    path: str = ""

    def report(self, kind: str, qid: str | None, detail: str, line: int | None = None):
        self.issues.append({"kind": kind, "question_id": qid, "line": line, "detail": detail})


def _add(preds: Predictions, path, qid, answers, line):
    if not isinstance(qid, str):
        raise InputError(path, f"question id must be a string, got {qid!r}", line)
    if not isinstance(answers, list):
        raise InputError(path, f"answers of {qid!r} must be a list, got {type(answers).__name__}",
                         line)
    clean = []
    for a in answers:
        if a is None:
            a = ""
        if not isinstance(a, str):
            raise InputError(path, f"answers of {qid!r} must be strings, got {a!r}", line)
        if not a.strip():
            preds.report("empty_answer", qid, "empty answer string (kept, matches nothing "
                         "under exact matching)", line)
        clean.append(a)
    if not clean:
        preds.report("empty_list", qid, "no answers (scores 0)", line)
    if qid in preds.answers:
        preds.report("duplicate_id", qid, "id given again; the later list is used", line)
    preds.answers[qid] = clean


def load_predictions(path: str | Path) -> Predictions:
    """Read a predictions file in either release format (detected from the content)."""
    path = Path(path)
    preds = Predictions({}, path=str(path))
    with open_text(path) as fh:
        text = fh.read()
    if not text.strip():
        raise InputError(path, "file is empty")
    # PairsDict keeps an id given twice in one object (json would keep only the last list)
    try:
        doc = json.loads(text, object_pairs_hook=PairsDict.from_pairs)
    except json.JSONDecodeError:
        doc = None
    if isinstance(doc, dict) and not ("question_id" in doc and "ranked_answers" in doc):
        seen: dict[str, int] = {}
        for qid, answers in doc.pairs:
            seen[qid] = seen.get(qid, 0) + 1
            # (lines are looked up only for a repeated id: the format has one object, no lines)
            line = line_of(path, json.dumps(qid), nth=seen[qid]) if seen[qid] > 1 else None
            _add(preds, path, qid, answers, line)
        return preds
    for lineno, rec in read_jsonl(path, object_pairs_hook=PairsDict.from_pairs):
        if "question_id" in rec:
            if "ranked_answers" not in rec:
                raise InputError(path, "'question_id' without 'ranked_answers'", lineno)
            _add(preds, path, rec["question_id"], rec["ranked_answers"], lineno)
        else:
            if not rec:
                preds.report("empty_line", None, "empty JSON object", lineno)
            for qid, answers in rec.pairs:
                _add(preds, path, qid, answers, lineno)
    return preds


def check_against(preds: Predictions, questions: dict[str, Question]) -> tuple[list[str], list[str]]:
    """Record unknown ids and questions without predictions; return (scored ids, missing ids)."""
    scored = [q for q in preds.answers if q in questions]
    for q in preds.answers:
        if q not in questions:
            preds.report("unknown_id", q, "not a question of the targets (skipped)")
    missing = [q for q in questions if q not in preds.answers]
    for q in missing:
        preds.report("missing_question", q, "no predictions for this question")
    return scored, missing
