"""twentyq normaliser: original jsonl -> train/dev/test tables; bad lines name file and line."""
import json

import pytest

from csbench.data import twentyq
from csbench.errors import InputError


def test_tables_follow_configured_files():
    assert twentyq.tables(["twentyquestions-train.jsonl", "twentyquestions-test.jsonl"]) == {
        "train": ["twentyquestions-train.jsonl"], "test": ["twentyquestions-test.jsonl"]}


def test_demo_file_normalises(repo):
    p = repo / "resources/demo/mirror/twentyq/twentyquestions-train.jsonl"
    df = twentyq.normalise("train", {p.name: p})
    assert list(df.columns) == list(twentyq.COLUMNS)
    assert df["id"].iloc[0] == "train-1" and df["majority"].dtype == bool
    assert set(df["score"]) <= {0, 1, 2, 3}


@pytest.mark.parametrize("rec, msg", [
    ({"subject": "dog", "question": "Is it big?", "score": 3}, "majority"),
    ({"subject": "dog", "question": "Is it big?", "score": "x", "majority": True}, "score"),
    ({"subject": "", "question": "Is it big?", "score": 3, "majority": True}, "subject"),
    ({"subject": "dog", "question": "Is it big?", "score": 3, "majority": "maybe"}, "majority"),
])
def test_bad_records_name_file_and_line(tmp_path, rec, msg):
    p = tmp_path / "twentyquestions-dev.jsonl"
    good = {"subject": "cat", "question": "Is it small?", "score": 3, "majority": True, "answer": True}
    p.write_text(json.dumps(good) + "\n" + json.dumps(rec) + "\n")
    with pytest.raises(InputError, match=rf"{p.name}:2: .*{msg}"):
        twentyq.normalise("dev", {p.name: p})
