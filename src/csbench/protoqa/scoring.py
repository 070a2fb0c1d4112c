"""List scoring: optimal one-to-one assignment of answers to clusters, Max Answers / Max Incorrect.

For one question: the similarity matrix (answers x clusters, already 0/1 after rounding) is cut
to the first ``k`` answers (Max Answers@k) or just after the ``k``-th answer that matches no
cluster (Max Incorrect@k; an answer whose only matching clusters are already taken still counts
as correct, as in the reference); each entry is multiplied by its cluster's size; the Hungarian
algorithm gives the best total with every cluster credited at most once; the total is divided by
the best total possible with the same limits (the reference's "oracle": one representative
answer per cluster, largest clusters first, scored the same way).
"""
from __future__ import annotations

import logging
import statistics

import numpy as np
import pandas as pd
from scipy.optimize import linear_sum_assignment

from . import METRICS, metric_limits
from .data import Predictions, Question, check_against
from .matching import EmbeddingMatcher, WordNetMatcher, exact_matrix, preprocess

log = logging.getLogger(__name__)


def limit_incorrect(matrix: np.ndarray, k: int) -> np.ndarray:
    """Keep rows up to and including the ``k``-th row whose best score is 0."""
    wrong = 0
    for i, best in enumerate(matrix.max(axis=1) if matrix.shape[1] else np.zeros(len(matrix))):
        if best == 0:
            wrong += 1
            if wrong >= k:
                return matrix[: i + 1]
    return matrix


def assignment_score(matrix: np.ndarray, counts, max_answers=None, max_incorrect=None) -> float:
    """Best total cluster size over one-to-one assignments, after the answer limits."""
    if max_answers is not None:
        matrix = matrix[:max_answers]
    if max_incorrect is not None:
        matrix = limit_incorrect(matrix, max_incorrect)
    if matrix.size == 0:
        return 0.0
    reward = matrix * np.asarray(counts, dtype=float)[None, :]
    rows, cols = linear_sum_assignment(-reward)
    return float(reward[rows, cols].sum())


def oracle_answers(q: Question) -> list[str]:
    """One representative per cluster (its first listed string), largest clusters first."""
    order = sorted(range(len(q.counts)), key=lambda j: q.counts[j], reverse=True)
    return [q.clusters[j][0] for j in order]


def ideal_score(counts, max_answers=None) -> float:
    ranked = sorted(counts, reverse=True)
    return float(sum(ranked[:max_answers] if max_answers is not None else ranked))


def score_question(matrix: np.ndarray, oracle_matrix: np.ndarray | None, counts,
                   metrics=METRICS) -> dict[str, float]:
    """Score one question under every metric (fractions in [0, 1]).

    ``oracle_matrix`` is the similarity matrix of :func:`oracle_answers`; ``None`` uses the
    ideal total (sum of the largest clusters) instead.
    """
    out = {}
    for metric in metrics:
        ma, mi = metric_limits(metric)
        got = assignment_score(matrix, counts, ma, mi)
        best = (assignment_score(oracle_matrix, counts, ma, mi) if oracle_matrix is not None
                else ideal_score(counts, ma))
        out[metric] = got / best if best > 0 else 0.0
    return out


class Scorer:
    """Score predictions against questions with one similarity function."""

    def __init__(self, similarity: str, embedder=None, threshold: float = 0.1,
                 stopword_only_match: bool = True):
        self.similarity = similarity
        self.embedding = None
        if similarity == "exact":
            self._matrix = lambda answers, q: exact_matrix(answers, q.clusters)
        elif similarity == "wordnet":
            wn = WordNetMatcher(stopword_only_match=stopword_only_match)
            self._matrix = lambda answers, q: wn.matrix(answers, q.clusters)
        elif similarity == "embedding":
            if embedder is None:
                raise ValueError("embedding similarity needs an embedder")
            em = self.embedding = EmbeddingMatcher(embedder, threshold)
            self._matrix = em.matrix
        else:
            raise ValueError(f"unknown similarity {similarity!r}")

    def prepare(self, items) -> None:
        """Before scoring ``(answers, question)`` pairs: the embedding similarity encodes all
        their texts in one batch (:meth:`EmbeddingMatcher.prefetch`); others need nothing."""
        if self.embedding is not None:
            n = self.embedding.prefetch((q, [preprocess(a) for a in answers]) for answers, q in items)
            log.info("embedding: %d texts prepared", n)

    def question(self, answers: list[str], q: Question) -> dict[str, float]:
        answers = [preprocess(a) for a in answers]
        if not answers:
            return {m: 0.0 for m in METRICS}
        matrix = self._matrix(answers, q)
        oracle = (None if self.similarity == "embedding"
                  else self._matrix([preprocess(a) for a in oracle_answers(q)], q))
        return score_question(matrix, oracle, q.counts)


def evaluate(preds: Predictions, questions: dict[str, Question], scorer: Scorer,
             missing: str = "skip") -> pd.DataFrame:
    """Long table ``question_id, metric, score`` plus ``mean`` rows (one per metric).

    Questions of the targets without predictions are left out of the means (``missing="skip"``,
    the reference's behaviour) or scored 0 (``missing="zero"``); unknown ids are skipped. Both are
    recorded in ``preds.issues``.
    """
    scored, absent = check_against(preds, questions)
    rows = []
    scorer.prepare((preds.answers[qid], questions[qid]) for qid in scored)
    for qid in scored:
        for metric, s in scorer.question(preds.answers[qid], questions[qid]).items():
            rows.append((qid, metric, s))
    if missing == "zero":
        rows += [(qid, m, 0.0) for qid in absent for m in METRICS]
    elif missing != "skip":
        raise ValueError(f"missing must be 'skip' or 'zero', got {missing!r}")
    df = pd.DataFrame(rows, columns=["question_id", "metric", "score"])
    means = [("mean", m, statistics.mean(df.loc[df.metric == m, "score"]) if len(df) else 0.0)
             for m in METRICS]
    return pd.concat([df, pd.DataFrame(means, columns=df.columns)], ignore_index=True)


def summary_table(results: dict[tuple[str, str], pd.DataFrame],
                  random_systems=frozenset()) -> pd.DataFrame:
    """Paper layout: one row per metric, one column per (similarity, system), mean scores.

    ``results`` maps (system, similarity) -> an evaluation table from :func:`evaluate`; systems in
    ``random_systems`` come from randomly initialised models and are labelled so.
    """
    cols = {}
    sims = [s for s in ("exact", "wordnet", "embedding") if any(k[1] == s for k in results)]
    systems = sorted({k[0] for k in results})
    for sim in sims:
        for system in systems:
            df = results.get((system, sim))
            if df is None:
                continue
            label = system + (" (random weights)" if system in random_systems else "")
            means = df[df.question_id == "mean"].set_index("metric")["score"]
            cols[f"{sim}/{label}"] = [float(means.get(m, float("nan"))) for m in METRICS]
    return pd.DataFrame({"metric": list(METRICS), **cols})
