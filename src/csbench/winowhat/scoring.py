"""Score the item table with the shared engine; one shard at a time.

Each item is scored by the paper's method (``loglik1``/``loglik2``: partial scoring on originals,
the option's tokens on paraphrases whose blank ends them) and, in the same engine call, by the
control method (``*_sentence``: the sentence from the blank to its end on both sides, see
:mod:`.requests`). Both request sets share their text up to the blank (the originals' whole token
sequence), so the engine's prefix trie runs the shared tokens once. :data:`METHODS` names the
correctness column of each way of reading the scores.
"""
from __future__ import annotations

import pandas as pd

OUT_COLUMNS = ["item_id", "dataset", "variant", "sentence", "option1", "option2", "loglik1",
               "loglik2", "n_tokens1", "n_tokens2", "pred", "label", "correct", "categories",
               "orig_id", "method", "flagged", "in_original_experiment",
               "loglik1_sentence", "loglik2_sentence", "n_tokens1_sentence", "n_tokens2_sentence",
               "pred_sentence", "correct_sentence", "pred_sentence_norm", "correct_sentence_norm"]

# How the scores are read -> the correctness column: the paper's metric (partial scoring on the
# originals, option tokens on the paraphrases); the sentence from the blank on, on both sides
# (one method: the control for the paper's metric confound); the same per character of the
# scored text (lm-eval's acc_norm normalisation).
METHODS = {"paper": "correct", "sentence": "correct_sentence",
           "sentence_norm": "correct_sentence_norm"}


def shard(items: pd.DataFrame, index: int, n: int) -> pd.DataFrame:
    """Rows ``index, index+n, ...`` (a stable split of the item table)."""
    if not 0 <= index < n:
        raise ValueError(f"shard {index} out of range for {n} shards")
    return items.iloc[index::n]


def _pred(score1: pd.Series, score2: pd.Series) -> pd.Series:
    """argmax with ties to option1, as lm-evaluation-harness does."""
    return ((score2 > score1).astype(int) + 1).astype("Int8")


def score_items(items: pd.DataFrame, scorer) -> pd.DataFrame:
    """Add logliks, token counts, predictions and correctness of both methods. ``scorer`` has
    ``loglikelihood(requests, keys)``."""
    reqs, keys = [], []
    for r in items.itertuples(index=False):
        base = f"{r.dataset}/{r.variant}/{r.item_id}"
        reqs += [(r.ctx1, r.cont1), (r.ctx2, r.cont2),
                 (r.ctx_sentence, r.cont1_sentence), (r.ctx_sentence, r.cont2_sentence)]
        keys += [f"{base}/1", f"{base}/2", f"{base}/1/sentence", f"{base}/2/sentence"]
    res = scorer.loglikelihood(reqs, keys=keys)
    out = items.copy()
    n = len(items)
    for j, col in enumerate(("1", "2", "1_sentence", "2_sentence")):
        out[f"loglik{col}"] = [res[4 * i + j][0] for i in range(n)]
        out[f"n_tokens{col}"] = [res[4 * i + j][1] for i in range(n)]
    out["pred"] = _pred(out["loglik1"], out["loglik2"])
    out["pred_sentence"] = _pred(out["loglik1_sentence"], out["loglik2_sentence"])
    chars = [out[f"cont{k}_sentence"].str.lstrip().str.len().clip(lower=1) for k in (1, 2)]
    out["pred_sentence_norm"] = _pred(out["loglik1_sentence"] / chars[0],
                                      out["loglik2_sentence"] / chars[1])
    for suffix in ("", "_sentence", "_sentence_norm"):
        out[f"correct{suffix}"] = (out[f"pred{suffix}"] == out["label"]).astype("boolean")
    return out[OUT_COLUMNS].reset_index(drop=True)
