"""List scoring (Hungarian, Max Answers / Max Incorrect) and predictions files."""

import numpy as np
import pytest

from csbench.errors import InputError
from csbench.protoqa import METRICS
from csbench.protoqa.data import Question, load_predictions, load_questions
from csbench.protoqa.scoring import (Scorer, assignment_score, evaluate, limit_incorrect,
                                     score_question, summary_table)

DEMO = "resources/demo/mirror/protoqa"
Q = Question("q", "name something.", (("a", "aa"), ("b",), ("c",)), (10, 5, 1))


def test_duplicate_answer_earns_cluster_once():
    s = Scorer("exact").question(["a", "aa", "a"], Q)
    assert s["max_answers@all"] == pytest.approx(10 / 16)
    assert s["max_answers@1"] == pytest.approx(1.0)
    assert s["max_answers@3"] == pytest.approx(10 / 16)


def test_hungarian_picks_best_assignment():
    m = np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])   # answer 0 fits A or B, answer 1 only A
    assert assignment_score(m, [10, 5, 1]) == 15.0


def test_max_incorrect_stops_after_k_wrong():
    m = np.array([[0.0, 0, 0], [0, 0, 0], [1, 0, 0], [0, 0, 0], [0, 1, 0]])
    assert len(limit_incorrect(m, 1)) == 1
    assert len(limit_incorrect(m, 2)) == 2
    assert len(limit_incorrect(m, 3)) == 4
    s = Scorer("exact").question(["x", "y", "a", "z", "b"], Q)
    assert s["max_incorrect@1"] == 0.0
    assert s["max_incorrect@3"] == pytest.approx(10 / 16)
    assert s["max_incorrect@5"] == pytest.approx(15 / 16)


def test_oracle_matches_ideal_for_clean_clusters():
    m = np.eye(3)
    assert score_question(m, m, [10, 5, 1]) == score_question(m, None, [10, 5, 1])


def test_empty_predictions_score_zero():
    assert set(Scorer("exact").question([], Q).values()) == {0.0}


def test_both_prediction_formats(repo):
    p1 = load_predictions(repo / DEMO / "dev.predictions.demo.json")
    p2 = load_predictions(repo / DEMO / "dev.predictions.demo.jsonl")
    assert p1.answers["r1q3"] == [] and "r9q9" in p1.answers
    assert p2.answers["r1q2"][0] == "gum"
    assert p2.answers["r1q4"] == ["cloudiness", "smell", "thunder"]   # later line wins
    kinds = {i["kind"] for i in p1.issues} | {i["kind"] for i in p2.issues}
    assert {"empty_answer", "empty_list", "duplicate_id"} <= kinds


def test_bad_predictions_raise_with_line(tmp_path):
    p = tmp_path / "p.jsonl"
    p.write_text('{"q1": ["a"]}\n{"q2": "not a list"}\n')
    with pytest.raises(InputError, match="p.jsonl:2: "):
        load_predictions(p)
    p.write_text('{"q1": ["a"]}\n{oops\n')
    with pytest.raises(InputError, match="p.jsonl:2: invalid JSON"):
        load_predictions(p)


@pytest.mark.parametrize("sim", ["exact", "wordnet"])
def test_evaluate_demo_table(repo, sim):
    qs = load_questions(repo / DEMO / "dev.crowdsourced.jsonl")
    preds = load_predictions(repo / DEMO / "dev.predictions.demo.json")
    df = evaluate(preds, qs, Scorer(sim))
    assert list(df.columns) == ["question_id", "metric", "score"]
    assert set(df.question_id) == {"r1q1", "r1q2", "r1q3", "r1q4", "mean"}   # r9q9 unknown
    assert df.score.between(0, 1).all() and len(df) == 5 * len(METRICS)
    assert {i["kind"] for i in preds.issues} >= {"unknown_id", "missing_question"}
    zero = evaluate(load_predictions(repo / DEMO / "dev.predictions.demo.json"), qs, Scorer(sim),
                    missing="zero")
    assert "r1q5" in set(zero.question_id)
    table = summary_table({("demo", sim): df})
    assert list(table.columns) == ["metric", f"{sim}/demo"] and len(table) == len(METRICS)


