"""Issue 37: a data set of the registry, as its normalised table, turned into each task's input:
contamination probes and audit texts by kind; ProtoQA and QADS read the registry's tables."""
import re
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


# --- the tasks wired to the registry -------------------------------------------------------------

def _config(tmp_path, monkeypatch, datasets=None, **sections):
    from csbench.config import SCHEMA, validate

    monkeypatch.chdir(tmp_path)
    return validate({"datasets": datasets or {}, **sections}, SCHEMA)


def _protoqa_files(tmp_path):
    """The demo's ProtoQA dev questions as a user's CSV (question, answers, counts columns)."""
    import json

    from csbench.data.protoqa import normalise

    df = normalise("dev_crowdsourced",
                   {"dev.crowdsourced.jsonl": MIRROR / "protoqa/dev.crowdsourced.jsonl"})
    user = pd.DataFrame({"qid": df["id"], "q": df["question_normalized"],
                         "clusters": [json.dumps([list(c) for c in a]) for a in df["cluster_answers"]],
                         "n": [json.dumps([int(x) for x in c]) for c in df["cluster_counts"]]})
    user.to_csv(tmp_path / "pq.csv", index=False)
    return df


def test_protoqa_targets_a_users_set_scores_like_the_builtin(tmp_path, monkeypatch):
    from csbench.protoqa import check_targets
    from csbench.protoqa.data import load_questions, load_predictions
    from csbench.protoqa.scoring import Scorer, evaluate

    builtin = _protoqa_files(tmp_path)
    cfg = _config(tmp_path, monkeypatch, {"mypq": {
        "kind": "protoqa", "path": "pq.csv",
        "columns": {"id": "qid", "question": "q", "answers": "clusters", "counts": "n"}}},
        protoqa={"targets": ["protoqa_dev", "mypq"]})
    from csbench.datasets import check_config, read_params

    check_config(cfg)
    assert list(check_targets(cfg)) == ["protoqa_dev", "mypq"]  # in order, each checked
    assert check_targets(cfg)["mypq"]["path"] == "pq.csv"
    mine = load_questions(tmp_path / "pq.csv", read_params(cfg["datasets"]["mypq"]))
    ref = load_questions(MIRROR / "protoqa/dev.crowdsourced.jsonl")
    assert list(mine) == list(ref) == builtin["id"].tolist()
    preds = MIRROR / "protoqa/dev.predictions.demo.json"
    scored = [evaluate(load_predictions(preds), qs, Scorer("wordnet"), missing="skip")
              for qs in (mine, ref)]
    assert scored[0].equals(scored[1])     # cluster ids and raw answers do not enter wordnet
    # the built-in default: protoqa_dev, read as the normalised dev_crowdsourced table
    assert check_targets(_config(tmp_path, monkeypatch))["protoqa_dev"]["path"] == "protoqa:dev_crowdsourced"


@pytest.mark.parametrize("section,key,message", [
    ({"protoqa": {"targets": "nope"}}, "protoqa.targets", "is not a data set"),
    ({"protoqa": {"targets": "squad_v2_dev"}}, "protoqa.targets", "of kind squad, not protoqa"),
    ({"protoqa": {"targets": ["protoqa_dev", "squad_v2_dev"]}}, "protoqa.targets",
     "of kind squad, not protoqa"),
    ({"protoqa": {"targets": ["protoqa_dev", "protoqa_dev"]}}, "protoqa.targets", "none twice"),
    ({"qads": {"questions": {"table": "protoqa_dev"}}}, "qads.questions.table",
     "of kind protoqa, not squad"),
    ({"qads": {"questions": {"table": ["squad_v2_dev", "squad_v2_dev"]}}}, "qads.questions.table",
     "none twice"),
    ({"contamination": {"benchmarks": ["wsc", "mine"]}}, "contamination.benchmarks",
     "'mine' is not a data set"),
])
def test_a_task_naming_a_missing_or_wrong_kind_data_set_stops_at_parse_time(
        tmp_path, monkeypatch, section, key, message):
    from csbench.contamination.workflow import Plan
    from csbench.errors import ConfigError
    from csbench.protoqa import check_targets
    from csbench.qads.workflow import check_dataset

    cfg = _config(tmp_path, monkeypatch, **section)
    check = {"protoqa.targets": check_targets, "qads.questions.table": check_dataset,
             "contamination.benchmarks": Plan}[key]
    with pytest.raises(ConfigError, match=rf"config key '{re.escape(key)}'.*{message}"):
        check(cfg)


