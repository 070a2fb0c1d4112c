"""Issue 16: every malformed input is named (file and line) or reported, nothing is coerced or
dropped silently; results respect the umask; only transient download errors are retried; config
file errors name file and line; scoring a ProtoQA predictions file plans no model.

Fixtures are written here, per test (nothing from a mirror is committed). Each normaliser gets a
wrong-typed field, invalid UTF-8, a duplicated id and a truncated last line (docs/bad_input.md).
"""
from __future__ import annotations

import gzip
import json
import logging
import os
import stat
import subprocess
import sys
import urllib.error
from pathlib import Path

import pytest

from csbench import fetch, retry
from csbench.data import normalise
from csbench.errors import ChecksumError, ConfigError, InputError

REPO = Path(__file__).resolve().parents[1]


def names(exc: pytest.ExceptionInfo, path: Path, line: int | None) -> None:
    """The error names the file and (where given) the line, in the attribute and the message."""
    err = exc.value
    assert isinstance(err, InputError), repr(err)
    assert err.path == str(path), str(err)
    if line is not None:
        assert err.line == line, str(err)
        assert f"{path}:{line}:" in str(err)


def jl(*recs) -> str:
    return "".join(json.dumps(r) + "\n" for r in recs)


BAD_UTF8 = b"\xff\xfe bad"


# -- twentyq -----------------------------------------------------------------------------------

TQ = dict(subject="dog", question="Is it an animal?", answer=True, quality_labels=["good"] * 3,
          score=3, high_quality=True, labels=["always"] * 3, is_bad=False, true_votes=3,
          majority=True, subject_split_index=0, question_split_index=0)


def _tq(tmp_path, text: str | bytes):
    p = tmp_path / "twentyquestions-dev.jsonl"
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    return p, lambda: normalise("twentyq", "dev", {p.name: p})


@pytest.mark.parametrize("field,value", [("labels", "always"), ("score", "3"), ("score", 2.5),
                                         ("true_votes", "3"), ("high_quality", "yes"),
                                         ("question", 7)])
def test_twentyq_wrong_type(tmp_path, field, value):
    p, run = _tq(tmp_path, jl(TQ, dict(TQ, **{field: value})))
    with pytest.raises(InputError) as exc:
        run()
    names(exc, p, 2)
    assert field in str(exc.value)


def test_twentyq_invalid_utf8(tmp_path):
    p, run = _tq(tmp_path, jl(TQ).encode() + b'{"subject": "' + BAD_UTF8 + b'"}\n')
    with pytest.raises(InputError) as exc:
        run()
    names(exc, p, 2)
    assert "utf-8" in str(exc.value).lower()


def test_twentyq_has_no_source_id_so_repeats_get_distinct_line_ids(tmp_path):
    _, run = _tq(tmp_path, jl(TQ, TQ))
    assert list(run()["id"]) == ["dev-1", "dev-2"]


def test_twentyq_truncated_last_line(tmp_path):
    p, run = _tq(tmp_path, jl(TQ) + json.dumps(TQ)[:40])
    with pytest.raises(InputError) as exc:
        run()
    names(exc, p, 2)


def test_repeated_key_in_one_record_is_an_error(tmp_path):
    p, run = _tq(tmp_path, jl(TQ) + '{"subject": "a", "subject": "b"}\n')
    with pytest.raises(InputError) as exc:
        run()
    names(exc, p, 2)
    assert "twice" in str(exc.value)


# -- protoqa (targets) -------------------------------------------------------------------------

PQ = {"metadata": {"id": "r1q1", "source": "crowd"},
      "question": {"original": "Name a pet.", "normalized": "name a pet."},
      "answers": {"raw": {"dog": 3}, "clusters": {"r1q1.0": {"count": 3, "answers": ["dog"]}}}}


def _pq(tmp_path, text):
    p = tmp_path / "dev.crowdsourced.jsonl"
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    return p, lambda: normalise("protoqa", "dev_crowdsourced", {p.name: p})


def _pq2(qid="r1q2", **meta):
    return dict(PQ, metadata=dict(PQ["metadata"], id=qid, **meta))


@pytest.mark.parametrize("rec", [_pq2(source=5),
                                 dict(_pq2(), question={"original": "Q?", "normalized": ["q?"]})])
def test_protoqa_wrong_type(tmp_path, rec):
    p, run = _pq(tmp_path, jl(PQ, rec))
    with pytest.raises(InputError) as exc:
        run()
    names(exc, p, 2)


def test_protoqa_invalid_utf8(tmp_path):
    p, run = _pq(tmp_path, jl(PQ).encode() + BAD_UTF8 + b"\n")
    with pytest.raises(InputError) as exc:
        run()
    names(exc, p, 2)


def test_protoqa_duplicate_id(tmp_path):
    p, run = _pq(tmp_path, jl(PQ, PQ))
    with pytest.raises(InputError) as exc:
        run()
    names(exc, p, 2)


def test_protoqa_truncated_last_line(tmp_path):
    p, run = _pq(tmp_path, jl(PQ) + json.dumps(_pq2())[:-5])
    with pytest.raises(InputError) as exc:
        run()
    names(exc, p, 2)


# -- protoqa (predictions) ---------------------------------------------------------------------

