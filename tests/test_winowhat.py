"""WinoWhat: request construction, item table, scoring with the engine, accuracy/CI/McNemar."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from csbench.errors import InputError
from csbench.winowhat import requests as R
from csbench.winowhat.items import build_items, template
from csbench.winowhat.scoring import METHODS, score_items, shard
from csbench.winowhat.stats import accuracy_table, bootstrap_ci, mcnemar_exact, mcnemar_table


# ---------------------------------------------------------------- requests (hand-written cases)
def test_partial_blank_in_the_middle():
    assert R.partial_requests("Sarah beat Maria so _ got the prize.", "Sarah", "Maria") == [
        ("Sarah beat Maria so Sarah", " got the prize."),
        ("Sarah beat Maria so Maria", " got the prize.")]


def test_partial_blank_at_start_and_glued_punctuation():
    assert R.partial_requests("_ won, not Bob.", "Al", "Bob")[0] == ("Al", " won, not Bob.")
    # lm-eval: target = " " + text after "_" stripped, even when "_" is glued to "'s"
    assert R.partial_requests("It was _'s turn.", "Ann", "Ben")[1] == ("It was Ben", " 's turn.")


def test_partial_blank_at_end_and_multi_token_options():
    assert R.partial_requests("The winner was _.", "the tall man", "Dr. O'Neil") == [
        ("The winner was the tall man", " ."), ("The winner was Dr. O'Neil", " .")]


def test_option_method_blank_at_end():
    reqs = R.option_requests("The prize went to  _.", "the tall man", "Dr. O'Neil")
    assert reqs == [("The prize went to", " the tall man"), ("The prize went to", " Dr. O'Neil")]
    assert R.option_requests("_!", "A", "B") == [("", "A"), ("", "B")]


def test_sentence_method_scores_from_the_blank_to_the_end_on_both_sides():
    # originals: the option and every token after it, the text as written (no stripping)
    assert R.sentence_requests("Sarah beat Maria so _ got the prize.", "Sarah", "Maria") == [
        ("Sarah beat Maria so", " Sarah got the prize."),
        ("Sarah beat Maria so", " Maria got the prize.")]
    assert R.sentence_requests("It was _'s turn.", "Ann", "Ben")[1] == ("It was", " Ben's turn.")
    assert R.sentence_requests("_ won.", "Al", "Bo")[0] == ("", "Al won.")
    # paraphrases with the blank at the end: the option and the closing punctuation
    assert R.sentence_requests("The prize went to _.", "Al", "Bo")[1] == (
        "The prize went to", " Bo.")


def test_blank_at_end_detection_and_fallback():
    assert R.blank_at_end("It was _.") and R.blank_at_end("It was _!\"") and R.blank_at_end("x _")
    assert not R.blank_at_end("because of how nice the _ was.")
    reqs, method = R.requests_for("because of how nice the _ was.", "a", "b", "transf")
    assert method == "partial" and reqs[0] == ("because of how nice the a", " was.")
    assert R.requests_for("It was _.", "a", "b", "transf")[1] == "option"
    assert R.requests_for("It was _.", "a", "b", "orig")[1] == "partial"
    with pytest.raises(ValueError):
        R.split_blank("no blank here")


# ---------------------------------------------------------------- items
def _dev():
    return pd.DataFrame({"id": ["q1", "q2", "q3"],
                         "sentence": ["A met B so _ smiled.", "A met B so _ left.", "C or D: _ ran."],
                         "option1": ["A", "A", "C"], "option2": ["B", "B", "D"],
                         "answer": pd.array([1, 2, 1], dtype="Int8")})


def _ww():
    return pd.DataFrame({
        "id": ["ww-1", "ww-2", "ww-3"], "sentence": ["A met B so _ smiled."] * 2 + ["A met B so _ left."],
        "paraphrased_sentence": ["A met B; who smiled was _.", "A met B; the smiler was _.",
                                 "A met B and then the _ one left."],
        "option1": ["A"] * 3, "option2": ["B"] * 3, "answer": pd.array([1, 1, 2], dtype="Int8"),
        "categories": [["social"], ["social"], ["social", "temporal"]],
        "in_original_experiment": [1, 0, 1]})


def test_build_items_alignment_duplicates_and_flags():
    it = build_items({"winogrande_dev": _dev()}, _ww())
    orig = it[it.variant == "orig"].set_index("item_id")
    tr = it[it.variant == "transf"].set_index("item_id")
    assert len(orig) == 3 and list(tr.index) == ["q1", "q1#2", "q2"]
    assert orig.loc["q3", "categories"] == [] and pd.isna(orig.loc["q3", "in_original_experiment"])
    assert orig.loc["q1", "in_original_experiment"] == 1
    assert tr.loc["q2", "flagged"] and tr.loc["q2", "method"] == "partial"
    assert not tr.loc["q1", "flagged"] and tr.loc["q1", "cont2"] == " B"
    assert list(tr["label"]) == [1, 1, 2]


def test_build_items_rejects_unaligned_rows():
    ww = _ww()
    ww.loc[0, "option2"] = "Z"
    with pytest.raises(InputError, match="does not match"):
        build_items({"winogrande_dev": _dev()}, ww)


def test_dev_read_in_part_keeps_the_paraphrases_of_its_items():
    from csbench.datasets import read_in_part

    part = _dev().iloc[[1, 2]]  # a limit sample or a where filter: q2, q3
    it = build_items({"winogrande_dev": part}, _ww(), parts=["winogrande_dev"])
    assert list(it[it.variant == "transf"]["item_id"]) == ["q2"]
    with pytest.raises(InputError, match="does not match"):
        build_items({"winogrande_dev": part}, _ww())
    assert read_in_part({"settings": {"where": None, "limit": 5}})
    assert read_in_part({"settings": {"where": {"x": "y"}, "limit": None}})
    assert not read_in_part({"settings": {"where": None, "limit": None}})


def test_samples_and_user_file(tmp_path):
    test = pd.DataFrame({"id": [f"t{i}" for i in range(10)],
                         "sentence": [f"P{i} saw Q{i} and _ waved." for i in range(10)],
                         "option1": [f"P{i}" for i in range(10)], "option2": [f"Q{i}" for i in range(10)],
                         "answer": pd.array([None] * 10, dtype="Int8")})
    sets = {"winogrande_dev": _dev(), "winogrande_test": test}
    it = it0 = build_items(sets, _ww(), sample_size=3, seed=1)
    s = it[it.dataset == "winogrande_test"]
    assert len(s) == 3 and s["label"].isna().all()
    assert len(template(it, "winogrande_test")) == 3
    user = tmp_path / "user.csv"
    user.write_text("sentence,paraphrased_sentence,option1,option2,answer,gpt_category,"
                    "gpt_category_names,in_original_experiment\n"
                    "P9 saw Q9 and _ waved.,The one who waved at P9 was _.,P9,Q9,2,2,['social'],1\n")
    it = build_items(sets, _ww(), sample_size=3, seed=1,
                     user_files={"winogrande_test": str(user)})
    s = it[it.dataset == "winogrande_test"].set_index(["variant", "item_id"])
    sampled = set(it0[it0.dataset == "winogrande_test"]["item_id"]) | {"t9"}
    assert len(s) == len(sampled) + 1 and s.loc[("orig", "t9"), "label"] == 2
    assert s.loc[("transf", "t9"), "method"] == "option"
    user.write_text(user.read_text().replace("P9 saw", "P99 saw"))
    with pytest.raises(InputError, match=r"user.csv:2"):
        build_items(sets, _ww(), sample_size=3, user_files={"winogrande_test": str(user)})


def test_sets_in_order_and_builtins_take_paraphrases_from_winowhat_only():
    wsc = _dev().assign(id=["w1", "w2", "w3"])
    mine = _dev().assign(id=["m1", "m2", "m3"], paraphrase=[None, "So _ left, A met B.", None],
                         categories=[[], ["social"], []])
    it = build_items({"winogrande_dev": _dev(), "mine": mine, "wsc": wsc}, _ww(), sample_size=2)
    assert list(dict.fromkeys(it["dataset"])) == ["winogrande_dev", "mine", "wsc"]
    assert (it["dataset"] == "wsc").sum() == 2
    assert list(it[it["dataset"] == "mine"]["item_id"]) == ["m1", "m2", "m3", "m2"]
    with pytest.raises(ValueError, match="wsc: WinoWhat takes its paraphrases .* winowhat.user_files"):
        build_items({"winogrande_dev": _dev(), "wsc": mine}, _ww())
    with pytest.raises(ValueError, match="must be among the sets"):
        build_items({"mine": mine}, _ww())


# ---------------------------------------------------------------- scoring with the engine
class FakeScorer:
    def __init__(self, table):
        self.table = table
        self.keys = None

    def loglikelihood(self, reqs, keys=None):
        self.keys = keys
        return [(self.table.get(r, -1.0), 1) for r in reqs]


def test_score_items_pred_ties_and_keys():
    it = build_items({"winogrande_dev": _dev()}, _ww())
    fake = FakeScorer({("A met B so A", " smiled."): -2.0, ("A met B so B", " smiled."): -1.0})
    out = score_items(it, fake)
    row = out[(out.variant == "orig") & (out.item_id == "q1")].iloc[0]
    assert row.pred == 2 and not row.correct
    tie = out[(out.variant == "orig") & (out.item_id == "q2")].iloc[0]
    assert tie.pred == 1 and not tie.correct  # ties go to option1, as in the harness
    assert fake.keys[:4] == ["winogrande_dev/orig/q1/1", "winogrande_dev/orig/q1/2",
                             "winogrande_dev/orig/q1/1/sentence", "winogrande_dev/orig/q1/2/sentence"]
    assert sorted(pd.concat([shard(it, i, 3) for i in range(3)]).index) == list(range(len(it)))


def test_control_scores_both_sides_the_same_way_and_per_character():
    dev = pd.DataFrame({"id": ["q1"], "sentence": ["Al met Bobby so _ smiled."],
                        "option1": ["Al"], "option2": ["Bobby"],
                        "answer": pd.array([2], dtype="Int8")})
    ww = pd.DataFrame({"id": ["ww-1"], "sentence": ["Al met Bobby so _ smiled."],
                       "paraphrased_sentence": ["Al met Bobby; who smiled was _."],
                       "option1": ["Al"], "option2": ["Bobby"], "answer": pd.array([2], dtype="Int8"),
                       "categories": [["social"]], "in_original_experiment": [1]})
    it = build_items({"winogrande_dev": dev}, ww)
    fake = FakeScorer({("Al met Bobby so", " Al smiled."): -3.0,      # 10 characters
                       ("Al met Bobby so", " Bobby smiled."): -3.5,   # 13 characters
                       ("Al met Bobby; who smiled was", " Al."): -1.0,
                       ("Al met Bobby; who smiled was", " Bobby."): -0.5})
    out = score_items(it, fake).set_index("variant")
    o, t = out.loc["orig"], out.loc["transf"]
    assert (o.pred_sentence, o.pred_sentence_norm) == (1, 2)  # -3.5/13 > -3.0/10
    assert not o.correct_sentence and o.correct_sentence_norm
    assert t.pred_sentence == 2 and t.correct_sentence and t.method == "option"
    assert (o.loglik2_sentence, t.loglik2_sentence) == (-3.5, -0.5)
    assert set(METHODS) == {"paper", "sentence", "sentence_norm"}
    for col in METHODS.values():
        assert out[col].dtype == "boolean"


def test_score_items_with_tiny_model(tiny_lm_dir):
    from csbench.lm import open_scorer

    it = build_items({"winogrande_dev": _dev()}, _ww())
    out = score_items(it, open_scorer(tiny_lm_dir, {"device": "cpu", "batch_size": 2}))
    assert out["n_tokens1"].min() >= 1 and out["pred"].isin([1, 2]).all()
    assert list(out.columns[:14]) == ["item_id", "dataset", "variant", "sentence", "option1",
                                      "option2", "loglik1", "loglik2", "n_tokens1", "n_tokens2",
                                      "pred", "label", "correct", "categories"]


# ---------------------------------------------------------------- statistics
def test_bootstrap_ci_properties():
    acc, lo, hi = bootstrap_ci([1] * 70 + [0] * 30, n_boot=2000, seed=0)
    assert acc == pytest.approx(0.7) and 0.6 < lo < 0.7 < hi < 0.8
    assert bootstrap_ci([1, 1, 1], n_boot=100) == (1.0, 1.0, 1.0)
    assert np.isnan(bootstrap_ci([], n_boot=10)[0])
    assert bootstrap_ci([1, 0] * 20, n_boot=500, seed=3) == bootstrap_ci([1, 0] * 20, n_boot=500, seed=3)


def test_mcnemar_exact_known_values():
    # b=1, c=9: two-sided exact p = 2 * P(X<=1 | n=10) = 2 * 11/1024
    o = [True] * 1 + [False] * 9 + [True] * 5
    t = [False] * 1 + [True] * 9 + [True] * 5
    b, c, p = mcnemar_exact(o, t)
    assert (b, c) == (1, 9) and p == pytest.approx(22 / 1024)
    assert mcnemar_exact([True, False], [True, False]) == (0, 0, 1.0)


def test_accuracy_and_mcnemar_tables():
    it = build_items({"winogrande_dev": _dev()}, _ww())
    scored = score_items(it, FakeScorer({("A met B so A", " smiled."): 0.0,
                                         ("A met B", " B"): 0.0}))
    scored["model"] = "m"
    acc = accuracy_table(scored, n_boot=200)
    assert set(acc["method"]) == set(METHODS)
    key = acc[acc["method"] == "paper"].set_index(["dataset", "variant", "subset", "category"])
    assert key.loc[("winogrande_dev", "orig", "all", "all"), "n"] == 3
    assert key.loc[("winogrande_dev", "transf", "all", "social"), "n"] == 3
    assert key.loc[("winogrande_dev", "transf", "in_original_experiment", "all"), "n"] == 2
    assert key.loc[("winogrande_dev", "transf", "all", "temporal"), "n"] == 1
    mc = mcnemar_table(scored, n_boot=200)
    assert set(mc["method"]) == set(METHODS)
    mc = mc[mc["method"] == "paper"].set_index("subset")
    assert mc.loc["all", "n_pairs"] == 3 and mc.loc["in_original_experiment", "n_pairs"] == 2
    assert 0 <= mc.loc["all", "p_value"] <= 1
    r = mc.loc["all"]
    assert r.difference == pytest.approx(r.acc_transf - r.acc_orig)
    assert r.diff_ci_low <= r.difference <= r.diff_ci_high


def test_paired_difference_interval_resamples_pairs():
    # 100 pairs: 20 right only on the original, 5 only on the paraphrase
    o = np.array([True] * 20 + [False] * 5 + [True] * 50 + [False] * 25)
    t = np.array([False] * 20 + [True] * 5 + [True] * 50 + [False] * 25)
    rows = [{"model": "m", "dataset": "d", "variant": v, "item_id": str(i), "orig_id": str(i),
             "label": 1, "in_original_experiment": 1, "categories": [],
             **{c: bool(x) for c in METHODS.values()}}
            for v, arr in (("orig", o), ("transf", t)) for i, x in enumerate(arr)]
    mc = mcnemar_table(pd.DataFrame(rows), n_boot=2000)
    r = mc[(mc.subset == "all") & (mc.method == "paper")].iloc[0]
    assert (r.orig_only_correct, r.transf_only_correct) == (20, 5)
    assert r.difference == pytest.approx(-0.15) and r.diff_ci_high < 0 < r.p_value < 0.01
    # the paired interval is narrower than two independent accuracy intervals would suggest
    assert r.diff_ci_high - r.diff_ci_low < 0.2


def test_schema_documented(repo):
    from csbench.config import check_schema_documented, validate

    assert check_schema_documented(repo / "workflow/schemas/winowhat.schema.yaml") == []
    cfg = validate({}, repo / "workflow/schemas/winowhat.schema.yaml")
    assert cfg["samples"] == {"size": 100, "seed": 0} and cfg["bootstrap"]["n"] == 10000
