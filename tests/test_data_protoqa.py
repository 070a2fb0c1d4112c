"""ProtoQA normaliser: tables from the original JSON-lines format; bad records name file and line."""
import json

import pytest

from csbench.data import protoqa
from csbench.errors import InputError

DEMO = "resources/demo/mirror/protoqa"


def test_tables_follow_configured_files():
    assert protoqa.tables(["dev.crowdsourced.jsonl", "test.questions.jsonl"]) == {
        "dev_crowdsourced": ["dev.crowdsourced.jsonl"], "test_questions": ["test.questions.jsonl"]}


def test_normalise_demo_tables(repo):
    dev = protoqa.normalise("dev_crowdsourced",
                            {"dev.crowdsourced.jsonl": repo / DEMO / "dev.crowdsourced.jsonl"})
    assert list(dev.columns) == list(protoqa.COLUMNS)
    r = dev.set_index("id").loc["r1q2"]
    assert r.question_normalized == "name something you might chew."
    assert list(r.cluster_counts) == [40, 30, 15, 5]
    assert "chewing gum" in list(r.cluster_answers[0])
    test = protoqa.normalise("test_questions",
                             {"test.questions.jsonl": repo / DEMO / "test.questions.jsonl"})
    assert len(test) == 2 and all(len(c) == 0 for c in test.cluster_ids)


@pytest.mark.parametrize("rec,msg", [
    ({"question": {"original": "x"}}, "metadata.id"),
    ({"metadata": {"id": "q"}, "question": {"original": "x"},
      "answers": {"clusters": {"c": {"count": -1, "answers": ["a"]}}}}, "bad count"),
    ({"metadata": {"id": "q"}, "question": {"original": "x"},
      "answers": {"clusters": {"c": {"count": 3}}}}, "answers"),
])
def test_bad_records_name_file_and_line(tmp_path, rec, msg):
    good = {"metadata": {"id": "ok"}, "question": {"original": "Name a thing."}}
    p = tmp_path / "dev.crowdsourced.jsonl"
    p.write_text(json.dumps(good) + "\n" + json.dumps(rec) + "\n")
    with pytest.raises(InputError, match=rf"dev.crowdsourced.jsonl:2: .*{msg}"):
        protoqa.normalise("dev_crowdsourced", {"dev.crowdsourced.jsonl": p})


def test_duplicate_ids_rejected(tmp_path):
    rec = json.dumps({"metadata": {"id": "q1"}, "question": {"original": "Name a thing."}})
    p = tmp_path / "test.questions.jsonl"
    p.write_text(rec + "\n" + rec + "\n")
    with pytest.raises(InputError, match=":2: duplicate question id"):
        protoqa.normalise("test_questions", {"test.questions.jsonl": p})