def test_predictions_id_repeated_inside_one_json_object_is_an_issue_row(tmp_path):
    from csbench.protoqa.data import load_predictions

    p = tmp_path / "preds.json"
    p.write_text('{\n"r1q1": ["dog", ""],\n"r1q2": ["cat"],\n"r1q1": ["fish"]\n}\n')
    preds = load_predictions(p)
    kinds = [(i["kind"], i["question_id"], i["line"]) for i in preds.issues]
    assert ("empty_answer", "r1q1", None) in kinds          # the first list is still checked
    assert ("duplicate_id", "r1q1", 4) in kinds
    assert preds.answers["r1q1"] == ["fish"]                 # the later list is used (as documented)


def test_predictions_id_repeated_inside_one_json_line(tmp_path):
    from csbench.protoqa.data import load_predictions

    p = tmp_path / "preds.jsonl"
    p.write_text('{"r1q1": ["dog"]}\n{"r1q2": ["a"], "r1q2": ["b"]}\n')
    preds = load_predictions(p)
    assert [(i["kind"], i["line"]) for i in preds.issues] == [("duplicate_id", 2)]


def test_predictions_wrong_type_invalid_utf8_truncated(tmp_path):
    from csbench.protoqa.data import load_predictions

    p = tmp_path / "preds.jsonl"
    for content, line in ((b'{"r1q1": ["dog"]}\n{"r1q2": "cat"}\n', 2),
                          (b'{"r1q1": ["dog"]}\n{"r1q2": ["\xff"]}\n', 2),
                          (b'{"r1q1": ["dog"]}\n{"r1q2": ["ca', 2)):
        p.write_bytes(content)
        with pytest.raises(InputError) as exc:
            load_predictions(p)
        names(exc, p, line)


# -- winogrande --------------------------------------------------------------------------------

WG = {"qID": "q1", "sentence": "Sarah beat Maria so _ won.", "option1": "Sarah",
      "option2": "Maria", "answer": "1"}


def _wg(tmp_path, text):
    p = tmp_path / "dev.jsonl"
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    return p, lambda: normalise("winogrande", "dev", {p.name: p})


@pytest.mark.parametrize("field,value", [("option1", ["a", "b"]), ("option2", 3),
                                         ("qID", 17), ("sentence", 12), ("answer", [1])])
def test_winogrande_wrong_type(tmp_path, field, value):
    p, run = _wg(tmp_path, jl(WG, {**WG, "qID": "q2", field: value}))
    with pytest.raises(InputError) as exc:
        run()
    names(exc, p, 2)


@pytest.mark.parametrize("field,value", [("option1", ""), ("option2", "   "), ("option1", "\t\n")])
def test_winogrande_empty_option(tmp_path, field, value):
    p, run = _wg(tmp_path, jl(WG, {**WG, "qID": "q2", field: value}))
    with pytest.raises(InputError, match=f"{field} is (empty|only whitespace)") as exc:
        run()
    names(exc, p, 2)


def test_winogrande_invalid_utf8(tmp_path):
    p, run = _wg(tmp_path, jl(WG).encode() + b'{"qID": "q2", "sentence": "\xc3(_"}\n')
    with pytest.raises(InputError) as exc:
        run()
    names(exc, p, 2)


def test_winogrande_invalid_utf8_in_labels(tmp_path):
    p, _ = _wg(tmp_path, jl(WG))
    lab = tmp_path / "dev-labels.lst"
    lab.write_bytes(b"1\n\xff\n")
    with pytest.raises(InputError) as exc:
        normalise("winogrande", "dev", {p.name: p, lab.name: lab})
    names(exc, lab, 2)


def test_winogrande_duplicate_id(tmp_path):
    p, run = _wg(tmp_path, jl(WG, WG))
    with pytest.raises(InputError) as exc:
        run()
    names(exc, p, 2)


def test_winogrande_truncated_last_line(tmp_path):
    p, run = _wg(tmp_path, jl(WG) + json.dumps(dict(WG, qID="q2"))[:30])
    with pytest.raises(InputError) as exc:
        run()
    names(exc, p, 2)


# -- wsc273 ------------------------------------------------------------------------------------

def _schema(correct="A"):
    return ("<schema><text><txt1>The cat chased the dog because</txt1><pron>it</pron>"
            "<txt2>was hungry.</txt2></text><answers><answer>The cat</answer><answer>The dog"
            f"</answer></answers><correctAnswer>{correct}</correctAnswer><source>x</source>"
            "</schema>\n")


def _wsc(tmp_path, body: bytes, decl=b'<?xml version="1.0" encoding="UTF-8"?>\n'):
    p = tmp_path / "WSCollection.xml"
    p.write_bytes(decl + b"<collection>\n" + body)
    return p, lambda: normalise("wsc273", "wsc", {p.name: p})


def test_wsc_wrong_value(tmp_path):
    p, run = _wsc(tmp_path, (_schema() + _schema("C") + "</collection>\n").encode())
    with pytest.raises(InputError) as exc:
        run()
    names(exc, p, 4)


@pytest.mark.parametrize("answer", ["", "  "])
def test_wsc_empty_answer(tmp_path, answer):
    bad = _schema().replace("<answer>The dog</answer>", f"<answer>{answer}</answer>")
    p, run = _wsc(tmp_path, (_schema() + bad + "</collection>\n").encode())
    with pytest.raises(InputError, match="option2 is empty") as exc:
        run()
    names(exc, p, 4)