def test_wordnet_beats_exact_on_synonyms():
    q = Question("q", "name a vehicle.", (("car",), ("bus",)), (8, 2))
    assert Scorer("exact").question(["automobile"], q)["max_answers@1"] == 0.0
    assert Scorer("wordnet").question(["automobile"], q)["max_answers@1"] == 1.0


def test_schema_documented_and_defaults(repo):
    import yaml

    from csbench.config import check_schema_documented

    path = repo / "workflow/schemas/protoqa.schema.yaml"
    assert check_schema_documented(path) == []
    from csbench.config import validate

    full = validate({"protoqa": {"generation": {"num_samples": 3}}},
                    repo / "workflow/schemas/config.schema.yaml")
    cfg = full["protoqa"]
    assert cfg["generation"]["temperature"] == 0.69 and cfg["generation"]["num_samples"] == 3
    assert cfg["similarities"] == ["exact", "wordnet", "embedding"]


def test_predictions_files_resolve_mirror_and_generation():
    from csbench.protoqa import predictions_files

    pq = {"predictions": {"a": "{mirror}/protoqa/a.json", "b": "/x/b.jsonl"},
          "generation": {"enabled": True, "models": None}}
    warned = []
    sets = ["protoqa_dev", "mine"]  # the configured files answer the first set's questions
    out = predictions_files(pq, sets, "m", {"lm1": "random:tiny-gpt2"}, warn=warned.append)
    assert out == {"protoqa_dev": {"a": "m/protoqa/a.json", "b": "/x/b.jsonl",
                                   "trivial": "results/protoqa/protoqa_dev/trivial/ranked.json",
                                   "gen-lm1": "results/protoqa/protoqa_dev/generated/lm1/ranked.json"},
                   "mine": {"trivial": "results/protoqa/mine/trivial/ranked.json",
                            "gen-lm1": "results/protoqa/mine/generated/lm1/ranked.json"}}
    out = predictions_files(pq, sets[:1], None, {}, warn=warned.append)
    assert out == {"protoqa_dev": {"b": "/x/b.jsonl",
                                   "trivial": "results/protoqa/protoqa_dev/trivial/ranked.json"}}
    assert len(warned) == 1
    with pytest.raises(ValueError):
        predictions_files(dict(pq, generation={"enabled": True, "models": ["nope"]}), sets, "m", {})
    with pytest.raises(ValueError, match="reserved"):
        predictions_files(dict(pq, predictions={"trivial": "/x/t.json"}), sets, "m", {})


def test_the_trivial_list_ranks_the_other_questions_answers():
    """Answers ranked by how many *other* questions received them (then by count, then
    alphabetically); a question's own answers never count for its own list."""
    from csbench.protoqa.data import Question
    from csbench.protoqa.trivial import frequent_answers

    def q(qid, *raw):
        return Question(qid, qid, (("x",),), (1,), raw=tuple(raw))

    qs = {"a": q("a", ("Money", 3), ("car", 1)), "b": q("b", ("money", 1), ("dog", 5)),
          "c": q("c", ("car", 2), ("money!", 1), ("zebra", 9)), "d": q("d", ("dog", 1))}
    out = frequent_answers(qs, top=3)
    # a: money in b, c (2); dog in b, d (2, count 6); car in c (1); zebra (1, count 9)
    assert out["a"] == ["dog", "money", "zebra"]
    # d: money in a, b, c (3); car in a, c (2); zebra and dog in one other each (9 > 5)
    assert out["d"] == ["money", "car", "zebra"]
    assert list(out) == ["a", "b", "c", "d"] and all(len(v) <= 3 for v in out.values())
    assert frequent_answers({"a": qs["a"]}, top=3) == {"a": []}
