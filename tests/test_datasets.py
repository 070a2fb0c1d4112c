"""The data set registry (csbench.datasets): every kind read from every file format into its
normalised table, the built-ins as entries, and bad input stopped naming the key or the line."""
from __future__ import annotations

import gzip
import json

import pandas as pd
import pytest

from csbench.config import SCHEMA, validate
from csbench.datasets import KINDS, check_config, input_path, names, read_dataset, read_params
from csbench.errors import ConfigError, InputError


def config(tmp_path, **entries):
    cfg = validate({"datasets": entries}, SCHEMA)
    return cfg


def write(path, text):
    path.write_text(text)
    return str(path)


WINO_CSV = ("text,a,b,label,cat,para\n"
            "The cup fell off the shelf because _ was unstable.,the cup,the shelf,2,physical,"
            "Because _ was unstable the cup fell off the shelf.\n"
            "Ann thanked Mary because _ had helped.,Ann,Mary,Mary,social;temporal,\n")


def test_winograd_csv_with_renamed_columns(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "w.csv", WINO_CSV)
    cfg = config(tmp_path, mine={"kind": "winograd", "path": "w.csv", "columns": {
        "sentence": "text", "option1": "a", "option2": "b", "answer": "label", "categories": "cat",
        "paraphrase": "para"}})
    check_config(cfg)
    df = read_dataset("mine", cfg)
    assert list(df.columns) == list(KINDS["winograd"].columns)
    assert df["id"].tolist() == ["1", "2"]              # no id role: positions
    assert df["answer"].tolist() == [2, 2]              # "Mary" is option2
    assert df["categories"].tolist() == [["physical"], ["social", "temporal"]]
    assert df["paraphrase"].tolist()[0].startswith("Because _")
    assert df["paraphrase"].isna().tolist() == [False, True]


@pytest.mark.parametrize("fmt", ["jsonl", "jsonl.gz", "json", "tsv", "parquet"])
def test_yesno_in_every_format(tmp_path, monkeypatch, fmt):
    monkeypatch.chdir(tmp_path)
    recs = [{"qid": "a1", "q": "Is ice cold?", "gold": "TRUE", "subject": "ice", "part": "train"},
            {"qid": "a2", "q": "Is fire cold?", "gold": "no", "subject": "fire", "part": "dev"},
            {"qid": "a3", "q": "Can fish swim?", "gold": "1", "subject": "fish", "part": "dev"}]
    path = tmp_path / f"y.{fmt}"
    if fmt.startswith("jsonl"):
        text = "".join(json.dumps(r) + "\n" for r in recs)
        if fmt.endswith(".gz"):
            path.write_bytes(gzip.compress(text.encode()))
        else:
            path.write_text(text)
    elif fmt == "json":
        path.write_text(json.dumps(recs, indent=1))
    elif fmt == "tsv":
        pd.DataFrame(recs).to_csv(path, sep="\t", index=False)
    else:
        pd.DataFrame(recs).to_parquet(path)
    cfg = config(tmp_path, facts={"kind": "yesno", "path": path.name, "columns": {
        "id": "qid", "question": "q", "answer": "gold", "topic": "subject", "split": "part"}})
    check_config(cfg)
    df = read_dataset("facts", cfg)
    assert df.to_dict("list") == {"id": ["a1", "a2", "a3"], "question": [r["q"] for r in recs],
                                  "answer": ["yes", "no", "yes"], "topic": ["ice", "fire", "fish"],
                                  "split": ["train", "dev", "dev"]}


