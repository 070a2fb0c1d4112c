"""ProtoQA's trivial ranked list: a system that ignores the question.

For each target question, the list holds the answers given most often to the *other* questions
of the same table: answers (:func:`csbench.text.fold`-ed crowd answers) ranked by the number of
other questions that received them, ties by their total crowd count over those questions, then
alphabetically. Leaving the question itself out keeps its own gold answers from leaking into its
list; what is left is the generic prior ("money", "food", "car", ...) that a zero-shot LM
reproduces when it does not read the question. It plays the part of the majority class of a
classification task: a ranked-list system that does not beat it shows no use of the question.
"""
from __future__ import annotations

from collections import Counter

from ..text import fold
from .data import Question


def _answers(q: Question) -> Counter:
    """Folded crowd answer -> its count for one question (empty answers left out)."""
    out: Counter = Counter()
    for answer, n in q.raw:
        a = fold(answer)
        if a:
            out[a] += n
    return out


def frequent_answers(questions: dict[str, Question], top: int = 20) -> dict[str, list[str]]:
    """Question id -> its trivial list (up to ``top`` answers), questions in the given order."""
    per_q = {qid: _answers(q) for qid, q in questions.items()}
    df: Counter = Counter()     # answer -> questions that received it
    total: Counter = Counter()  # answer -> crowd count over all questions
    for answers in per_q.values():
        df.update(answers.keys())
        total.update(answers)
    ranked = sorted(df, key=lambda a: (-df[a], -total[a], a))
    out = {}
    for qid, own in per_q.items():
        # leaving this question out lowers only its own answers' keys, so its list lies within
        # the overall top (top + its answers)
        pool = ranked[: top + len(own)]
        key = lambda a: (-(df[a] - (a in own)), -(total[a] - own.get(a, 0)), a)  # noqa: E731
        out[qid] = [a for a in sorted(pool, key=key) if df[a] - (a in own) > 0][:top]
    return out
