"""com2sense normaliser: JSON arrays + pair id maps -> train/dev/test with pair ids."""
import json

import pytest

from csbench.data import com2sense
from csbench.errors import InputError


def test_demo_files_with_pairs(repo):
    d = repo / "resources/demo/mirror/com2sense"
    files = {f.name: f for f in d.iterdir()}
    assert com2sense.tables(list(files))["train"] == ["train.json", "pair_id_train.json"]
    df = com2sense.normalise("train", files)
    assert list(df.columns) == list(com2sense.COLUMNS)
    pairs = dict(zip(df["id"], df["pair_id"]))
    assert all(pairs[pairs[i]] == i for i in pairs)
    assert df["label"].dtype == bool
    test = com2sense.normalise("test", files)
    assert test["label"].isna().all()


def test_pair_file_optional_and_bad_label(tmp_path):
    assert com2sense.tables(["dev.json"]) == {"dev": ["dev.json"]}
    p = tmp_path / "dev.json"
    p.write_text(json.dumps([{"id": "a", "sent": "S.", "label": "True"},
                             {"id": "b", "sent": "S.", "label": "Perhaps"}]))
    with pytest.raises(InputError, match="dev.json.*label"):
        com2sense.normalise("dev", {"dev.json": p})
    p.write_text("[{\"id\": \"a\",\n \"sent\": }]")
    with pytest.raises(InputError, match=r"dev.json:2"):
        com2sense.normalise("dev", {"dev.json": p})


def test_known_typo_in_released_dev_is_repaired(tmp_path):
    p = tmp_path / "dev.json"
    p.write_text(json.dumps([{"id": "a", "sent": "S.", "label": "True", "numeracy": "Flase"}]))
    df = com2sense.normalise("dev", {"dev.json": p})
    assert df["numeracy"].tolist() == [False]
