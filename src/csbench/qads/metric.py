"""The official SQuAD 2.0 metric (behaviour of ``evaluate-v2.0.py``, rajpurkar/SQuAD-explorer).

Answers are normalised (lower case, punctuation removed, articles a/an/the removed, whitespace
collapsed); EM and token F1 take the maximum over the gold answers, an unanswerable question's gold
is the empty string; an optional no-answer probability per question gives the threshold-applied
scores and the best-threshold EM/F1.
"""
from __future__ import annotations

import collections
import re
import string

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCT = set(string.punctuation)


def normalize_answer(s: str) -> str:
    s = s.lower()
    s = "".join(ch for ch in s if ch not in _PUNCT)
    s = _ARTICLES.sub(" ", s)
    return " ".join(s.split())


def get_tokens(s: str) -> list[str]:
    return normalize_answer(s).split() if s else []


def compute_exact(gold: str, pred: str) -> int:
    return int(normalize_answer(gold) == normalize_answer(pred))


def compute_f1(gold: str, pred: str) -> float:
    g, p = get_tokens(gold), get_tokens(pred)
    if not g or not p:
        return float(g == p)
    same = sum((collections.Counter(g) & collections.Counter(p)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(p), same / len(g)
    return 2 * precision * recall / (precision + recall)


def qid_to_has_ans(dataset: list[dict]) -> dict[str, bool]:
    return {qa["id"]: bool(qa["answers"]) for art in dataset for p in art["paragraphs"]
            for qa in p["qas"]}


def raw_scores(dataset: list[dict], preds: dict[str, str]):
    """Per-question EM and F1 (questions without a prediction are skipped, as officially)."""
    exact, f1 = {}, {}
    for art in dataset:
        for p in art["paragraphs"]:
            for qa in p["qas"]:
                qid = qa["id"]
                if qid not in preds:
                    continue
                golds = [a["text"] for a in qa["answers"] if normalize_answer(a["text"])] or [""]
                exact[qid] = max(compute_exact(a, preds[qid]) for a in golds)
                f1[qid] = max(compute_f1(a, preds[qid]) for a in golds)
    return exact, f1


def apply_threshold(scores, na_probs, has_ans, thresh):
    return {q: (float(not has_ans[q]) if na_probs[q] > thresh else s) for q, s in scores.items()}


def _eval_dict(exact, f1, qids=None) -> dict:
    qids = list(exact) if qids is None else qids
    n = len(qids)
    if n == 0:
        return {"exact": 0.0, "f1": 0.0, "total": 0}
    return {"exact": 100.0 * sum(exact[q] for q in qids) / n,
            "f1": 100.0 * sum(f1[q] for q in qids) / n, "total": n}


def find_best_thresh(preds, scores, na_probs, has_ans):
    cur = best = sum(1 for q in has_ans if not has_ans[q])
    best_thresh = 0.0
    for qid in sorted(na_probs, key=lambda k: na_probs[k]):
        if qid not in scores:
            continue
        if has_ans[qid]:
            diff = scores[qid]
        else:
            diff = -1 if preds[qid] else 0
        cur += diff
        if cur > best:
            best, best_thresh = cur, na_probs[qid]
    return 100.0 * best / len(scores), best_thresh


def item_scores(dataset: list[dict], preds: dict[str, str],
                na_probs: dict[str, float] | None = None, na_prob_thresh: float = 1.0) -> list[dict]:
    """Per scored question (in file order): ``id``, ``has_answer``, ``exact`` (0/1) and ``f1``
    (0-1) after the no-answer threshold: the values whose means :func:`evaluate` reports (x 100)."""
    has_ans = qid_to_has_ans(dataset)
    probs = na_probs if na_probs is not None else {q: 0.0 for q in preds}
    exact_raw, f1_raw = raw_scores(dataset, preds)
    exact = apply_threshold(exact_raw, probs, has_ans, na_prob_thresh)
    f1 = apply_threshold(f1_raw, probs, has_ans, na_prob_thresh)
    return [{"id": q, "has_answer": has_ans[q], "exact": float(exact[q]), "f1": float(f1[q])}
            for q in exact]


def evaluate(dataset: list[dict], preds: dict[str, str], na_probs: dict[str, float] | None = None,
             na_prob_thresh: float = 1.0) -> dict:
    """Official SQuAD 2.0 evaluation of ``preds`` (qid -> answer text, "" = no answer).

    ``dataset`` is the ``data`` list of a SQuAD JSON file. Returns the same keys as the official
    script (exact, f1, total, HasAns_*, NoAns_*, and best_* when ``na_probs`` is given).
    """
    has_ans = qid_to_has_ans(dataset)
    probs = na_probs if na_probs is not None else {q: 0.0 for q in preds}
    exact_raw, f1_raw = raw_scores(dataset, preds)
    exact = apply_threshold(exact_raw, probs, has_ans, na_prob_thresh)
    f1 = apply_threshold(f1_raw, probs, has_ans, na_prob_thresh)
    out = _eval_dict(exact, f1)
    for label, want in (("HasAns", True), ("NoAns", False)):
        qids = [q for q, h in has_ans.items() if h is want and q in exact]
        if qids:
            d = _eval_dict(exact, f1, qids)
            out.update({f"{label}_{k}": v for k, v in d.items()})
    if na_probs is not None and exact_raw:
        out["best_exact"], out["best_exact_thresh"] = find_best_thresh(preds, exact_raw, na_probs, has_ans)
        out["best_f1"], out["best_f1_thresh"] = find_best_thresh(preds, f1_raw, na_probs, has_ans)
    return out
