"""Issue 37: a data set of the registry, as its normalised table, turned into each task's input:
contamination probes and audit texts by kind; ProtoQA and QADS read the registry's tables."""
from pathlib import Path

import pandas as pd
import pytest

from csbench.audit.items import audit_items
from csbench.contamination.items import dataset_probes
from csbench.errors import InputError

REPO = Path(__file__).resolve().parents[1]
MIRROR = REPO / "resources/demo/mirror"

WINO = pd.DataFrame({"id": ["w1", "w2"],
                     "sentence": ["The cup fell off the _ .", "_ was tired."],
                     "option1": ["table", "Ann"], "option2": ["shelf", "Bob"],
                     "answer": [1, 2], "paraphrase": ["Off the _ fell the cup.", None]})


def test_winograd_probes_fill_each_option_and_the_paraphrase():
    p = dataset_probes("mywino", "winograd", WINO, "my.csv")
    w1 = p[p.item_id == "w1"].set_index("probe")["text"].to_dict()
    assert w1 == {"option1": "The cup fell off the table .", "option2": "The cup fell off the shelf .",
                  "left": "The cup fell off the", "right": ".",
                  "paraphrase_option1": "Off the table fell the cup.",
                  "paraphrase_option2": "Off the shelf fell the cup.",
                  "paraphrase_left": "Off the", "paraphrase_right": "fell the cup."}
    w2 = p[p.item_id == "w2"]
    assert set(w2.probe) == {"option1", "option2", "right"}  # blank first: no left half
    assert set(p.benchmark) == {"mywino"} and set(p.kind) == {"full", "part"}


@pytest.mark.parametrize("kind,role", [("yesno", "question"), ("protoqa", "question"),
                                       ("squad", "question"), ("text", "text")])
def test_question_and_text_kinds_search_the_role_as_written(kind, role):
    df = pd.DataFrame({"id": [1, "b"], role: ["Is it so?", "Name a fruit."], "x": [0, 1]})
    p = dataset_probes("ds", kind, df)
    assert p[["item_id", "probe", "kind", "text"]].values.tolist() == [
        ["1", role, "full", "Is it so?"], ["b", role, "full", "Name a fruit."]]


def test_probe_errors_name_the_table_and_row():
    with pytest.raises(InputError, match=r"my.csv.*option2"):
        dataset_probes("d", "winograd", WINO.drop(columns="option2"), "my.csv")
    bad = WINO.assign(sentence=["no blank here", "_ ok"])
    with pytest.raises(InputError, match=r"my.csv:1: .*w1.*one '_' blank"):
        dataset_probes("d", "winograd", bad, "my.csv")
    with pytest.raises(InputError, match="text"):
        dataset_probes("d", "text", pd.DataFrame({"id": ["a"]}), "t.jsonl")
    with pytest.raises(ValueError, match="unknown kind"):
        dataset_probes("d", "cloze", WINO)


def test_audit_text_by_kind():
    assert audit_items("winograd", WINO)["text"].tolist() == WINO["sentence"].tolist()
    yn = pd.DataFrame({"id": ["q1"], "question": ["Is ice cold?"], "answer": [True],
                       "topic": ["ice"]})
    got = audit_items("yesno", yn)
    assert got["text"].tolist() == ["Is ice cold?"] and got["topic"].tolist() == ["ice"]
    assert audit_items("text", pd.DataFrame({"id": [1], "text": ["t"]}))["text"].tolist() == ["t"]
    with pytest.raises(InputError, match=r"q.tsv.*question"):
        audit_items("yesno", yn.drop(columns="question"), "q.tsv")
