"""The official SQuAD 2.0 metric against hand-computed values."""
import pytest

from csbench.qads import metric


def dataset(qas):
    return [{"title": "t", "paragraphs": [{"context": "c", "qas": qas}]}]


QAS = [
    {"id": "a", "question": "?", "answers": [{"text": "the Eiffel Tower", "answer_start": 0},
                                               {"text": "Eiffel Tower in Paris", "answer_start": 0}]},
    {"id": "b", "question": "?", "answers": [{"text": "in 1998", "answer_start": 0}]},
    {"id": "c", "question": "?", "answers": []},
    {"id": "d", "question": "?", "answers": []},
]


def test_normalisation_and_token_f1():
    assert metric.normalize_answer("The  Eiffel-Tower!") == "eiffeltower"
    assert metric.normalize_answer("An apple, a day") == "apple day"
    assert metric.compute_exact("the Eiffel Tower", "Eiffel Tower.") == 1
    # pred "tower in paris" vs gold "eiffel tower in paris": P=3/3, R=3/4 -> F1=6/7
    assert metric.compute_f1("Eiffel Tower in Paris", "Tower in Paris") == pytest.approx(6 / 7)
    assert metric.compute_f1("", "") == 1.0 and metric.compute_f1("", "x") == 0.0


def test_evaluate_hand_computed():
    preds = {"a": "Tower in Paris", "b": "1998", "c": "", "d": "something"}
    r = metric.evaluate(dataset(QAS), preds)
    # a: EM 0, F1 max(2/3*... ) -> vs "eiffel tower": P=1/3,R=1/2 -> 0.4; vs "eiffel tower in paris": 6/7
    # b: gold "in 1998" -> tokens [in, 1998], pred [1998]: P=1, R=1/2 -> 2/3; EM 0
    # c: no answer, predicted "" -> 1/1; d: predicted text -> 0/0
    assert r["total"] == 4
    assert r["exact"] == pytest.approx(25.0)
    assert r["f1"] == pytest.approx(100 * (6 / 7 + 2 / 3 + 1 + 0) / 4)
    assert r["HasAns_exact"] == 0.0 and r["HasAns_f1"] == pytest.approx(100 * (6 / 7 + 2 / 3) / 2)
    assert r["NoAns_exact"] == 50.0 and r["HasAns_total"] == 2 and r["NoAns_total"] == 2


def test_always_no_answer_and_best_threshold():
    preds = {q["id"]: "" for q in QAS}
    r = metric.evaluate(dataset(QAS), preds, {q: 0.0 for q in preds})
    assert (r["exact"], r["HasAns_exact"], r["NoAns_exact"]) == (50.0, 0.0, 100.0)
    assert r["best_exact"] == 50.0
    # answering a and b exactly when their no-answer score is low gives a better threshold
    preds = {"a": "Eiffel Tower", "b": "in 1998", "c": "x", "d": ""}
    na = {"a": -2.0, "b": -1.0, "c": 0.5, "d": 3.0}
    r = metric.evaluate(dataset(QAS), preds, na)
    assert r["exact"] == 75.0
    assert r["best_exact"] == 100.0 and r["best_exact_thresh"] == -1.0
    # with a threshold, c (na 0.5 > 0.0) counts as a correct no-answer
    r = metric.evaluate(dataset(QAS), preds, na, na_prob_thresh=0.0)
    assert r["exact"] == 100.0


def test_missing_predictions_are_skipped():
    r = metric.evaluate(dataset(QAS), {"a": "the eiffel tower"})
    assert r["total"] == 1 and r["exact"] == 100.0


def test_schema_documented(repo):
    from csbench.config import check_schema_documented, validate

    path = repo / "workflow/schemas/qads.schema.yaml"
    assert check_schema_documented(path) == []
    cfg = validate({}, path)
    assert cfg["wsd"]["method"] == "enhanced_lesk" and cfg["questions"]["limit"] is None
    assert "according to" in cfg["candidates"]["mwes"]


def test_compute_entry_of_a_predictions_file_is_ignored_by_the_metric_and_popped(tmp_path):
    """qads_predict records the compute device and dtype in its official-format predictions
    file (csbench.provenance.with_compute); the official metric looks up the data set's ids only,
    and qads_score pops the entry (a file written before has none: named, with --forcerun)."""
    from csbench.errors import InputError
    from csbench.provenance import COMPUTE_KEY, pop_compute, with_compute

    preds = {"a": "Tower in Paris", "b": "1998", "c": "", "d": "something"}
    na = {"a": 0.1, "b": -2.0, "c": 3.0, "d": 0.5}
    compute = {"compute_device": "cpu", "compute_dtype": "bfloat16"}
    stamped = with_compute(preds, compute)
    assert stamped[COMPUTE_KEY] == compute
    assert metric.evaluate(dataset(QAS), stamped, na) == metric.evaluate(dataset(QAS), preds, na)
    assert metric.evaluate(dataset(QAS), stamped) == metric.evaluate(dataset(QAS), preds)
    assert pop_compute(stamped, tmp_path / "p.json") == (preds, compute)
    for bad in (preds, {**preds, COMPUTE_KEY: {"compute_device": "cpu"}}):
        with pytest.raises(InputError) as exc:
            pop_compute(bad, tmp_path / "p.json")
        assert "p.json" in str(exc.value) and "--forcerun" in str(exc.value)


def test_item_scores_average_to_the_official_metric():
    """The per-question table behind the findings' intervals: its means are evaluate's scores."""
    preds = {"a": "Tower in Paris", "b": "1998", "c": "x", "d": ""}
    na = {"a": -2.0, "b": -1.0, "c": 0.5, "d": 3.0}
    for thresh in (1.0, 0.0):
        r = metric.evaluate(dataset(QAS), preds, na, na_prob_thresh=thresh)
        items = metric.item_scores(dataset(QAS), preds, na, na_prob_thresh=thresh)
        assert [i["id"] for i in items] == ["a", "b", "c", "d"]
        assert [i["has_answer"] for i in items] == [True, True, False, False]
        assert 100 * sum(i["f1"] for i in items) / 4 == pytest.approx(r["f1"])
        assert 100 * sum(i["exact"] for i in items) / 4 == pytest.approx(r["exact"])
