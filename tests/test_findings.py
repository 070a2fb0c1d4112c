"""The verdict rules of the Findings table (csbench.findings.judge, docs/reproduce.md) and the
interval helpers the task reports use."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from csbench import findings as F


@pytest.mark.parametrize("kwargs, verdict, why", [
    (dict(effect=5.0, lo=1.0, hi=9.0), F.REPRODUCED, "above no effect"),
    (dict(effect=-5.0, lo=-9.0, hi=-1.0), F.NOT_REPRODUCED, "opposite direction"),
    (dict(effect=2.0, lo=-1.0, hi=5.0), F.INCONCLUSIVE, "spans no effect"),
    (dict(effect=2.0, lo=0.0, hi=5.0), F.INCONCLUSIVE, "spans no effect"),   # touching 0 spans it
    (dict(effect=2.0), F.INCONCLUSIVE, "no interval"),
    (dict(), F.INCONCLUSIVE, "no effect could be computed"),
    (dict(effect=2.0, significant=True), F.REPRODUCED, "significant"),
    (dict(effect=-2.0, significant=True), F.NOT_REPRODUCED, "opposite"),
    (dict(effect=2.0, significant=False), F.INCONCLUSIVE, "not significant"),
    # the order of the rules: a missing arm first, then the trivial baseline, then the interval
    (dict(effect=5.0, lo=1.0, hi=9.0, missing="no fine-tuned arm"), F.NOT_RUN, "no fine-tuned arm"),
    (dict(effect=5.0, lo=1.0, hi=9.0, at_baseline="F1 60 ≤ 65"), F.INCONCLUSIVE,
     "at the trivial baseline: F1 60 ≤ 65"),
    (dict(missing="no corpus", at_baseline="x"), F.NOT_RUN, "no corpus"),
    # a null finding (the paper found no difference)
    (dict(effect=10.0, null_claim=True, significant=False), F.REPRODUCED, "no difference either"),
    (dict(effect=10.0, null_claim=True, significant=True), F.NOT_REPRODUCED, "finds a difference"),
    (dict(effect=-10.0, null_claim=True, significant=True), F.REPRODUCED, "no difference"),
])
def test_verdict_rules(kwargs, verdict, why):
    effect = kwargs.pop("effect", math.nan)
    lo, hi = kwargs.pop("lo", math.nan), kwargs.pop("hi", math.nan)
    v, reason = F.judge(effect, lo, hi, **kwargs)
    assert v == verdict and why in reason
    assert v in F.VERDICTS and (reason or v == F.REPRODUCED)


def test_trivial_baseline_compares_the_interval_low_end():
    assert F.at_baseline(64.0, 65.1) and F.at_baseline(65.1, 65.1)
    assert not F.at_baseline(66.0, 65.1)
    assert not F.at_baseline(math.nan, 65.1) and not F.at_baseline(50.0, math.nan)


def test_interval_helpers():
    d, lo, hi = F.difference_interval(60.0, 55.0, 65.0, 50.0, 46.0, 54.0)
    assert (d, lo, hi) == (10.0, 1.0, 19.0)
    # 1,177 pairs, 317 right only on the original, 231 only on the paraphrase: +7.3 points
    d, lo, hi = F.paired_interval(1177, 317, 231)
    assert round(100 * d, 1) == 7.3 and 0.02 < lo < d < hi < 0.13
    assert all(math.isnan(x) for x in F.paired_interval(0, 0, 0))


def test_anchor_by_id_in_percent():
    anchors = pd.DataFrame({"id": ["a.t1.x.y.acc", "a.t1.x.y.f1", "a.t2.x.y.n"],
                            "value": [0.6, 58.77, 815.0], "percent": [60.0, 58.77, math.nan]})
    assert F.anchor(anchors, "a.t1.x.y.acc") == 60.0 and F.anchor(anchors, "a.t1.x.y.f1") == 58.77
    assert F.anchor(anchors, "a.t2.x.y.n") == 815.0
    assert math.isnan(F.anchor(anchors, "missing")) and math.isnan(F.anchor(pd.DataFrame(), "x"))


def test_findings_table_orders_by_paper():
    rows = [F.Finding("QADS", "q", verdict=F.NOT_RUN, why="off"),
            F.Finding("20Q", "t", ours="58.2 [55.1, 61.0]", verdict=F.REPRODUCED)]
    md = F.findings_markdown(rows)
    assert md.index("| 20Q | t |") < md.index("| QADS | q |")
    assert "| 58.2 [55.1, 61.0] | – | **reproduced** |" in md and "**not run** (off)" in md
    assert F.Finding("20Q", "t").record()["effect"] is None
    import numpy as np
    rec = F.Finding("20Q", "t", n=np.int64(7), effect=np.float64("nan")).record()
    assert rec["n"] == 7 and type(rec["n"]) is int and rec["effect"] is None


def test_twentyq_findings_from_the_metrics_table():
    """A fine-tuned arm well above prompting and the always-yes F1 is reproduced; the topic
    ablation of a prompt at the always-yes F1 is inconclusive, and says so."""
    from csbench.twentyq.report import baselines, findings

    def row(variant, f1, lo, hi):
        return {"benchmark": "20Q test split", "model": "m", "variant": variant, "n": 2500, "f1": f1,
                "f1_ci_low": lo, "f1_ci_high": hi, "accuracy": 0.5, "gold_yes_share": 0.483}
    t = pd.DataFrame([row("zero_shot", 0.60, 0.57, 0.63), row("few_shot", 0.64, 0.61, 0.67),
                      row("few_shot_no_topic", 0.60, 0.57, 0.63), row("fine_tuned", 0.80, 0.78, 0.82),
                      row("fine_tuned_no_topic", 0.62, 0.59, 0.65)])
    base = baselines(t)
    assert base["f1"].round(3).tolist() == [0.651, 0.0] and base["accuracy"].round(3).tolist() == [0.483, 0.517]
    got = {f.claim: f for f in findings(t, None, None)}
    ft = got["fine-tuning beats prompting (F1)"]
    assert ft.verdict == F.REPRODUCED and round(ft.ci_low, 1) == 11.0  # 78 - 67
    topic = got["removing the topic lowers F1"]
    assert topic.verdict == F.REPRODUCED and topic.system.startswith("m, fine-tuned")
    t = t[~t["variant"].str.startswith("fine_tuned")]
    got = {f.claim: f for f in findings(t, None, None)}
    assert got["fine-tuning beats prompting (F1)"].verdict == F.NOT_RUN
    topic = got["removing the topic lowers F1"]  # few-shot 64 [61, 67]: 61 <= always-yes 65.1
    assert topic.verdict == F.INCONCLUSIVE and "always-yes F1 65.1" in topic.why


def test_winowhat_paired_drop_above_the_majority_class_is_reproduced():
    """The issue's 1.5B measurement: 61.1 -> 53.8 on 1,177 pairs (317 / 231 discordant), the
    originals' interval above the majority class: reproduced; at chance it is inconclusive."""
    from csbench.winowhat.report import findings, majority

    items = pd.DataFrame({"dataset": ["winogrande_dev"] * 4 + ["wsc"] * 2, "variant": "orig",
                          "label": [1, 2, 2, 1, 1, 2]})
    base = majority(items)
    assert base["accuracy"].tolist() == [0.5, 0.5]

    def head(acc, lo):
        return pd.DataFrame([{
            "model": "q", "wg_orig_acc": acc, "wg_orig_ci_low": lo, "wg_orig_ci_high": acc + 0.03,
            "wsc_orig_acc": 0.71, "wsc_orig_ci_low": 0.66, "wsc_orig_ci_high": 0.76, "wsc_orig_n": 273,
            "paired_n_pairs": 1177, "paired_acc_orig": 0.611, "paired_acc_transf": 0.538,
            "paired_orig_only_correct": 317, "paired_transf_only_correct": 231,
            "paired_p_value": 0.0003}])
    got = findings(head(0.618, 0.591), pd.DataFrame(), base, None)
    drop, cats, wsc = got
    assert drop.verdict == F.REPRODUCED and round(drop.effect, 1) == 7.3 and drop.n == 1177
    assert cats.verdict == F.NOT_RUN and wsc.verdict == F.REPRODUCED  # 66 - 64.9 > 0
    drop = findings(head(0.52, 0.49), pd.DataFrame(), base, None)[0]
    assert drop.verdict == F.INCONCLUSIVE and "majority class 50.0" in drop.why


