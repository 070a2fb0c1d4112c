"""csqa2 normaliser: gzip JSON lines -> train/dev/test (test without answers)."""
import gzip
import json

import pytest

from csbench.data import csqa2
from csbench.errors import InputError


def test_demo_files(repo):
    d = repo / "resources/demo/mirror/csqa2"
    files = {f.name: f for f in d.iterdir()}
    assert set(csqa2.tables(list(files))) == {"train", "dev", "test"}
    train = csqa2.normalise("train", files)
    test = csqa2.normalise("test", files)
    assert list(train.columns) == list(csqa2.COLUMNS)
    assert set(train["answer"]) <= {"yes", "no"} and test["answer"].isna().all()


def test_bad_answer_names_line(tmp_path):
    p = tmp_path / "CSQA2_dev.json.gz"
    with gzip.open(p, "wt") as fh:
        fh.write(json.dumps({"id": "a", "question": "Q?", "answer": "yes"}) + "\n")
        fh.write(json.dumps({"id": "b", "question": "Q?", "answer": "maybe"}) + "\n")
    with pytest.raises(InputError, match=r"CSQA2_dev.json.gz:2"):
        csqa2.normalise("dev", {p.name: p})