def test_wsc_invalid_utf8(tmp_path):
    p, run = _wsc(tmp_path, _schema().encode() + b"<schema>\xff</schema>\n</collection>\n")
    with pytest.raises(InputError) as exc:
        run()
    names(exc, p, 4)


def test_wsc_has_no_source_id_so_repeats_get_distinct_position_ids(tmp_path):
    _, run = _wsc(tmp_path, (_schema() + _schema() + "</collection>\n").encode())
    assert list(run()["id"]) == ["wsc-1", "wsc-2"]


def test_wsc_truncated(tmp_path):
    p, run = _wsc(tmp_path, (_schema() + _schema()[:60]).encode())
    with pytest.raises(InputError) as exc:
        run()
    names(exc, p, 4)


# -- winowhat ----------------------------------------------------------------------------------

WW_HEAD = ("sentence,paraphrased_sentence,option1,option2,answer,gpt_category,gpt_category_names,"
           "in_original_experiment\r\n")
WW_ROW = 'The cat beat the dog so _ won.,The winner was _.,cat,dog,1,"2, 4","[\'social\', \'temporal\']",1\r\n'


def _ww(tmp_path, body: bytes):
    p = tmp_path / "WinoWhat.csv"
    p.write_bytes(WW_HEAD.encode() + body)
    return p, lambda: normalise("winowhat", "winowhat", {p.name: p})


@pytest.mark.parametrize("row", [WW_ROW.replace(",1\r\n", ",yes\r\n"),
                                 WW_ROW.replace("dog,1,", "dog,one,")])
def test_winowhat_wrong_value(tmp_path, row):
    p, run = _ww(tmp_path, (WW_ROW + row).encode())
    with pytest.raises(InputError) as exc:
        run()
    names(exc, p, 3)


@pytest.mark.parametrize("row,field", [(WW_ROW.replace(",cat,dog,", ",,dog,"), "option1"),
                                       (WW_ROW.replace(",cat,dog,", ",cat,  ,"), "option2")])
def test_winowhat_empty_option(tmp_path, row, field):
    p, run = _ww(tmp_path, (WW_ROW + row).encode())
    with pytest.raises(InputError, match=f"{field} is (empty|only whitespace)") as exc:
        run()
    names(exc, p, 3)


def test_winowhat_invalid_utf8(tmp_path):
    p, run = _ww(tmp_path, WW_ROW.encode() + WW_ROW.encode().replace(b"cat", b"c\xe9t"))
    with pytest.raises(InputError) as exc:
        run()
    names(exc, p, 3)


def test_winowhat_has_no_source_id_so_repeats_get_distinct_row_ids(tmp_path):
    _, run = _ww(tmp_path, (WW_ROW + WW_ROW).encode())
    assert list(run()["id"]) == ["ww-1", "ww-2"]


@pytest.mark.parametrize("cut", [len(WW_ROW) - 18, len(WW_ROW) - 4])
def test_winowhat_truncated_last_line(tmp_path, cut):
    p, run = _ww(tmp_path, (WW_ROW + WW_ROW[:cut]).encode())
    with pytest.raises(InputError) as exc:
        run()
    names(exc, p, 3)


# -- squad_v2 ----------------------------------------------------------------------------------

def _squad_doc(qas2=None):
    qa1 = {"question": "Who?", "id": "q1", "answers": [{"text": "Ann", "answer_start": 0}],
           "is_impossible": False}
    qa2 = qas2 or {"question": "Why?", "id": "q2", "answers": [], "is_impossible": True,
                   "plausible_answers": []}
    return {"version": "v2.0", "data": [{"title": "T", "paragraphs": [
        {"context": "Ann ran.", "qas": [qa1, qa2]}]}]}


def _squad(tmp_path, doc=None, raw: bytes | None = None):
    p = tmp_path / "dev-v2.0.json"
    p.write_bytes(raw if raw is not None else json.dumps(doc, indent=1).encode())
    return p, lambda: normalise("squad_v2", "dev", {p.name: p})


def _line(p: Path, needle: str) -> int:
    return next(i for i, line in enumerate(p.read_text().splitlines(), 1) if needle in line)


@pytest.mark.parametrize("qa2", [
    {"question": "Why?", "id": "q2", "answers": [{"text": "Ann", "answer_start": "0"}]},
    {"question": "Why?", "id": "q2", "answers": [{"text": ["Ann"], "answer_start": 0}]},
    {"question": ["Why?"], "id": "q2", "answers": []},
    {"question": "Why?", "id": "q2", "answers": [], "is_impossible": "yes"},
])
def test_squad_wrong_type(tmp_path, qa2):
    p, run = _squad(tmp_path, _squad_doc(qa2))
    with pytest.raises(InputError) as exc:
        run()
    names(exc, p, _line(p, '"q2"'))


def test_squad_invalid_utf8(tmp_path):
    raw = json.dumps(_squad_doc(), indent=1).encode().replace(b"Ann ran.", b"Ann \xff ran.")
    p, run = _squad(tmp_path, raw=raw)
    with pytest.raises(InputError) as exc:
        run()
    names(exc, p, raw[:raw.index(b"\xff")].count(b"\n") + 1)


