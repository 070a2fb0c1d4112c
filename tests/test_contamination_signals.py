"""Membership signals (csbench.contamination.signals) against a plain transformers forward pass."""
from __future__ import annotations

import math
import zlib

import numpy as np
import pandas as pd
import pytest
import torch

from csbench.contamination.signals import COLUMNS, item_texts, lowest_mean, signals_table
from csbench.lm import open_scorer

TEXTS = ["Sarah was a better surgeon than Maria so Maria always got the harder cases.",
         "The trophy doesn't fit into the brown suitcase because the trophy is too large.",
         "x",
         "A much longer text, with punctuation; digits 12345 and a few rarer words: "
         "quixotic, zephyr, and so on, to make the tokens many."]


def reference(model_dir, texts, k: float) -> list[dict]:
    """By hand: transformers' full forward pass in fp32 over [start token] + text tokens (no
    special tokens), full-vocabulary log-softmax (in double), the four signals."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    return [one(tok, model, t, k) for t in texts]


def one(tok, model, text, k):
    start = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
    ids = tok(text, add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        logits = model(torch.tensor([[start] + ids])).logits[0, :-1].double()
    logp = torch.log_softmax(logits, -1)
    lp = logp[torch.arange(len(ids)), torch.tensor(ids)].numpy()
    p = logp.exp()
    mu = (p * logp).sum(-1)
    sigma = ((p * logp ** 2).sum(-1) - mu ** 2).sqrt()
    z = ((torch.tensor(lp) - mu) / sigma).numpy()
    m = max(1, math.floor(k * len(ids)))
    loss = -lp.mean()
    return {"n_tokens": len(ids), "loss": loss, "zlib": loss / len(zlib.compress(text.encode())),
            "mink": np.sort(lp)[:m].mean(), "minkpp": np.sort(z)[:m].mean()}


def texts_frame(texts):
    return pd.DataFrame({"item_id": [f"i{i}" for i in range(len(texts))],
                         "orig_id": [f"i{i}" for i in range(len(texts))],
                         "dataset": "demo", "variant": "orig",
                         "label": pd.array([1] * len(texts), dtype="Int8"), "option": 1,
                         "text": texts})


@pytest.mark.parametrize("fixture", ["tiny_lm_dir", "tiny_bos_lm_dir"])
@pytest.mark.parametrize("k", [0.2, 0.5])
def test_signals_match_a_plain_forward_pass(fixture, k, request, tmp_path):
    """fp32, batched with prefix sharing and the cache: within 1e-4 of the reference; a second
    run reads every text back from the cache with the same numbers."""
    model_dir = request.getfixturevalue(fixture)
    scorer = open_scorer(model_dir, {"device": "cpu", "dtype": "float32", "batch_size": 2},
                         tmp_path / "cache")
    df = texts_frame(TEXTS + TEXTS[:1])  # a duplicate text: scored once
    got = signals_table(df, scorer, k)
    assert list(got.columns) == COLUMNS and scorer.stats["unique"] == len(TEXTS)
    for text, row, ref in zip(df["text"], got.itertuples(), reference(model_dir, df["text"], k)):
        assert row.n_tokens == ref["n_tokens"]
        for s in ("loss", "zlib", "mink", "minkpp"):
            assert abs(getattr(row, s) - ref[s]) <= 1e-4, (s, text)
    again = open_scorer(model_dir, {"device": "cpu", "dtype": "float32"}, tmp_path / "cache")
    back = signals_table(df, again, k)
    assert again.stats["cached"] == len(df) and again.stats["unique"] == 0
    pd.testing.assert_frame_equal(back, got)


def test_lowest_mean_takes_at_least_one():
    assert lowest_mean([-1.0, -3.0, -2.0], 0.2) == -3.0
    assert lowest_mean([-1.0, -3.0, -2.0, -4.0, -5.0], 0.4) == -4.5


def test_item_texts_fill_the_blank():
    items = pd.DataFrame({"item_id": ["a", "a", "t"], "orig_id": ["a", "a", "t"],
                          "dataset": ["winogrande_dev", "winogrande_dev", "winogrande_test"],
                          "variant": ["orig", "transf", "orig"],
                          "sentence": ["A _ b.", "B _ a.", "C _."],
                          "option1": ["x", "x", "u"], "option2": ["y", "y", "v"],
                          "label": pd.array([2, 2, None], dtype="Int8")})
    t = item_texts(items)
    # the original with answer 2 also gets its option-1 text (the unlabelled test item's rule)
    assert list(t["text"]) == ["A y b.", "A x b.", "B y a.", "C u."]
    assert list(t["variant"]) == ["orig", "orig", "paraphrase", "orig"]
    assert list(t["option"]) == [2, 1, 2, 1]
    assert t["label"].isna().tolist() == [False, False, False, True]