def test_yesno_sample_keeps_train_rows(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rows = [f"q{i}\tQuestion {i}?\t{'yes' if i % 2 else 'no'}\t{'train' if i < 3 else 'test'}"
            for i in range(10)]
    write(tmp_path / "y.tsv", "id\tquestion\tanswer\tsplit\n" + "\n".join(rows) + "\n")
    cfg = config(tmp_path, y={"kind": "yesno", "path": "y.tsv", "settings": {"limit": 4, "seed": 1}})
    df = read_dataset("y", cfg)
    assert (df["split"] == "train").sum() == 3 and (df["split"] == "test").sum() == 4
    assert df["id"].tolist() == sorted(df["id"].tolist(), key=lambda s: int(s[1:]))  # file order


def test_protoqa_columns_and_native_and_text(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "p.csv", 'question,answers,counts\n"Name a pet.","[[""dog"", ""puppy""], ""cat""]","[30, 12]"\n')
    native = {"metadata": {"id": "r1q1", "source": "x"}, "question": {"original": "Name a fruit."},
              "answers": {"clusters": {"r1q1.0": {"answers": ["apple"], "count": 5}}, "raw": {}}}
    write(tmp_path / "n.jsonl", json.dumps(native) + "\n")
    write(tmp_path / "t.jsonl", '{"doc": "d1", "body": "Some text."}\n')
    cfg = config(tmp_path, p={"kind": "protoqa", "path": "p.csv"},
                 n={"kind": "protoqa", "path": "n.jsonl"},
                 t={"kind": "text", "path": "t.jsonl", "columns": {"id": "doc", "text": "body"}})
    check_config(cfg)
    p = read_dataset("p", cfg)
    assert p.loc[0, "cluster_answers"] == [["dog", "puppy"], ["cat"]]
    assert p.loc[0, "cluster_counts"] == [30, 12]
    assert list(p.columns) == list(KINDS["protoqa"].columns)
    n = read_dataset("n", cfg)
    assert n.loc[0, "id"] == "r1q1" and n.loc[0, "cluster_answers"] == [["apple"]]
    assert read_dataset("t", cfg).to_dict("list") == {"id": ["d1"], "text": ["Some text."]}


def test_squad_json(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    doc = {"version": "v2.0", "data": [{"title": "T", "paragraphs": [{"context": "Paris is in France.", "qas": [
        {"id": "q1", "question": "Where is Paris?", "is_impossible": False,
         "answers": [{"text": "France", "answer_start": 12}]}]}]}]}
    write(tmp_path / "s.json", json.dumps(doc))
    cfg = config(tmp_path, s={"kind": "squad", "path": "s.json"})
    check_config(cfg)
    df = read_dataset("s", cfg)
    assert df.loc[0, "id"] == "q1" and list(df.columns) == list(KINDS["squad"].columns)


def test_where_keeps_the_records_with_the_values_ids_by_position_kept(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "w.csv", WINO_CSV)
    pd.DataFrame({"sentence": ["A or B: _.", "C or D: _.", "E or F: _."], "option1": ["A", "C", "E"],
                  "option2": ["B", "D", "F"], "answer": [1, 2, 1], "keep": [True, False, True],
                  "n": [1, 2, 1]}).to_parquet(tmp_path / "w.parquet")
    wino = {"sentence": "text", "option1": "a", "option2": "b", "answer": "label"}
    cfg = config(tmp_path, c={"kind": "winograd", "path": "w.csv", "columns": wino,
                              "settings": {"where": {"cat": "social;temporal"}}},
                 p={"kind": "winograd", "path": "w.parquet", "settings": {"where": {"keep": True}}},
                 n={"kind": "winograd", "path": "w.parquet", "settings": {"where": {"n": 1, "keep": True},
                                                                          "limit": 1}},
                 none={"kind": "winograd", "path": "w.parquet", "settings": {"where": {"keep": 1}}})
    check_config(cfg)
    assert read_dataset("c", cfg)["id"].tolist() == ["2"]    # the file's second record
    assert read_dataset("p", cfg)["id"].tolist() == ["1", "3"]
    assert len(read_dataset("n", cfg)) == 1                  # filtered, then sampled
    with pytest.raises(InputError, match=r"no record has \{'keep': 1\}"):  # 1 is not True
        read_dataset("none", cfg)


@pytest.mark.parametrize("entry, key", [
    ({"path": "w.csv", "settings": {"where": {"nope": "x"}}}, "datasets.mine.settings.where.nope"),
    ({"path": "w.csv", "settings": {"where": {"cat": True}}}, "datasets.mine.settings.where.cat"),
    ({"path": "wsc273:wsc", "settings": {"where": {"wsc273": True}}}, "datasets.mine.settings.where.wsc273"),
])
def test_bad_where_stops_naming_the_key(tmp_path, monkeypatch, entry, key):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "w.csv", WINO_CSV)
    entry = {"kind": "winograd", "columns": {"sentence": "text", "option1": "a", "option2": "b",
                                             "answer": "label"}, **entry}
    with pytest.raises(ConfigError, match=f"'{key}'"):
        check_config(validate({"datasets": {"mine": entry}}, SCHEMA))


def test_builtins_are_entries_of_the_registry():
    cfg = validate({"datasets": {"csqa2": {"settings": {"limit": 5}}}}, SCHEMA)
    assert {"winogrande_dev", "winogrande_test", "wsc"} <= set(names(cfg, "winograd"))
    assert {"csqa2", "csqa2_train"} <= set(names(cfg, "yesno"))
    assert cfg["datasets"]["csqa2"]["settings"] == {"limit": 5, "seed": 0, "fewshot": "csqa2_train",
                                                    "where": None}
    assert read_params(cfg["datasets"]["wsc"])["settings"]["where"] == {"in_wsc273": True}
    assert "where" not in read_params(cfg["datasets"]["csqa2"])["settings"]  # no filter: no key
    assert input_path(cfg["datasets"]["csqa2"]) == "results/data/csqa2/dev.parquet"
    assert read_params(cfg["datasets"]["csqa2"])["columns"]["topic"] == "topic_prompt"
    check_config(cfg)  # tables of sources: checked when a job reads them


@pytest.mark.parametrize("entry, key", [
    ({"kind": "winogrand", "path": "w.csv"}, "datasets.mine.kind"),
    ({"path": "w.csv"}, "datasets.mine.kind"),
    ({"kind": "winograd"}, "datasets.mine.path"),
    ({"kind": "winograd", "path": "nothere.csv"}, "datasets.mine.path"),
    ({"kind": "winograd", "path": "w.xlsx"}, "datasets.mine.path"),
    ({"kind": "winograd", "path": "w.csv", "columns": {"question": "text"}}, "datasets.mine.columns.question"),
    ({"kind": "winograd", "path": "w.csv"}, "datasets.mine.columns"),  # no column 'sentence'
    ({"kind": "winograd", "path": "w.csv", "columns": {"sentence": "text", "option1": "a", "option2": "b",
                                                       "answer": "gold"}}, "datasets.mine.columns.answer"),
    ({"kind": "yesno", "path": "w.csv", "settings": {"fewshot": "nope"}}, "datasets.mine.settings.fewshot"),
])
def test_bad_entries_stop_naming_the_key(tmp_path, monkeypatch, entry, key):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "w.csv", WINO_CSV)
    write(tmp_path / "w.xlsx", "x")
    with pytest.raises(ConfigError, match=f"'{key}'"):
        check_config(validate({"datasets": {"mine": entry}}, SCHEMA))