def test_squad_duplicate_id(tmp_path):
    p, run = _squad(tmp_path, _squad_doc({"question": "Why?", "id": "q1", "answers": []}))
    with pytest.raises(InputError) as exc:
        run()
    lines = [i for i, line in enumerate(p.read_text().splitlines(), 1) if '"q1"' in line]
    names(exc, p, lines[1])


def test_squad_truncated(tmp_path):
    raw = json.dumps(_squad_doc(), indent=1).encode()[:-30]
    p, run = _squad(tmp_path, raw=raw)
    with pytest.raises(InputError) as exc:
        run()
    names(exc, p, raw.count(b"\n") + 1)


# -- csqa2 -------------------------------------------------------------------------------------

CQ = {"id": "a1", "question": "Is water wet?", "answer": "yes", "confidence": 0.5,
      "topic_prompt": "water", "relational_prompt": "is"}


def _cq(tmp_path, text: bytes):
    p = tmp_path / "CSQA2_dev.json.gz"
    p.write_bytes(gzip.compress(text))
    return p, lambda: normalise("csqa2", "dev", {p.name: p})


@pytest.mark.parametrize("field,value", [("id", 17), ("confidence", "high"),
                                         ("topic_prompt", ["water"]), ("question", 3)])
def test_csqa2_wrong_type(tmp_path, field, value):
    p, run = _cq(tmp_path, jl(CQ, {**CQ, "id": "a2", field: value}).encode())
    with pytest.raises(InputError) as exc:
        run()
    names(exc, p, 2)


def test_csqa2_invalid_utf8_in_gzip(tmp_path):
    p, run = _cq(tmp_path, jl(CQ).encode() + b'{"id": "\xff"}\n')
    with pytest.raises(InputError) as exc:
        run()
    names(exc, p, 2)


def test_csqa2_duplicate_id(tmp_path):
    p, run = _cq(tmp_path, jl(CQ, CQ).encode())
    with pytest.raises(InputError) as exc:
        run()
    names(exc, p, 2)


def test_csqa2_truncated_last_line(tmp_path):
    p, run = _cq(tmp_path, (jl(CQ) + json.dumps(CQ)[:20]).encode())
    with pytest.raises(InputError) as exc:
        run()
    names(exc, p, 2)


# -- com2sense ---------------------------------------------------------------------------------

CS = {"id": "c1", "sent": "Ice is cold.", "domain": "physical", "scenario": "causal",
      "numeracy": "False", "label": "True"}


def _cs(tmp_path, items=None, raw: bytes | None = None):
    p = tmp_path / "dev.json"
    p.write_bytes(raw if raw is not None else json.dumps(items, indent=4).encode())
    return p, lambda: normalise("com2sense", "dev", {p.name: p})


@pytest.mark.parametrize("field,value", [("id", 5), ("label", ["True"]), ("sent", 1),
                                         ("domain", 2), ("numeracy", 0)])
def test_com2sense_wrong_type(tmp_path, field, value):
    p, run = _cs(tmp_path, [CS, {**CS, "id": "c2", field: value}])
    with pytest.raises(InputError) as exc:
        run()
    names(exc, p, 10)                       # the line where the second item starts


def test_com2sense_invalid_utf8(tmp_path):
    raw = json.dumps([CS, dict(CS, id="c2")], indent=4).encode().replace(b"Ice", b"\xffce", 1)
    p, run = _cs(tmp_path, raw=raw)
    with pytest.raises(InputError) as exc:
        run()
    names(exc, p, 4)


def test_com2sense_duplicate_id(tmp_path):
    p, run = _cs(tmp_path, [CS, CS])
    with pytest.raises(InputError) as exc:
        run()
    names(exc, p, 10)


def test_com2sense_truncated(tmp_path):
    raw = json.dumps([CS, dict(CS, id="c2")], indent=4).encode()[:-40]
    p, run = _cs(tmp_path, raw=raw)
    with pytest.raises(InputError) as exc:
        run()
    names(exc, p, raw.count(b"\n") + 1)


# -- wsd_eval ----------------------------------------------------------------------------------

XML = """<?xml version="1.0" encoding="UTF-8"?>
<corpus lang="en" source="senseval2">
<text id="d000">
<sentence id="d000.s000">
<wf lemma="the" pos="DET">The</wf>
<instance id="d000.s000.t000" lemma="art" pos="NOUN">art</instance>
<instance id="{second}" lemma="long" pos="ADJ">long</instance>
</sentence>
</text>
</corpus>
"""
KEY = "d000.s000.t000 art%1:09:00::\nd000.s000.t001 long%3:00:02::\n"


def _wsd(tmp_path, xml: bytes, key: bytes):
    base = tmp_path / "Evaluation_Datasets" / "senseval2"
    base.mkdir(parents=True, exist_ok=True)
    x, k = base / "senseval2.data.xml", base / "senseval2.gold.key.txt"
    x.write_bytes(xml)
    k.write_bytes(key)
    paths = {"Evaluation_Datasets/senseval2/senseval2.data.xml": x,
             "Evaluation_Datasets/senseval2/senseval2.gold.key.txt": k}
    return x, k, lambda: normalise("wsd_eval", "senseval2", paths)


def test_wsd_eval_ok(tmp_path):
    _, _, run = _wsd(tmp_path, XML.format(second="d000.s000.t001").encode(), KEY.encode())
    assert len(run()) == 2


