"""QADS synonym choice (Zipf policy, inflection, reasons) and the human verification loop:
export -> annotate -> import on the demo questions, each bad annotation rejected with its block,
row and column."""
import csv

import pandas as pd
import pytest

from csbench.data import squad_v2
from csbench.errors import InputError
from csbench.qads import generate as G
from csbench.qads import verify as V
from csbench.qads.candidates import load_nlp
from csbench.qads.workflow import original_subset, squad_json
from csbench.qads.wsd import Disambiguator
from csbench.wordnet import wordnet


def test_choice_prefers_the_frequent_synonym_and_records_why():
    wn = wordnet()
    prevent = wn.synset("prevent.v.01")  # prevent, forestall (Zipf 2.6), foreclose, preclude, forbid
    # the earlier policy (WordNet count, no floor) took the rare "forestall"
    assert G.choose(prevent, "prevent", "prevent", "VB", "wordnet", None)[0] == "forestall"
    syn, z, passed = G.choose(prevent, "prevent", "prevent", "VB")  # defaults: wordnet, 2.85
    assert syn == "preclude" and z >= 2.85
    assert "forestall: Zipf 2.62 < 2.85" in passed
    assert any(p.startswith("forbid: ranked lower (Zipf 3.66") for p in passed)
    # zipf order: the most frequent word form
    assert G.choose(prevent, "prevent", "prevent", "VB", "zipf")[0] == "forbid"
    # "known" -> "cognized" (Zipf 1.2) is no longer made: no substitution
    syn, z, passed = G.choose(wn.synset("know.v.01"), "know", "known", "VBN")
    assert syn is None and z is None and passed[0].startswith("cognize: Zipf 1.19 <")
    assert G.choose(wn.synset("know.v.01"), "know", "known", "VBN", "wordnet", None)[0] == "cognized"
    syn, z, passed = G.choose(wn.synset("city.n.01"), "city", "City", "NN")
    assert syn == "Metropolis" and "urban_center: multi-word" in passed
    with pytest.raises(ValueError, match="synonym order"):
        G.choose(prevent, "prevent", "prevent", "VB", "alphabetical")


def test_choice_keeps_the_inflection():
    wn = wordnet()
    assert G.choose(wn.synset("large.a.01"), "large", "largest", "JJS")[0] == "biggest"
    assert G.choose(wn.synset("attempt.n.01"), "attempt", "attempts", "NNS")[0] == "efforts"
    assert G.choose(wn.synset("begin.v.01"), "begin", "began", "VBD")[0] == "started"
    assert G.choose(wn.synset("die.v.01"), "die", "Died", "VBD")[0] == "Perished"
    assert G.choose(wn.synset("student.n.01"), "student", "students", "NNS")[0] == "pupils"
    # the Zipf frequency is the inflected form's
    syn, z, _ = G.choose(wn.synset("supply.v.01"), "provide", "provides", "VBZ")
    assert syn == "supplies" and z == G.zipf("supplies")


def test_spelling_variants_and_inflection():
    assert G.spelling_variant("colour", "color") and G.spelling_variant("analyse", "analyze")
    assert G.spelling_variant("centre", "center") and G.spelling_variant("grey", "gray")
    assert not G.spelling_variant("troop", "soldier") and not G.spelling_variant("city", "metropolis")
    assert G.inflect("get", "VBZ") == "gets" and G.inflect("supply", "VBZ") == "supplies"
    assert G.inflect("big", "JJS") == "biggest" and G.inflect("pupil", "NNS") == "pupils"


@pytest.fixture(scope="module")
def generated(repo):
    questions = squad_v2.read_squad(repo / "resources/demo/mirror/squad_v2/dev-v2.0.json")
    subs, out = G.generate(questions, Disambiguator("first_sense"), nlp=load_nlp())
    assert {"token_zipf", "synonym_zipf", "passed_over"} <= set(subs.columns)
    chosen = subs.dropna(subset=["synonym"])
    assert len(chosen) >= 5 and (chosen["synonym_zipf"] >= G.DEFAULT_MIN_ZIPF).all()
    return questions, subs, out