WINO = {"sentence": "text", "option1": "a", "option2": "b", "answer": "label"}


@pytest.mark.parametrize("body, line, msg", [
    ("The _ sat.,cat,dog,3\n", 2, "answer must be 1, 2"),
    ("The cat sat.,cat,dog,1\n", 2, "exactly one '_'"),
    ("The _ sat.,cat, ,1\n", 2, "option2 is empty"),
    ("The _ sat.,cat,cat,cat\n", 2, "both options"),
    ('"The _\nsat.",cat,dog,1\nThe _ ran.,cat\n', 4, "2 fields, the header has 4"),
])
def test_bad_winograd_rows_name_file_and_line(tmp_path, monkeypatch, body, line, msg):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "w.csv", "text,a,b,label\n" + body)
    cfg = config(tmp_path, mine={"kind": "winograd", "path": "w.csv", "columns": WINO})
    with pytest.raises(InputError, match=msg) as err:
        read_dataset("mine", cfg)
    assert err.value.path.endswith("w.csv") and err.value.line == line


@pytest.mark.parametrize("recs, line, msg", [
    ([{"question": "Q?", "answer": "maybe"}], 1, "answer must be yes/no"),
    ([{"question": "Q?", "answer": "yes", "id": "x"}, {"question": "R?", "answer": "no", "id": "x"}], 2,
     "duplicate id 'x' \\(first at line 1\\)"),
    ([{"question": "Q?", "answer": "yes"}, {"answer": "no"}], 2, "no column 'question'"),
    ([{"question": 5, "answer": "yes"}], 1, "question must be text"),
    ([{"question": "Q?", "answer": "yes", "split": "val"}], 1, "split must be train, dev or test"),
])
def test_bad_yesno_rows_name_file_and_line(tmp_path, monkeypatch, recs, line, msg):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "y.jsonl", "".join(json.dumps(r) + "\n" for r in recs))
    cfg = config(tmp_path, y={"kind": "yesno", "path": "y.jsonl"})
    with pytest.raises(InputError, match=msg) as err:
        read_dataset("y", cfg)
    assert err.value.line == line


