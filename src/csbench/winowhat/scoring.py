"""Score the item table with the shared engine; one shard at a time."""
from __future__ import annotations

import pandas as pd

OUT_COLUMNS = ["item_id", "dataset", "variant", "sentence", "option1", "option2", "loglik1",
               "loglik2", "n_tokens1", "n_tokens2", "pred", "label", "correct", "categories",
               "orig_id", "method", "flagged", "in_original_experiment"]


def shard(items: pd.DataFrame, index: int, n: int) -> pd.DataFrame:
    """Rows ``index, index+n, ...`` (a stable split of the item table)."""
    if not 0 <= index < n:
        raise ValueError(f"shard {index} out of range for {n} shards")
    return items.iloc[index::n]


def score_items(items: pd.DataFrame, scorer) -> pd.DataFrame:
    """Add loglik/n_tokens/pred/correct. ``scorer`` has ``loglikelihood(requests, keys)``."""
    reqs, keys = [], []
    for r in items.itertuples(index=False):
        base = f"{r.dataset}/{r.variant}/{r.item_id}"
        reqs += [(r.ctx1, r.cont1), (r.ctx2, r.cont2)]
        keys += [f"{base}/1", f"{base}/2"]
    res = scorer.loglikelihood(reqs, keys=keys)
    out = items.copy()
    out["loglik1"] = [res[2 * i][0] for i in range(len(items))]
    out["loglik2"] = [res[2 * i + 1][0] for i in range(len(items))]
    out["n_tokens1"] = [res[2 * i][1] for i in range(len(items))]
    out["n_tokens2"] = [res[2 * i + 1][1] for i in range(len(items))]
    # argmax with ties to option1, as lm-evaluation-harness does
    out["pred"] = (out["loglik2"] > out["loglik1"]).astype(int) + 1
    out["pred"] = out["pred"].astype("Int8")
    out["correct"] = (out["pred"] == out["label"]).astype("boolean")
    return out[OUT_COLUMNS].reset_index(drop=True)
