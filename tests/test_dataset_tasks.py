"""Issue 37: a dataset of the registry, as its normalised table of roles, turned into each task's
input: ProtoQA questions, QADS's SQuAD table, contamination probes and audit texts."""
from pathlib import Path

import pandas as pd
import pytest

from csbench.audit.items import audit_items
from csbench.contamination.items import dataset_probes, extract
from csbench.errors import InputError
from csbench.protoqa.data import questions_from_dataset, questions_from_frame
from csbench.qads.workflow import SQUAD_ROLES, squad_questions

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


def test_winograd_probes_equal_the_builtin_extraction_without_paraphrase():
    wg = WINO.drop(columns=["paraphrase", "answer"])
    mine = dataset_probes("winogrande_dev", "winograd", wg)
    assert mine.equals(extract("winogrande_dev", wg))


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


def _protoqa_builtin():
    from csbench.data.protoqa import normalise

    return normalise("dev_crowdsourced",
                     {"dev.crowdsourced.jsonl": MIRROR / "protoqa/dev.crowdsourced.jsonl"})


def test_protoqa_roles_table_gives_the_builtin_questions():
    df = _protoqa_builtin()
    roles = pd.DataFrame({"id": df["id"], "question": df["question_normalized"],
                          "answers": df["cluster_answers"], "counts": df["cluster_counts"],
                          "cluster_ids": df["cluster_ids"], "raw_answers": df["raw_answers"],
                          "raw_counts": df["raw_counts"]})
    assert questions_from_dataset(roles) == questions_from_frame(df)
    # through Parquet (list cells come back as arrays)
    path = Path(pytest.importorskip("tempfile").mkdtemp()) / "pq.parquet"
    roles.to_parquet(path)
    assert questions_from_dataset(pd.read_parquet(path)) == questions_from_frame(df)


def test_protoqa_roles_minimal_and_bad_rows():
    df = pd.DataFrame({"id": ["a", "b", "c"], "question": ["name a fruit", "name a colour", "q?"],
                       "answers": [[["apple", "apples"], ["pear"]], [["red"]], []],
                       "counts": [[3, 1], [5], []]})
    qs = questions_from_dataset(df, "my.jsonl")
    assert list(qs) == ["a", "b"]  # c: no clusters (question only)
    assert qs["a"].clusters == (("apple", "apples"), ("pear",)) and qs["a"].counts == (3, 1)
    assert qs["a"].cluster_ids == ("0", "1") and qs["a"].raw == ()
    with pytest.raises(InputError, match=r"my.jsonl:2: .*1 answer clusters but 2 counts"):
        questions_from_dataset(df.assign(counts=[[3, 1], [5, 1], []]), "my.jsonl")
    with pytest.raises(InputError, match=r":1: .*answer strings"):
        questions_from_dataset(df.assign(answers=[[["apple", ""], ["pear"]], [["red"]], []]),
                               "my.jsonl")
    with pytest.raises(InputError, match=r":2: .*counts must be integers"):
        questions_from_dataset(df.assign(counts=[[3, 1], [-1], []]), "my.jsonl")
    with pytest.raises(InputError, match="lacks column.*counts"):
        questions_from_dataset(df.drop(columns="counts"), "my.jsonl")


def test_squad_dataset_table_is_the_squad_v2_table():
    from csbench.data.squad_v2 import read_squad

    sq = read_squad(MIRROR / "squad_v2/dev-v2.0.json")
    assert squad_questions(sq).equals(sq)
    shuffled = sq[list(reversed(sq.columns))].drop(columns=["plausible_answers", "title"])
    got = squad_questions(shuffled)
    assert list(got.columns) == list(SQUAD_ROLES) and (got["title"] == "").all()
    assert got["plausible_answers"].map(len).eq(0).all()
    with pytest.raises(InputError, match=r"s.json.*context"):
        squad_questions(sq.drop(columns="context"), "s.json")