@pytest.mark.parametrize("key", ["d000.s000.t000 art%1:09:00::\nd000.s000.t001 long%3:0\n",
                                 "d000.s000.t000 art%1:09:00::\nd000.s000.t001 long\n"])
def test_wsd_eval_bad_sense_key(tmp_path, key):
    _, k, run = _wsd(tmp_path, XML.format(second="d000.s000.t001").encode(), key.encode())
    with pytest.raises(InputError) as exc:
        run()
    names(exc, k, 2)


def test_wsd_eval_invalid_utf8_in_keys(tmp_path):
    _, k, run = _wsd(tmp_path, XML.format(second="d000.s000.t001").encode(),
                     KEY.encode() + b"d000.s000.t002 \xff%1:09:00::\n")
    with pytest.raises(InputError) as exc:
        run()
    names(exc, k, 3)


def test_wsd_eval_invalid_utf8_in_xml(tmp_path):
    x, _, run = _wsd(tmp_path, XML.format(second="d000.s000.t001").encode().replace(
        b">long<", b">l\xffng<"), KEY.encode())
    with pytest.raises(InputError) as exc:
        run()
    names(exc, x, 7)


def test_wsd_eval_duplicate_ids(tmp_path):
    x, _, run = _wsd(tmp_path, XML.format(second="d000.s000.t000").encode(), KEY.encode())
    with pytest.raises(InputError) as exc:
        run()
    names(exc, x, 7)
    _, k, run = _wsd(tmp_path, XML.format(second="d000.s000.t001").encode(),
                     (KEY + "d000.s000.t001 long%3:00:02::\n").encode())
    with pytest.raises(InputError) as exc:
        run()
    names(exc, k, 3)


def test_wsd_eval_truncated_xml(tmp_path):
    x, _, run = _wsd(tmp_path, XML.format(second="d000.s000.t001").encode()[:-30], KEY.encode())
    with pytest.raises(InputError) as exc:
        run()
    assert exc.value.path == str(x) and exc.value.line is not None


# -- finding 4: permissions --------------------------------------------------------------------

@pytest.mark.parametrize("mask", [0o022, 0o002, 0o077])
def test_outputs_respect_the_umask(tmp_path, mask):
    import pandas as pd

    from csbench.io import atomic_dir, atomic_open, write_json, write_parquet, write_tsv

    old = os.umask(mask)
    try:
        df = pd.DataFrame({"a": [1]})
        write_tsv(df, tmp_path / "t.tsv")
        write_parquet(df, tmp_path / "t.parquet")
        write_json({"a": 1}, tmp_path / "t.json")
        with atomic_open(tmp_path / "t.txt") as fh:
            fh.write("x")
        with atomic_dir(tmp_path / "model") as d:
            (d / "weights.bin").write_bytes(b"0")
            (d / "sub").mkdir(mode=0o700)
            fd = os.open(d / "sub" / "private.safetensors", os.O_CREAT | os.O_WRONLY, 0o600)
            os.close(fd)                        # (as transformers writes model.safetensors)
    finally:
        os.umask(old)
    for name in ("t.tsv", "t.parquet", "t.json", "t.txt"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o666 & ~mask, name
    assert stat.S_IMODE((tmp_path / "model").stat().st_mode) == 0o777 & ~mask
    assert stat.S_IMODE((tmp_path / "model" / "weights.bin").stat().st_mode) == 0o666 & ~mask
    assert stat.S_IMODE((tmp_path / "model" / "sub").stat().st_mode) == 0o777 & ~mask
    assert (stat.S_IMODE((tmp_path / "model" / "sub" / "private.safetensors").stat().st_mode)
            == 0o666 & ~mask)
    assert not list(tmp_path.glob(".*.part"))


def test_fetched_raw_files_respect_the_umask(tmp_path):
    m = tmp_path / "mirror" / "src"
    m.mkdir(parents=True)
    (m / "a.jsonl").write_bytes(b'{"x": 1}\n')
    old = os.umask(0o022)
    try:
        fetch.fetch_source("src", {"url": "http://invalid/", "archive": None,
                                   "files": {"a.jsonl": None}, "urls": {}},
                           tmp_path / "raw", mirror=str(tmp_path / "mirror"))
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "raw" / "a.jsonl").stat().st_mode) == 0o644


# -- finding 5: retry policy, archive members, file names ----------------------------------------

class _Resp:
    def __init__(self, data: bytes):
        self.data = data
        self.headers = {}  # no Content-Length: the download limit is checked while reading

    def read(self, n=-1):
        out, self.data = (self.data, b"") if n < 0 else (self.data[:n], self.data[n:])
        return out

    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


@pytest.fixture
def net(monkeypatch):
    """A fake network: ``net.plan`` is a list of exceptions or bytes, one per urlopen call."""
    class Net:
        plan: list = []
        calls = 0

    def urlopen(req, timeout=None):
        Net.calls += 1
        item = Net.plan.pop(0)
        if isinstance(item, BaseException):
            raise item
        return _Resp(item)

    monkeypatch.setattr(fetch.urllib.request, "urlopen", urlopen)
    monkeypatch.setattr(retry.time, "sleep", lambda s: None)
    return Net


def _cfg(files):
    return {"url": "http://example.invalid/d/", "archive": None, "files": files, "urls": {}}


