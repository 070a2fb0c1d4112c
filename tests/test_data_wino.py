"""Normalisers of WinoGrande, WSC273 and WinoWhat: demo mirror files and malformed input."""
from __future__ import annotations

import pytest

from csbench.data import tables, winogrande, winowhat, wsc273
from csbench.errors import InputError

HEADER = ("sentence,paraphrased_sentence,option1,option2,answer,gpt_category,gpt_category_names,"
          "in_original_experiment\r\n")


@pytest.fixture
def demo(repo):
    return repo / "resources" / "demo" / "mirror"


def test_tables_follow_configured_files():
    assert tables("winogrande", ["dev.jsonl", "dev-labels.lst", "test.jsonl"]) == {
        "dev": ["dev.jsonl", "dev-labels.lst"], "test": ["test.jsonl"]}
    assert tables("wsc273", ["WSCollection.xml"]) == {"wsc": ["WSCollection.xml"]}
    assert tables("winowhat", []) == {}


def test_winogrande_demo(demo):
    d = winogrande.normalise("dev", {"dev.jsonl": demo / "winogrande/dev.jsonl",
                                     "dev-labels.lst": demo / "winogrande/dev-labels.lst"})
    assert len(d) == 24 and set(d["answer"]) == {1, 2} and d["id"].is_unique
    t = winogrande.normalise("test", {"test.jsonl": demo / "winogrande/test.jsonl"})
    assert t["answer"].isna().all()


def test_winogrande_errors(tmp_path):
    p = tmp_path / "dev.jsonl"
    p.write_text('{"qID": "a", "sentence": "x _ y", "option1": "a", "option2": "b", "answer": "1"}\n'
                 '{"qID": "b", "sentence": "no blank", "option1": "a", "option2": "b"}\n')
    with pytest.raises(InputError, match=r"dev.jsonl:2: .*'_'"):
        winogrande.normalise("dev", {"dev.jsonl": p})
    p.write_text('{"qID": "a", "sentence": "x _ y", "option1": "a", "option2": "b", "answer": "1"}\n')
    lab = tmp_path / "dev-labels.lst"
    lab.write_text("2\n")
    with pytest.raises(InputError, match=r"dev-labels.lst:1: label 2 disagrees"):
        winogrande.normalise("dev", {"dev.jsonl": p, "dev-labels.lst": lab})
    lab.write_text("1\n2\n")
    with pytest.raises(InputError, match="2 labels for 1 items"):
        winogrande.normalise("dev", {"dev.jsonl": p, "dev-labels.lst": lab})


def test_wsc_demo_conversion(demo):
    w = wsc273.normalise("wsc", {"WSCollection.xml": demo / "wsc273/WSCollection.xml"})
    assert w.loc[0, "sentence"] == "The painter thanked the gardener because _ had watered the roses."
    assert (w.loc[0, "option1"], w.loc[0, "answer"]) == ("the painter", 2)
    assert w.loc[1, "answer"] == 1  # "A." is accepted
    assert w.loc[4, "sentence"].startswith("_ called") and w.loc[4, "option1"] == "Sue"
    assert w["in_wsc273"].all()


def test_wsc_errors(tmp_path):
    p = tmp_path / "WSCollection.xml"
    p.write_text("<collection>\n<schema>\n<text><txt1>a</txt1><pron>b</pron><txt2>c</txt2></text>\n"
                 "<answers><answer>x</answer><answer>y</answer></answers>\n"
                 "<correctAnswer>C</correctAnswer></schema></collection>")
    with pytest.raises(InputError, match=r"WSCollection.xml:2: schema 1"):
        wsc273.normalise("wsc", {"WSCollection.xml": p})
    p.write_text("<collection><schema>")
    with pytest.raises(InputError, match="invalid XML"):
        wsc273.normalise("wsc", {"WSCollection.xml": p})


def test_winowhat_demo_categories(demo):
    ww = winowhat.normalise("winowhat", {"WinoWhat.csv": demo / "winowhat/WinoWhat.csv"})
    assert len(ww) == 21
    rep = ww[ww["codes_repaired"]]
    assert len(rep) == 2 and rep.iloc[0]["categories"] == ["physical", "numerical", "spatial"]
    assert ww.loc[2, "categories"] == ["physical", "spatial"]
    assert (ww["in_original_experiment"] == 0).sum() == 1


def test_winowhat_errors(tmp_path):
    p = tmp_path / "WinoWhat.csv"
    p.write_text(HEADER + "a _ b,c _,x,y,3,1,['physical'],1\r\n")
    with pytest.raises(InputError, match=r"WinoWhat.csv:2: answer"):
        winowhat.normalise("winowhat", {"WinoWhat.csv": p})
    p.write_text(HEADER + "a _ b,c _,x,y,1,\"1, 2005\",,1\r\n")
    with pytest.raises(InputError, match="corrupt category codes"):
        winowhat.normalise("winowhat", {"WinoWhat.csv": p})
    p.write_text(HEADER + "a _ b,c _,x,y,1,2,['physical'],1\r\n")
    with pytest.raises(InputError, match="disagree"):
        winowhat.normalise("winowhat", {"WinoWhat.csv": p})
    p.write_text(HEADER + "a _ b,c _,x,y,1,2\r\n")
    with pytest.raises(InputError, match=r":2: expected 8 fields"):
        winowhat.normalise("winowhat", {"WinoWhat.csv": p})
