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
         "quixotic, zephyr, and so on, to make the tokens many.",
         # twins: scored as one trie, the shared prefix's positions once
         "The trophy doesn't fit into the brown suitcase because the suitcase is too small."]


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
    assert scorer.stats["shared_groups"] >= 1
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


def test_served_model_gives_loss_zlib_mink_and_refuses_minkpp_naming_the_key(tmp_path):
    """A served model: the echoed token log-probs of each text after the start token (equal to
    the server's own), cached; Min-K%++ refused naming contamination.signals.minkpp."""
    from fake_openai import FakeServer, token_logprob, tokens

    from csbench.errors import CsbenchError
    from csbench.lm.served import Endpoint, ServedScorer

    df = texts_frame([" " + t for t in TEXTS[:2]])  # the fake server splits tokens at spaces
    with FakeServer() as fake:
        def served():
            return ServedScorer(Endpoint(fake.base_url, fake.model, None, "<bos>"),
                                cache_dir=tmp_path / "cache", max_concurrency=2, timeout=5,
                                retries=1, backoff=0.01)

        with pytest.raises(CsbenchError, match="contamination.signals.minkpp: false"):
            signals_table(df, served(), 0.2)
        first = served()
        got = signals_table(df, first, 0.2, minkpp=False)
        # its cache file finished now, not when the collector gets to it (a reference cycle
        # elsewhere in a long test run can keep it open, unseen by the next scorer)
        first.cache.close()
        sent = fake.completions
        again = served()
        pd.testing.assert_frame_equal(signals_table(df, again, 0.2, minkpp=False), got)
        assert fake.completions == sent and again.stats["cached"] == len(df)
    for text, row in zip(df["text"], got.itertuples()):
        prompt = "<bos>" + text
        lp = [token_logprob(prompt[:o], t) for o, t in tokens(prompt) if o >= len("<bos>")]
        assert row.n_tokens == len(lp) and row.loss == pytest.approx(-np.mean(lp))
        assert row.mink == pytest.approx(lowest_mean(lp, 0.2)) and math.isnan(row.minkpp)


def test_texts_a_model_was_trained_on_score_as_members(tiny_lm_dir, tmp_path):
    """The membership direction: a tiny model trained for a few steps on half of a set of texts
    ranks those above the other half on every signal (AUROC 1)."""
    import shutil

    from transformers import AutoModelForCausalLM, AutoTokenizer

    from csbench.bootstrap import auroc
    from csbench.contamination.signals import MEMBER_SIGN

    members = ["The red fox jumped over the sleeping dog near the river bank.",
               "Grandmother baked bread every Sunday before the market opened.",
               "A violin string snapped during the last bar of the concerto."]
    others = ["The committee postponed its vote until the auditors had finished.",
              "Snow covered the mountain pass long before the hikers arrived.",
              "Her laptop battery died in the middle of the presentation."]
    out = tmp_path / "trained"
    shutil.copytree(tiny_lm_dir, out)
    tok = AutoTokenizer.from_pretrained(out)
    model = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32)
    torch.manual_seed(0)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    start = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
    for _ in range(30):
        for t in members:
            ids = torch.tensor([[start] + tok(t, add_special_tokens=False)["input_ids"]])
            model(ids, labels=ids).loss.backward()
            opt.step()
            opt.zero_grad()
    model.save_pretrained(out)
    scorer = open_scorer(out, {"device": "cpu", "dtype": "float32"}, None)
    got = signals_table(texts_frame(members + others), scorer, 0.2)
    gold = np.r_[np.ones(3, bool), np.zeros(3, bool)]
    for s in MEMBER_SIGN:
        assert auroc(MEMBER_SIGN[s] * got[s].to_numpy(), gold) == 1.0, s


def test_statistics_on_a_planted_table():
    """Originals with lower loss than their paraphrases: AUROC 1 orig vs paraphrase (paired
    items), the Mann-Whitney test finds the right-answered items more member-like, quartiles
    cover every item, and the section names the comparisons."""
    from csbench.contamination import signals_stats as st
    from csbench.contamination.signals_report import markdown

    rng = np.random.default_rng(0)
    n = 40
    ids = [f"q{i}" for i in range(n)]
    loss = rng.uniform(2, 4, n)
    rows = []
    for i, q in enumerate(ids):
        for variant, extra in (("orig", 0.0), ("paraphrase", 3.0)):
            rows.append(dict(item_id=q, orig_id=q, dataset="winogrande_dev", variant=variant,
                             label=1, option=1, loss=loss[i] + extra))
        rows.append(dict(item_id=f"t{i}", orig_id=f"t{i}", dataset="winogrande_test",
                         variant="orig", label=None, option=1, loss=loss[i] + 0.5))
    sig = pd.DataFrame(rows)
    sig["label"] = sig["label"].astype("Int8")
    for s in ("zlib", "mink", "minkpp"):
        sig[s] = -sig["loss"] if s != "zlib" else sig["loss"] / 50
    correct = loss < np.median(loss)  # low loss (member-like): answered right
    res = pd.DataFrame({"item_id": ids * 2, "orig_id": ids * 2,
                        "dataset": "winogrande_dev", "variant": ["orig"] * n + ["transf"] * n,
                        "correct": list(correct) + [True] * n})
    auc = st.auroc_table("m", sig, n=200)
    para = auc[auc["comparison"] == "orig_vs_paraphrase"]
    assert (para["auroc"] == 1.0).all() and (para["n_members"] == n).all()
    assert (para["auroc_ci_low"] <= 1.0).all()
    mw = st.mannwhitney_table("m", sig, res)
    assert (mw["p_value"] < 0.001).all() and (mw["auroc"] == 1.0).all()
    qt = st.quartile_table("m", sig, res)
    assert qt.groupby("signal")["n_items"].sum().eq(n).all()
    md = markdown(auc, mw, qt)
    assert "orig vs paraphrase" in md and "dev vs test" in md and "evidence, not proof" in md
