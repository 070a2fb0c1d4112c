"""20Q calibrated yes/no metrics (csbench.twentyq.calibration): AUROC with ties counted half,
cross-fitted thresholds that never see the label of the item they predict, seeded bootstrap."""
import numpy as np
import pandas as pd
import pytest

from csbench import bootstrap
from csbench.twentyq import calibration as C

CAL, BOOT = {"folds": 3, "seed": 0}, {"n": 200, "seed": 0, "level": 0.9}


def test_auroc_by_hand_with_ties_counted_half():
    # yes: 3, 2, 1; no: 2, 0. Pairs (yes, no): 3>2, 3>0, 2=2 (half), 2>0, 1<2, 1>0 -> 4.5 / 6
    s, g = [3, 2, 1, 2, 0], [True, True, True, False, False]
    assert C.auroc(s, g) == pytest.approx(0.75)
    assert C.auroc([-x for x in s], g) == pytest.approx(0.25)
    assert C.auroc([1, 1, 1, 1, 1], g) == pytest.approx(0.5)  # all tied: chance
    assert np.isnan(C.auroc([1, 2], [True, True]))  # one class: undefined


def test_weighted_auroc_is_the_auroc_of_the_resample():
    rng = np.random.default_rng(1)
    s, g = np.round(rng.normal(size=40), 1), rng.random(40) < 0.5  # rounded: many ties
    idx = next(bootstrap.resamples(40, 25, seed=3))
    w = bootstrap.counts(idx, 40)
    assert (w.sum(axis=1) == 40).all()
    assert C.auroc(s, g, w) == pytest.approx([C.auroc(s[i], g[i]) for i in idx], nan_ok=True)


def test_threshold_maximises_accuracy_with_the_stated_tie_break():
    # separable below 0: the midpoint between the classes, not the paper's 0
    assert C.best_threshold([-3, -2, -1, 1], [False, False, True, True]) == pytest.approx(-1.5)
    # the paper's rule (0) is kept where it is optimal
    assert C.best_threshold([-5, -4, 4, 5], [False, False, True, True]) == 0.0
    assert C.best_threshold([-3, -2, -1], [True, True, True]) == -np.inf  # all yes
    # -inf (all yes) and +inf (all no) equally good and equally far from 0: the lower
    assert C.best_threshold([-1, 1], [True, False]) == -np.inf
    assert C.best_threshold([], []) == 0.0


def test_stratified_folds_are_balanced_and_seeded():
    g = np.array([True] * 13 + [False] * 9)
    f = C.stratified_folds(g, 5, seed=7)
    assert np.array_equal(f, C.stratified_folds(g, 5, seed=7))
    assert not np.array_equal(f, C.stratified_folds(g, 5, seed=8))
    for part in (f, f[g], f[~g]):
        sizes = np.bincount(part, minlength=5)
        assert sizes.max() - sizes.min() <= 1


def test_cross_fitting_never_uses_an_items_own_label():
    rng = np.random.default_rng(0)
    s, g = rng.normal(size=30) + 0.8 * (rng.random(30) < 0.5), rng.random(30) < 0.5
    fold = C.stratified_folds(g, 4, seed=0)
    pred, thr = C.cross_fitted(s, g, fold)
    assert len(thr) == 4
    for i in range(len(s)):  # flipping item i's label cannot change item i's prediction
        flipped = g.copy()
        flipped[i] = ~flipped[i]
        assert C.cross_fitted(s, flipped, fold)[0][i] == pred[i]
    # while fitting on all items at once would (in-sample threshold): the check has teeth
    leaky = [s[i] > C.best_threshold(s, np.where(np.arange(30) == i, ~g, g)) for i in range(30)]
    assert any(p != (s[i] > C.best_threshold(s, g)) for i, p in enumerate(leaky))


def test_a_one_way_model_that_ranks_well_is_recovered():
    # every log-odds below 0 (the model always says no) but yes items score higher
    g = np.array([True, False] * 20)
    s = np.where(g, -1.0, -3.0) + np.linspace(0, 0.5, 40)
    m = C.variant_metrics(s, g, folds=5, seed=0, n_boot=300, boot_seed=0, level=0.95)
    assert m["auroc"] == 1.0 and m["cal_accuracy"] == 1.0 and m["cal_f1"] == 1.0
    assert m["cal_pct_pred_yes"] == 50.0 and -3 < m["cal_threshold_median"] < -1
    assert m["auroc_ci_low"] == m["auroc_ci_high"] == 1.0
    assert m["cal_folds"] == 5 and m["ci_level"] == 0.95


def items_frame(n=24, seed=0, variants=("zero_shot", "few_shot")):
    rng = np.random.default_rng(seed)
    rows = []
    for v in variants:
        gold = rng.random(n) < 0.5
        lp_yes = np.log(rng.uniform(0.01, 0.2, n)) + 0.7 * gold
        rows.append(pd.DataFrame({"variant": v, "id": [f"i{j}" for j in range(n)],
                                  "label": np.where(gold, "yes", "no"), "logprob_yes": lp_yes,
                                  "logprob_no": np.log(rng.uniform(0.3, 0.6, n))}))
    return pd.concat(rows, ignore_index=True)