def test_transient_errors_are_retried_then_succeed(tmp_path, net):
    from csbench.io import sha256_file

    data = b'{"a": 1}\n'
    net.plan = [urllib.error.URLError(ConnectionResetError("reset")), TimeoutError("slow"),
                urllib.error.HTTPError("u", 503, "busy", {}, None), data]
    got = fetch.fetch_source("s", _cfg({"a.jsonl": None}), tmp_path / "raw")
    assert net.calls == 4 and (tmp_path / "raw" / "a.jsonl").read_bytes() == data
    assert got["a.jsonl"] == sha256_file(tmp_path / "raw" / "a.jsonl")


def test_transient_errors_give_up_after_the_attempts(tmp_path, net):
    net.plan = [TimeoutError("slow")] * fetch.ATTEMPTS
    with pytest.raises(InputError, match=f"failed {fetch.ATTEMPTS} times"):
        fetch.fetch_source("s", _cfg({"a.jsonl": None}), tmp_path / "raw")
    assert net.calls == fetch.ATTEMPTS


@pytest.mark.parametrize("plan,error", [
    ([b"other bytes\n"], ChecksumError),                                   # hash mismatch
    ([urllib.error.HTTPError("u", 404, "Not Found", {}, None)], InputError),  # missing file
    ([b""], InputError),                                                     # empty file
])
def test_deterministic_failures_are_not_retried(tmp_path, net, plan, error):
    net.plan = list(plan) + [b"never reached"] * 5
    with pytest.raises(error):
        fetch.fetch_source("s", _cfg({"a.jsonl": "0" * 64}), tmp_path / "raw")
    assert net.calls == 1


def test_transient_or_not():
    import ssl

    assert fetch.is_transient(urllib.error.URLError(OSError(-3, "Temporary failure in name resolution")))
    assert fetch.is_transient(ConnectionRefusedError())
    assert not fetch.is_transient(urllib.error.URLError("unknown url type: htp"))
    assert not fetch.is_transient(urllib.error.URLError(FileNotFoundError(2, "x")))
    assert not fetch.is_transient(urllib.error.URLError(ssl.SSLCertVerificationError("bad cert")))
    assert not fetch.is_transient(urllib.error.HTTPError("u", 403, "Forbidden", {}, None))
    assert not fetch.is_transient(ValueError("x"))


def test_download_rules_are_not_retried_by_snakemake():
    """csbench.retry retries network trouble inside the job; the rules say `retries: 0`, so a
    profile that retries jobs (profiles/slurm) does not rerun a deterministic failure either."""
    for smk, rule in (("data.smk", "rule normalise"), ("models.smk", "rule models")):
        text = (REPO / "workflow" / "rules" / smk).read_text().split(rule)[0]
        assert [ln.strip() for ln in text.splitlines() if ln.strip().startswith("retries:")] \
            and all(ln.split("#")[0].strip() == "retries: 0"
                    for ln in text.splitlines() if ln.strip().startswith("retries:")), smk


def test_oversized_archive_member_is_refused(tmp_path, monkeypatch):
    import zipfile

    archive = tmp_path / "src.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("pkg/dev.jsonl", b"0" * 50_000)
    monkeypatch.setattr(fetch, "_download", lambda url, dest: dest.write_bytes(archive.read_bytes()))
    monkeypatch.setattr(fetch, "MAX_MEMBER_BYTES", 10_000)
    c = {"url": "http://x/src.zip", "archive": "zip", "files": {"dev.jsonl": None}, "urls": {}}
    with pytest.raises(InputError, match="over the limit|exceeds"):
        fetch.fetch_source("s", c, tmp_path / "raw")
    assert not (tmp_path / "raw" / "dev.jsonl").exists()
    # a member whose header understates its size is cut off while reading, too
    with pytest.raises(InputError, match="exceeds"):
        fetch._copy_limited(__import__("io").BytesIO(b"0" * 50_000), tmp_path / "x", 10_000,
                            fetch._bomb(archive, "dev.jsonl", 10_000))


@pytest.mark.parametrize("name", ["../outside.jsonl", "/etc/passwd", "a/../../b", ".hidden",
                                  "a//b", "a\\b"])
def test_file_keys_outside_the_raw_directory_are_rejected(name):
    from csbench.config import validate

    cfg = {"sources": {"twentyq": {"files": {name: None}}}}
    with pytest.raises(ConfigError) as exc:
        validate(cfg, REPO / "workflow" / "schemas" / "config.schema.yaml")
    assert "sources.twentyq.files" in str(exc.value) and repr(name) in str(exc.value)
    with pytest.raises(ConfigError):
        fetch.wanted_files({"files": {name: None}})


def test_unpinned_default_files_are_documented():
    """docs/data.md (csbench.data.docs.UNPINNED) lists exactly the default files with a null hash."""
    import yaml

    from csbench.data.docs import UNPINNED

    schema = yaml.safe_load((REPO / "workflow" / "schemas" / "config.schema.yaml").read_text())
    null = {f"{s}/{f}" for s, sub in schema["properties"]["sources"]["properties"].items()
            for f, h in sub["properties"]["files"]["default"].items() if h is None}
    assert null == set(UNPINNED)


# -- finding 6: progress -------------------------------------------------------------------------