def test_cluster_means_resample_clusters_with_all_their_items():
    from csbench.bootstrap import cluster_means

    # two scores on three clusters; the second has no item in cluster 2
    sums, sizes = [[1.0, 2.0], [0.0, 0.0], [3.0, 0.0]], [[1, 2], [1, 1], [1, 0]]
    m = cluster_means(sums, sizes, 500, 0)
    assert m.shape == (500, 2)
    assert ((m[:, 0] >= 0) & (m[:, 0] <= 3)).all()
    # the second score's mean over the items drawn: 2 of 3 items in cluster 0, 0 of 1 in cluster 1
    assert np.nanmax(m[:, 1]) == 1.0 and np.nanmin(m[:, 1]) == 0.0
    assert np.isnan(m[:, 1]).any()  # a resample of cluster 2 only holds no item of it
    assert cluster_means(np.zeros((0, 1)), np.zeros((0, 1)), 3, 0).shape == (3, 1)


def test_protoqa_finding_interval_from_the_questions_and_the_trivial_list():
    """Human > fine-tuned > zero-shot with an interval from the per-question scores; a zero-shot
    LM whose interval reaches the trivial list's score is at the trivial baseline."""
    from csbench.protoqa.report import findings

    rng = np.random.default_rng(0)
    qids = [f"q{i}" for i in range(40)]
    level = {"human": 0.8, "gpt2finetuned": 0.5, "gen-lm": 0.25, "trivial": 0.1}
    rows = [(s, "exact", q, "max_answers@10", min(1.0, max(0.0, v + rng.normal(0, 0.1))))
            for s, v in level.items() for q in qids]
    scores = pd.DataFrame(rows, columns=["system", "similarity", "question_id", "metric", "score"])
    means = scores.groupby("system")["score"].mean()
    t = pd.DataFrame([{"similarity": "exact", "system": s, "max_answers@10": means[s]}
                      for s in level])
    boot = {"n": 2000, "seed": 0, "level": 0.95}
    f = findings(t, None, scores, boot)[0]
    assert f.verdict == F.REPRODUCED and f.n == 40
    assert f.ci_low > 0 and f.ci_low < f.effect < f.ci_high
    assert f.baseline == f"most frequent answers of the other questions {100 * means['trivial']:.1f}"
    no_interval = findings(t, None)[0]
    assert no_interval.verdict == F.INCONCLUSIVE and "no interval" in no_interval.why
    t.loc[t["system"] == "trivial", "max_answers@10"] = means["gen-lm"]  # the LM at the list
    f = findings(t, None, scores, boot)[0]
    assert f.verdict == F.INCONCLUSIVE and "trivial list" in f.why