def test_qads_reads_a_users_squad_file_as_the_builtin_table(tmp_path, monkeypatch):
    import shutil

    from csbench.data.squad_v2 import read_squad
    from csbench.datasets import read_params
    from csbench.qads.workflow import check_dataset, read_questions, select_questions

    shutil.copy(MIRROR / "squad_v2/dev-v2.0.json", tmp_path / "my-squad.json")
    cfg = _config(tmp_path, monkeypatch, {"mysq": {"kind": "squad", "path": "my-squad.json",
                                                   "settings": {"limit": 5}}},
                  qads={"questions": {"table": "mysq"}})
    e = check_dataset(cfg)["mysq"]
    got = read_questions(tmp_path / "my-squad.json", read_params(e))
    every = read_squad(MIRROR / "squad_v2/dev-v2.0.json")
    assert len(got) == 5 and set(got["id"]) <= set(every["id"])   # the set's own sample
    assert list(got.columns) == list(every.columns)
    sel = select_questions(got, {"ids": None, "limit": None, "seed": 0})
    assert sel.equals(every[every["id"].isin(got["id"])].reset_index(drop=True))


def test_qads_scores_a_list_of_squad_sets_the_first_at_results_qads(tmp_path, monkeypatch):
    """qads.questions.table as a list: every set is checked, in order; the first keeps
    results/qads/ (verified, fine-tuned on), each other set is rewritten and answered under
    results/qads/sets/<name>/."""
    import shutil

    from csbench.qads.workflow import check_dataset, set_dir

    shutil.copy(MIRROR / "squad_v2/dev-v2.0.json", tmp_path / "my-squad.json")
    cfg = _config(tmp_path, monkeypatch, {"mysq": {"kind": "squad", "path": "my-squad.json"}},
                  qads={"questions": {"table": ["squad_v2_dev", "mysq"]}})
    names = list(check_dataset(cfg))
    assert names == ["squad_v2_dev", "mysq"]
    assert [set_dir(names, n) for n in names] == ["", "sets/mysq/"]


def test_contamination_plan_reads_data_sets_of_every_kind(tmp_path, monkeypatch):
    from csbench.contamination.workflow import Plan

    (tmp_path / "t.jsonl").write_text('{"id": "d1", "text": "A planted sentence."}\n')
    cfg = _config(tmp_path, monkeypatch, {"mytext": {"kind": "text", "path": "t.jsonl"}},
                  contamination={"benchmarks": ["winowhat", "twentyq_test", "wsc", "protoqa_dev",
                                                "mytext"]})
    plan = Plan(cfg)
    paths = {b: plan.table_path(b, lambda s, t: f"results/data/{s}/{t}.parquet")
             for b in cfg["contamination"]["benchmarks"]}
    assert paths == {"winowhat": "results/data/winowhat/winowhat.parquet",
                     "twentyq_test": "results/twentyq/split/test.parquet",
                     "wsc": "results/data/wsc273/wsc.parquet",
                     "protoqa_dev": "results/data/protoqa/dev_crowdsourced.parquet",
                     "mytext": "t.jsonl"}
    reads = plan.dataset_params()
    assert set(reads) == {"wsc", "protoqa_dev", "mytext"} and reads["mytext"]["kind"] == "text"


def test_audit_sides_may_be_data_sets(tmp_path, monkeypatch):
    from csbench.audit import workflow as W
    from csbench.audit.items import read_items
    from csbench.data import SOURCES

    (tmp_path / "a.tsv").write_text("q\tgold\tsubject\nIs ice cold?\tyes\tice\nIs fire hot?\t1\tfire\n")
    cfg = _config(tmp_path, monkeypatch,
                  {"myyn": {"kind": "yesno", "path": "a.tsv",
                            "columns": {"question": "q", "answer": "gold", "topic": "subject"}}},
                  audits={"mine": {"train": "csqa2_train", "test": "myyn", "short_field": "topic"}})
    audits = W.audit_config(cfg)
    ins = W.inputs(audits, SOURCES, lambda s, t: f"results/data/{s}/{t}.parquet", cfg["datasets"])
    assert ins["mine"] == {"train": "results/data/csqa2/train.parquet", "test": "a.tsv"}
    reads = W.dataset_reads(audits, cfg["datasets"])
    assert reads["mine"]["test"]["kind"] == "yesno" and reads["csqa2"] == {"train": None,
                                                                          "test": None}
    df = read_items(tmp_path / "a.tsv", reads["mine"]["test"])
    assert df[["id", "text", "topic"]].values.tolist() == [["1", "Is ice cold?", "ice"],
                                                           ["2", "Is fire hot?", "fire"]]