@pytest.fixture()
def exported(generated, tmp_path):
    questions, subs, out = generated
    rows = V.annotation_rows(subs, squad_json(out["one"])["data"],
                             squad_json(original_subset(questions, out))["data"])
    assert len(rows) == len(out["one"]) and rows["gloss"].str.len().gt(0).all()
    paths = V.export(rows, tmp_path / "blocks", size=6)
    assert len(paths) >= 2 and all(p.name.startswith("block-") for p in paths)
    expected = V.read_exported(tmp_path / "blocks")
    # the rows of one question never straddle two blocks
    assert expected.groupby("id")["block"].nunique().max() == 1
    return questions, subs, expected, tmp_path


def annotate(expected, block, path, edit=None):
    """Write a returned block: every row ok except those ``edit`` changes."""
    rows = expected[expected["block"] == block].to_dict("records")
    for r in rows:
        r["verdict"] = "ok"
    if edit:
        edit(rows)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return path


def test_export_annotate_import_loop(exported):
    questions, subs, expected, tmp = exported
    ann_dir = tmp / "returned"
    ann_dir.mkdir()
    first = expected[expected["block"] == "block-001"]["row_id"].tolist()

    def alice(rows):
        rows[0]["verdict"] = "wrong"
        rows[0]["added_synonyms"] = "fellow; chap"
        rows[1]["idiom"] = "1"

    def bob(rows):
        rows[0]["verdict"] = "no"
        rows[2]["verdict"] = "wrong"

    annotate(expected, "block-001", ann_dir / "block-001.alice.csv", alice)
    annotate(expected, "block-001", ann_dir / "block-001.bob.csv", bob)
    annotate(expected, "block-002", ann_dir / "block-002.csv")
    # a spreadsheet that saves with ';' (some locales) reads the same
    text = (ann_dir / "block-002.csv").read_text()
    semi = tmp / "block-002.csv"
    with open(semi, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh, delimiter=";").writerows(csv.reader(text.splitlines()))
    assert V.read_block(semi, expected)["verdict"].all()
    files = V.returned_files(ann_dir)
    assert [f.name for f in files] == ["block-001.alice.csv", "block-001.bob.csv", "block-002.csv"]
    ann = V.read_returned(files, expected)
    dec = V.decide(ann, expected).set_index("row_id")
    assert dec.at[first[0], "replacement"] == "fellow" and dec.at[first[0], "reason"] == "annotator's synonym"
    assert not dec.at[first[1], "kept"] and dec.at[first[1], "reason"] == "flagged idiom"
    assert not dec.at[first[2], "kept"] and dec.at[first[2], "reason"] == "annotators disagree"
    assert dec["kept"].sum() == len(dec) - 2
    sets = V.verified_sets(dec.reset_index(), subs, questions)
    one = sets["one"].set_index("id")
    assert first[1] not in one.index and first[2] not in one.index
    assert "fellow" in one.at[first[0], "question"].lower()
    assert set(sets["all"]["id"].str.rsplit("-", n=1).str[0]) == set(sets["original"]["id"])
    ag = V.agreement(ann)
    assert len(ag) == 1 and ag.at[0, "block"] == "block-001" and ag.at[0, "n"] == len(first)
    assert ag.at[0, "verdict_agreement"] == pytest.approx((len(first) - 1) / len(first))
    s = V.summary(expected, ann, dec.reset_index(), sets, files)
    assert s["verified"] and s["blocks_returned"] == 2 and s["flags"]["idiom"] == 1


def _set(col, value, i=1):
    def edit(rows):
        rows[i][col] = value
    return edit