def test_protoqa_fine_tuned_arm_is_paired_with_its_base_model():
    """A fine-tuned model's sampling baseline is judged against its base model's on the same
    questions (its own row, not a zero-shot one), paired: a shift shared by both systems on a
    question does not widen the interval; the base model named by ``model_source``."""
    from csbench.findings import base_model
    from csbench.protoqa.report import findings, fine_tuned

    models = pd.DataFrame({"model": ["lm", "lm-ft"],
                           "model_source": ["pypi:x==1", "finetune:lm=pypi:x==1 on protoqa/t"]})
    tuned = fine_tuned(models)
    assert tuned == {"gen-lm-ft": "gen-lm"} and base_model("lm", None) == "lm"
    rng = np.random.default_rng(0)
    hard = rng.uniform(0, 0.6, 40)   # how hard each question is, shared by both systems
    rows = [(s, "exact", f"q{i}", "max_answers@10", h + d)
            for i, h in enumerate(hard) for s, d in (("gen-lm", 0.0), ("gen-lm-ft", 0.05))]
    scores = pd.DataFrame(rows, columns=["system", "similarity", "question_id", "metric", "score"])
    means = scores.groupby("system")["score"].mean()
    t = pd.DataFrame([{"similarity": "exact", "system": s, "max_answers@10": means[s]}
                      for s in means.index])
    out = findings(t, None, scores, {"n": 500, "seed": 0, "level": 0.95}, tuned=tuned)
    arm = [f for f in out if f.claim.startswith("fine-tuning beats")]
    zero_shot = [f for f in out if f.claim.startswith("human >")]
    assert len(arm) == 1 and arm[0].n == 40 and arm[0].verdict == F.REPRODUCED
    assert arm[0].effect == pytest.approx(5.0) and arm[0].ci_low == pytest.approx(5.0)
    assert [f.system for f in zero_shot] == ["exact matching, dev, lm zero-shot"]