def test_bad_parquet_row_is_named_by_row(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    pd.DataFrame({"text": ["ok", ""]}).to_parquet(tmp_path / "t.parquet")
    cfg = config(tmp_path, t={"kind": "text", "path": "t.parquet"})
    with pytest.raises(InputError, match="row 2: text is empty"):
        read_dataset("t", cfg)


def test_invalid_utf8_and_truncated_json_name_the_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.csv").write_bytes(b"text\nfine\n\xff\xfe bad\n")
    write(tmp_path / "t.jsonl", '{"text": "fine"}\n{"text": "cut')
    write(tmp_path / "h.tsv", "text\ttext\nx\ty\n")
    cfg = config(tmp_path, c={"kind": "text", "path": "t.csv"}, j={"kind": "text", "path": "t.jsonl"},
                 h={"kind": "text", "path": "h.tsv"})
    with pytest.raises(InputError) as err:
        read_dataset("c", cfg)
    assert err.value.line == 3
    with pytest.raises(InputError, match="invalid JSON") as err:
        read_dataset("j", cfg)
    assert err.value.line == 2
    with pytest.raises(InputError, match="more than once") as err:
        read_dataset("h", cfg)
    assert err.value.line == 1


def test_winowhat_names_winograd_sets_only():
    from csbench.winowhat.workflow import inputs, sets

    cfg = validate({"datasets": {"mine": {"kind": "winograd", "path": "w.csv"}}}, SCHEMA)
    ww = {"datasets": ["mine", "wsc"], "user_files": {"wsc": "u.csv", "winogrande_test": None}}
    names = sets(ww, cfg["datasets"])
    assert names == ["winogrande_dev", "mine", "wsc"]  # winogrande_dev always, first
    assert inputs(ww, names, lambda s, t: f"{s}/{t}", lambda n: f"file:{n}") == {
        "winowhat": "winowhat/winowhat", "set_winogrande_dev": "file:winogrande_dev",
        "set_mine": "file:mine", "set_wsc": "file:wsc", "user_wsc": "u.csv"}
    with pytest.raises(ValueError, match="'csqa2' is a yesno data set"):
        sets({"datasets": ["csqa2"]}, cfg["datasets"])
    cfg = validate({"datasets": {"wsc": {"columns": {"paraphrase": "p"}}}}, SCHEMA)
    with pytest.raises(ValueError, match="datasets.wsc.columns.paraphrase: .* winowhat.user_files"):
        sets({"datasets": ["wsc"]}, cfg["datasets"])