BAD = [
    ("unknown id", _set("row_id", "nope-1"), "row 3, column row_id", "unknown id"),
    ("missing verdict", _set("verdict", ""), "row 3, column verdict", "missing verdict"),
    ("malformed verdict", _set("verdict", "maybe"), "row 3, column verdict", "not a verdict"),
    ("malformed flag", _set("named_entity", "2"), "row 3, column named_entity", "flag value"),
    ("malformed synonym", _set("added_synonyms", "big, large"), "row 3, column added_synonyms",
     "not a word"),
    ("edited synonym", _set("synonym", "zzz"), "row 3, column synonym", "differs from the exported"),
    ("wrong block", _set("block", "block-009"), "row 3, column block", "the file is block-001"),
    ("repeated id", lambda rows: rows[2].update(row_id=rows[1]["row_id"]), "row 4, column row_id",
     "repeated"),
]


@pytest.mark.parametrize("case,edit,where,what", BAD, ids=[b[0] for b in BAD])
def test_bad_annotations_name_block_row_column(exported, case, edit, where, what):
    _, _, expected, tmp = exported
    path = annotate(expected, "block-001", tmp / "block-001.x.csv", edit)
    with pytest.raises(InputError) as e:
        V.read_returned([path], expected)
    msg = str(e.value)
    assert "block-001" in msg and where in msg and what in msg and str(path) in msg


def test_bad_annotation_files(exported):
    _, _, expected, tmp = exported
    path = annotate(expected, "block-001", tmp / "block-001.csv",
                    lambda rows: [r.pop("verdict") for r in rows])
    with pytest.raises(InputError, match=r"block-001, row 1: missing column\(s\) verdict"):
        V.read_returned([path], expected)
    path = annotate(expected, "block-001", tmp / "block-001.csv", lambda rows: rows.pop())
    with pytest.raises(InputError, match=r"block-001: 1 exported row\(s\) missing"):
        V.read_returned([path], expected)
    path = tmp / "block-077.csv"
    path.write_text("block\n")
    with pytest.raises(InputError, match="block-077: no such exported block"):
        V.read_returned([path], expected)


def test_no_returned_blocks(tmp_path):
    assert V.returned_files(None) == [] and V.returned_files(tmp_path / "missing") == []
    (tmp_path / "notes.txt").write_text("x")
    assert V.returned_files(tmp_path) == []
    assert V.cohen_kappa([True, False, True], [True, False, False]) == pytest.approx(0.4)
    assert V.cohen_kappa([True, True], [True, True]) is None


@pytest.mark.integration
def test_dag_uses_verified_sets_only_with_returned_blocks(tmp_path):
    """Dry runs of the demo: with its returned blocks, QA scoring reads results/qads/verified/;
    with `annotations: null` the DAG is the unverified one plus the export."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    import yaml

    repo = Path(__file__).resolve().parents[1]
    (tmp_path / "resources").mkdir()
    (tmp_path / "resources" / "demo").symlink_to(repo / "resources" / "demo")
    off = tmp_path / "off.yaml"
    off.write_text(yaml.safe_dump({"qads": {"verification": {"annotations": None}}}))
    smk = str(Path(sys.executable).with_name("snakemake"))
    env = dict(os.environ, NLTK_DATA=str(repo / "resources/nltk_data"), HF_HUB_OFFLINE="1")

    def dry(*extra):
        cmd = [smk, "results/qads/qa_scores.tsv", "results/qads/annotation/blocks", "--snakefile",
               str(repo / "Snakefile"), "--directory", str(tmp_path), "-n", "-p", "--cores", "1",
               "--configfile", str(repo / "resources/demo/config.yaml"), *extra]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return proc.stdout + proc.stderr

    on = dry()
    assert "rule qads_verify:" in on and "results/qads/verified/qads-one.json" in on
    plain = dry(str(off))
    assert "rule qads_verify:" not in plain and "results/qads/verified" not in plain
    assert "rule qads_export_annotation:" in plain