def test_qads_findings_intervals_from_the_questions():
    """The synonym drop and the recovery share get intervals from the per-question F1, the
    original questions resampled with their rewrites (ids <original>-<n>)."""
    from csbench.qads.report import findings, item_table

    rng = np.random.default_rng(1)
    rows = []
    for i in range(60):
        rows.append(("m", "original", f"x{i}", float(rng.random() < 0.8)))
        for k in (1, 2):
            rows.append(("m", "one", f"x{i}-{k}", float(rng.random() < 0.5)))
    items = pd.DataFrame(rows, columns=["model", "questions", "id", "f1"])
    items = items.assign(training="none (as configured)",
                         group=[i.rsplit("-", 1)[0] for i in items["id"]])
    f1 = items.groupby("questions")["f1"].mean() * 100
    q = pd.DataFrame([{"model": "m", "training": "none (as configured)", "questions": s,
                       "f1": f1[s], "n": 60} for s in ("original", "one")])
    boot = {"n": 2000, "seed": 0, "level": 0.95}
    drop, rec = findings(q, pd.DataFrame(), None, items, boot)
    assert drop.verdict == F.REPRODUCED and drop.n == 60 and 0 < drop.ci_low < drop.ci_high
    assert rec.verdict == F.NOT_RUN
    assert item_table([], []).empty


def test_memorisation_row_from_membership_signals():
    """Without a corpus, WinoWhat's memorisation check is judged from the signals' Mann-Whitney
    tests: per model the smallest p of its signals decides the paper's null finding, and the
    row says the signals are evidence, not proof."""
    from csbench.contamination.signals_report import findings

    mw = pd.DataFrame({"model": ["a", "a", "b", "b"], "signal": ["loss", "minkpp"] * 2,
                       "n_correct": 60, "n_wrong": 40, "u": 0.0,
                       "auroc": [0.52, 0.61, 0.50, 0.51], "p_value": [0.3, 0.01, 0.6, 0.4]})
    a, b = findings(mw, "p 0.054 to 0.267", ["id"])
    assert a.system.startswith("a,") and a.verdict == F.NOT_REPRODUCED and a.n == 100
    assert "Min-K%++" in a.ours and a.effect == pytest.approx(0.11)
    assert b.verdict == F.REPRODUCED and "not proof" in b.why
    assert findings(pd.DataFrame(), "p", ["id"]) == []