def test_progress_logs_rate_done_total_and_eta(caplog):
    from csbench.logs import Progress

    t = [0.0]
    with caplog.at_level(logging.INFO, logger="csbench.progress"):
        with Progress(1000, "scan", unit="docs", bar=False, clock=lambda: t[0]) as prog:
            for _ in range(100):
                t[0] += 1.0
                prog.update(10)
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 10                      # every 10% (9) and the final line
    assert lines[0] == "scan: 100 docs of 1,000 docs (10%), 10 docs/s, elapsed 10 s, ETA 1 min 30 s"
    assert lines[-1].endswith("(done)")


def test_progress_logs_every_interval_when_slow(caplog):
    from csbench.logs import Progress

    t = [0.0]
    with caplog.at_level(logging.INFO, logger="csbench.progress"):
        prog = Progress(10_000, "x", bar=False, clock=lambda: t[0])
        for _ in range(10):
            t[0] += 31
            prog.update(1)
    assert len(caplog.records) == 10


def test_scan_reports_progress_through_the_shard(tmp_path):
    import pandas as pd

    from csbench.contamination.scan import ProbeIndex, Scanner
    from csbench.logs import Progress

    corpus = tmp_path / "c.jsonl"
    corpus.write_text(jl(*({"id": str(i), "text": f"document number {i} " * 20}
                           for i in range(200))))
    probes = pd.DataFrame({"benchmark": ["b"], "item_id": ["1"], "probe": ["sentence"],
                           "kind": ["sentence"],
                           "text": ["nothing here matches at all in this corpus of documents"]})
    seen = []

    class Spy(Progress):
        def set(self, done):
            seen.append(done)
            super().set(done)

    size = corpus.stat().st_size
    with Spy(size, "scan", unit="B", bar=False) as prog:
        Scanner(ProbeIndex(probes, n=5, min_words=3), batch_bytes=2000).scan_pieces(
            [(str(corpus), 0, -1)], "jsonl", "text", "id", progress=prog)
    assert seen and seen[-1] == size and seen == sorted(seen)


def test_lm_scoring_reports_progress(caplog):
    from collections import defaultdict

    from csbench.lm.batching import Batcher

    batcher = Batcher(3, 3, "cpu", defaultdict(int))   # the engine's batching: no model
    done = []
    with caplog.at_level(logging.INFO, logger="csbench.progress"):
        batcher.run(list(range(10)), lambda b: done.extend(b), weight=lambda u: 1)
    assert done == list(range(10))
    msgs = [r.getMessage() for r in caplog.records]
    assert msgs and msgs[-1].startswith("LM scoring: 10 rows of 10 rows (100%)")
    assert any("ETA" in m for m in msgs[:-1])


# -- finding 7: config file errors ---------------------------------------------------------------

def test_empty_config_file_is_named(tmp_path):
    from csbench.config import load_config_file

    p = tmp_path / "my.yaml"
    p.write_text("# only a comment\n")
    with pytest.raises(ConfigError, match=f"{p}: config file is empty"):
        load_config_file(p)


def test_yaml_syntax_error_names_file_line_and_column(tmp_path):
    from csbench.config import load_config_file

    p = tmp_path / "my.yaml"
    p.write_text("tasks: [protoqa]\nmirror: /data\n  lm: x\n")
    with pytest.raises(ConfigError) as exc:
        load_config_file(p)
    assert str(exc.value).startswith(f"{p}:3:5: YAML syntax error")


def test_config_top_level_must_be_a_mapping(tmp_path):
    from csbench.config import load_config_file

    p = tmp_path / "my.yaml"
    p.write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match=f"{p}:1: the top level must be a mapping"):
        load_config_file(p)


def test_config_check_command(tmp_path):
    p = tmp_path / "my.yaml"
    p.write_text("tasks: [protoqa\n")
    proc = subprocess.run([sys.executable, "-m", "csbench.config", str(p)], capture_output=True,
                          text=True)
    assert proc.returncode == 1 and f"{p}:2:1: YAML syntax error" in proc.stderr


def test_snakefile_checks_its_config_file_first():
    text = (REPO / "Snakefile").read_text()
    assert text.index('check_config_files(["config.yaml"])') < text.index('configfile: "config.yaml"')


def test_make_targets_check_their_config_files_first():
    """Snakemake loads ``--configfile`` files before any workflow code and names neither file nor
    line; every Makefile recipe that passes one runs ``$(CHECK_CONFIG)`` on it first."""
    import re

    recipes, target = {}, None
    for line in (REPO / "Makefile").read_text().splitlines():
        if re.match(r"^[A-Za-z_.-]+:", line):
            target = line.split(":")[0]
        elif line.startswith("\t") and target:
            recipes.setdefault(target, []).append(line.strip())
    checked = 0
    for target, lines in recipes.items():
        for i, line in enumerate(lines):
            for cfg in re.findall(r"--configfile\s+(\S+)", line):
                assert any("$(CHECK_CONFIG)" in x and cfg in x for x in lines[:i]), (target, cfg)
                checked += 1
    assert checked >= 3

# -- finding 8: scoring a ProtoQA predictions file plans no model -------------------------------

