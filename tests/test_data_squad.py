"""SQuAD 2.0 normaliser: one row per question, round trip to the official JSON layout."""
import json

import pytest

from csbench.data import squad_v2
from csbench.errors import InputError


@pytest.fixture(scope="module")
def demo_file(repo):
    return repo / "resources/demo/mirror/squad_v2/dev-v2.0.json"


def test_tables_follow_configured_files():
    assert squad_v2.tables(["dev-v2.0.json"]) == {"dev": ["dev-v2.0.json"]}
    assert squad_v2.tables(["dev-v2.0.json", "train-v2.0.json"])["train"] == ["train-v2.0.json"]


def test_rows_and_columns(demo_file):
    df = squad_v2.normalise("dev", {"dev-v2.0.json": demo_file})
    assert list(df.columns) == list(squad_v2.COLUMNS)
    assert len(df) == 19 and df["id"].is_unique
    impossible = df[df["is_impossible"]]
    assert len(impossible) == 3
    assert all(len(a) == 0 for a in impossible["answers"])
    assert all(len(a) == 1 for a in impossible["plausible_answers"])
    row = df[df["question"].str.startswith("In what country")].iloc[0]
    a = row["answers"][0]
    assert row["context"][a["answer_start"]:a["answer_start"] + len(a["text"])] == "France"


def test_round_trip_is_the_original_document(demo_file, tmp_path):
    df = squad_v2.normalise("dev", {"dev-v2.0.json": demo_file})
    df.to_parquet(tmp_path / "t.parquet")
    import pandas as pd

    back = squad_v2.to_squad_json(pd.read_parquet(tmp_path / "t.parquet"))
    assert back == json.loads(demo_file.read_text())


def test_bad_input_names_the_file(tmp_path):
    p = tmp_path / "dev-v2.0.json"
    p.write_text('{"version": "v2.0", "data": [\n{"title": "x"}]}')
    with pytest.raises(InputError, match="dev-v2.0.json.*paragraphs"):
        squad_v2.read_squad(p)
    p.write_text('{"version": "v2.0",\n "data": [}')
    with pytest.raises(InputError, match=r"dev-v2.0.json:2"):
        squad_v2.read_squad(p)