def test_calibrated_metrics_are_deterministic_under_the_seeds():
    items = items_frame()
    a = C.calibrated_metrics(items, CAL, BOOT)
    pd.testing.assert_frame_equal(a, C.calibrated_metrics(items, CAL, BOOT))
    assert list(a.columns) == C.COLUMNS and list(a["variant"]) == ["zero_shot", "few_shot"]
    assert (a["auroc_ci_low"] <= a["auroc"]).all() and (a["auroc"] <= a["auroc_ci_high"]).all()
    b = C.calibrated_metrics(items, CAL, {**BOOT, "seed": 1})
    assert not np.allclose(a["auroc_ci_low"], b["auroc_ci_low"])
    assert np.allclose(a["auroc"], b["auroc"]) and np.allclose(a["cal_accuracy"], b["cal_accuracy"])


def test_calibrated_columns_join_the_models_metrics_table():
    items = items_frame()
    table = pd.DataFrame({"model": "m", "variant": ["zero_shot", "few_shot"], "n": 24, "f1": 0.1,
                          "accuracy": 0.5, "nll": 0.7, "pct_pred_yes": 1.0, "random_model": False,
                          "model_source": "x", "model_sha256": "ab", "model_quant": "",
                          "compute_device": "cpu", "compute_dtype": "float32"})
    out = C.with_calibrated(table, {"m": items.assign(model="m")}, CAL, BOOT)
    assert list(out.columns[:7]) == list(table.columns[:7])
    assert list(out.columns[7:7 + len(C.COLUMNS) - 1]) == C.COLUMNS[1:]
    assert out.columns[-1] == "compute_dtype" and len(out) == 2
    with pytest.raises(ValueError, match="no scored items"):
        C.with_calibrated(table, {"m": items[items["variant"] == "few_shot"]}, CAL, BOOT)


def test_bad_scores_and_labels_are_named():
    items = items_frame(n=4, variants=("zero_shot",))
    items.loc[2, "logprob_yes"] = -np.inf
    with pytest.raises(ValueError, match="item 'i2'.*not finite"):
        C.calibrated_metrics(items, CAL, BOOT)
    items = items_frame(n=4, variants=("zero_shot",))
    items.loc[1, "label"] = "maybe"
    with pytest.raises(ValueError, match="item 'i1'.*'maybe'"):
        C.calibrated_metrics(items, CAL, BOOT)


def test_paired_f1_differences_name_their_reference_and_are_paired():
    """A no-topic row is compared with the same model's row with the topic, a fine-tuned model's
    row with its base model's better prompted row, on the items both scored; sharing the items'
    difficulty, the paired interval is narrower than one from the two rows' own intervals."""
    rng = np.random.default_rng(0)
    n = 300
    gold = rng.random(n) < 0.5
    base = np.where(rng.random(n) < 0.7, gold, ~gold)             # 70% right
    tuned = np.where(rng.random(n) < 0.5, gold, base)             # half of its errors fixed

    def rows(model, variant, pred):
        return pd.DataFrame({"model": model, "variant": variant, "id": [f"i{i}" for i in range(n)],
                             "label": np.where(gold, "yes", "no"), "pred": np.where(pred, "yes", "no"),
                             "logprob_yes": np.where(pred, -0.1, -2.0), "logprob_no": -1.0})
    items = {"b": pd.concat([rows("b", "zero_shot", base), rows("b", "few_shot", ~gold),
                             rows("b", "zero_shot_no_topic", base)]),
             "t": rows("t", "fine_tuned", tuned)}

    def f1(p):
        tp, fp, fn = (gold & p).sum(), (~gold & p).sum(), (gold & ~p).sum()
        return 2 * tp / (2 * tp + fp + fn)
    table = pd.DataFrame({"model": ["b", "b", "b", "t"],
                          "variant": ["zero_shot", "few_shot", "zero_shot_no_topic", "fine_tuned"],
                          "f1": [f1(base), f1(~gold), f1(base), f1(tuned)],
                          "model_source": ["x", "x", "x", "finetune:b=x on data"]})
    out = C.with_calibrated(table, items, CAL, {"n": 2000, "seed": 0, "level": 0.95}).set_index(
        ["model", "variant"])
    assert out.loc[("b", "zero_shot"), "paired_ref"] == ""
    assert out.loc[("b", "zero_shot_no_topic"), "paired_ref"] == "b/zero_shot"
    assert out.loc[("b", "zero_shot_no_topic"), "paired_f1_diff"] == 0.0
    ft = out.loc[("t", "fine_tuned")]
    assert ft["paired_ref"] == "b/zero_shot" and ft["paired_n"] == n   # the better prompted row
    assert ft["paired_f1_diff"] == pytest.approx(f1(tuned) - f1(base))
    assert ft["paired_f1_ci_low"] < ft["paired_f1_diff"] < ft["paired_f1_ci_high"]
    b = out.loc[("b", "zero_shot")]
    unpaired = (ft["f1_ci_high"] - b["f1_ci_low"]) - (ft["f1_ci_low"] - b["f1_ci_high"])
    assert ft["paired_f1_ci_high"] - ft["paired_f1_ci_low"] < 0.6 * unpaired