@pytest.mark.integration
def test_protoqa_eval_of_one_file_plans_no_model(tmp_path):
    work = tmp_path / "w"
    (work / "resources").mkdir(parents=True)
    (work / "resources" / "demo").symlink_to(REPO / "resources" / "demo")
    snakemake = str(Path(sys.executable).with_name("snakemake"))
    cmd = [snakemake, "-n", "--snakefile", str(REPO / "Snakefile"), "--directory", str(work),
           "--cores", "1", "results/protoqa/protoqa_dev/eval/demo-json/wordnet.tsv",
           "--configfile", str(REPO / "resources/demo/config.yaml")]
    env = dict(os.environ, NLTK_DATA=str(REPO / "resources/nltk_data"), HF_HUB_OFFLINE="1")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert "rule protoqa_eval:" in out
    for rule in ("materialise_model", "protoqa_generate"):
        assert f"rule {rule}:" not in out, out[-4000:]


# -- per-model result tables are that model's (issue 29, row 8) -------------------------------

def _model_table(model: str, source: str = "random:tiny-gpt2"):
    import pandas as pd

    return pd.DataFrame({"model": [model, model], "item_id": ["a", "b"], "correct": [True, False],
                         "random_model": [True, True], "model_source": [source, source],
                         "model_sha256": ["", ""], "model_quant": ["", ""],
                         "compute_device": ["cpu", "cpu"], "compute_dtype": ["float32", "float32"]})


def test_model_table_of_this_model_is_read(tmp_path):
    from csbench.io import write_parquet, write_tsv
    from csbench.provenance import read_model_table

    write_parquet(_model_table("m1"), tmp_path / "items.parquet")
    write_tsv(_model_table("m1"), tmp_path / "metrics.tsv")
    assert len(read_model_table(tmp_path / "items.parquet", "m1")) == 2
    assert list(read_model_table(tmp_path / "metrics.tsv", "m1")["model"]) == ["m1", "m1"]
    assert len(read_model_table(tmp_path / "metrics.tsv", None)) == 2   # no model column needed


@pytest.mark.parametrize("case", ["dir-with-other-model", "empty-dir", "other-model",
                                  "no-provenance", "two-sources", "written-before-compute",
                                  "two-dtypes"])
def test_model_table_that_is_not_this_models_is_refused(tmp_path, case):
    import pandas as pd

    from csbench.io import write_parquet
    from csbench.provenance import read_model_table

    path = tmp_path / "m1" / "items.parquet"
    if case in ("dir-with-other-model", "empty-dir"):
        path.mkdir(parents=True)
        if case == "dir-with-other-model":   # pandas would read the folder as a dataset
            write_parquet(_model_table("m2"), path / "part-0.parquet")
        needle = "a directory where the table of model m1 should be"
    elif case == "other-model":
        write_parquet(_model_table("m2"), path)
        needle = "holds rows of model(s) m2, not only of m1"
    elif case == "no-provenance":
        write_parquet(_model_table("m1").drop(columns=["random_model", "model_quant"]), path)
        needle = "no column(s) random_model, model_quant"
    elif case == "written-before-compute":   # a table of an older csbench: rerun its job
        write_parquet(_model_table("m1").drop(columns=["compute_device", "compute_dtype"]), path)
        needle = "no column compute_device, column compute_dtype: written before csbench " \
            "recorded the compute device and dtype"
    elif case == "two-dtypes":
        other = _model_table("m1").assign(compute_dtype="bfloat16")
        write_parquet(pd.concat([_model_table("m1"), other]), path)
        needle = "rows of more than one model source, compute set-up or prompt format"
    else:
        write_parquet(pd.concat([_model_table("m1"), _model_table("m1", "hf:a/b")]), path)
        needle = "rows of more than one model source, compute set-up or prompt format"
    with pytest.raises(InputError) as exc:
        read_model_table(path, "m1")
    names(exc, path, None)
    assert needle in str(exc.value), str(exc.value)


# -- config: a refused name is explained in the words of its key (issue 29, row 8) -------------

NAME_SCHEMA = """
$schema: https://json-schema.org/draft/2020-12/schema
type: object
additionalProperties: false
properties:
  models:
    type: object
    default: {}
    description: models
    additionalProperties: false
    properties:
      lm:
        type: object
        default: {}
        description: causal LMs
        propertyNames: {pattern: '^[A-Za-z0-9_+-][A-Za-z0-9._+-]*$'}
  sources:
    type: object
    default: {}
    description: sources
    additionalProperties: false
    properties:
      winogrande:
        type: object
        default: {}
        description: a source
        additionalProperties: false
        properties:
          files:
            type: object
            default: {}
            description: files
            propertyNames: {pattern: '^[A-Za-z0-9_+-][A-Za-z0-9._+-]*(/[A-Za-z0-9_+-][A-Za-z0-9._+-]*)*$'}
"""


def test_bad_name_message_follows_the_key(tmp_path):
    from csbench.config import validate

    schema = tmp_path / "schema.yaml"
    schema.write_text(NAME_SCHEMA)
    with pytest.raises(ConfigError) as exc:
        validate({"models": {"lm": {"..": "random:tiny-gpt2"}}}, schema)
    msg = str(exc.value)
    assert "config key 'models.lm': name '..' must be a plain name" in msg
    assert "results/raw" not in msg
    with pytest.raises(ConfigError) as exc:
        validate({"sources": {"winogrande": {"files": {"../x": None}}}}, schema)
    msg = str(exc.value)
    assert "config key 'sources.winogrande.files': name '../x'" in msg
    assert "results/raw/winogrande/" in msg
