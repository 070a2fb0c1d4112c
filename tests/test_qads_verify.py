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
    """``rows``: the annotation rows rebuilt from the generated data (what verification checks
    against); ``handed``: the blocks of 6 the annotators got (rows with ``block``)."""
    questions, subs, out = generated
    rows = V.annotation_rows(subs, squad_json(out["one"])["data"],
                             squad_json(original_subset(questions, out))["data"])
    assert len(rows) == len(out["one"]) and rows["gloss"].str.len().gt(0).all()
    paths = V.export(rows, tmp_path / "blocks", size=6)
    assert len(paths) >= 2 and all(p.name.startswith("block-") for p in paths)
    handed = pd.concat([pd.read_csv(f, dtype=str, keep_default_na=False, encoding="utf-8-sig")
                        for f in paths], ignore_index=True)
    # the rows of one question never straddle two blocks
    assert handed.groupby("id")["block"].nunique().max() == 1
    assert handed.drop(columns="block").equals(rows.astype(str))
    return questions, subs, rows, handed, tmp_path


def annotate(handed, block, path, edit=None):
    """Write a returned block: every row ok except those ``edit`` changes."""
    rows = handed[handed["block"] == block].to_dict("records")
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
    questions, subs, rows, handed, tmp = exported
    ann_dir = tmp / "returned"
    ann_dir.mkdir()
    first = handed[handed["block"] == "block-001"]["row_id"].tolist()

    def alice(rows):
        rows[0]["verdict"] = "wrong"
        rows[0]["added_synonyms"] = "fellow; chap"
        rows[1]["idiom"] = "1"

    def bob(rows):
        rows[0]["verdict"] = "no"
        rows[2]["verdict"] = "wrong"

    annotate(handed, "block-001", ann_dir / "block-001.alice.csv", alice)
    annotate(handed, "block-001", ann_dir / "block-001.bob.csv", bob)
    annotate(handed, "block-002", ann_dir / "block-002.csv")
    # a spreadsheet that saves with ';' (some locales) reads the same
    text = (ann_dir / "block-002.csv").read_text()
    semi = tmp / "block-002.csv"
    with open(semi, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh, delimiter=";").writerows(csv.reader(text.splitlines()))
    assert V.read_block(semi, rows)["verdict"].all()
    files = V.returned_files(ann_dir)
    assert [f.name for f in files] == ["block-001.alice.csv", "block-001.bob.csv", "block-002.csv"]
    ann = V.read_returned(files, rows)
    dec = V.decide(ann, rows).set_index("row_id")
    assert dec.at[first[0], "replacement"] == "fellow" and dec.at[first[0], "reason"] == "annotator's synonym"
    assert not dec.at[first[1], "kept"] and dec.at[first[1], "reason"] == "flagged idiom"
    assert not dec.at[first[2], "kept"] and dec.at[first[2], "reason"] == "annotators disagree"
    assert dec["kept"].sum() == len(dec) - 2
    assert (dec.loc[first, "block"] == "block-001").all()
    sets = V.verified_sets(dec.reset_index(), subs, questions)
    one = sets["one"].set_index("id")
    assert first[1] not in one.index and first[2] not in one.index
    assert "fellow" in one.at[first[0], "question"].lower()
    assert set(sets["all"]["id"].str.rsplit("-", n=1).str[0]) == set(sets["original"]["id"])
    ag = V.agreement(ann)
    assert len(ag) == 1 and ag.at[0, "block"] == "block-001" and ag.at[0, "n"] == len(first)
    assert ag.at[0, "verdict_agreement"] == pytest.approx((len(first) - 1) / len(first))
    s = V.summary(rows, ann, dec.reset_index(), sets, files)
    assert s["verified"] and s["blocks_returned"] == 2 and s["flags"]["idiom"] == 1
    assert "blocks_exported" not in s and s["substitutions_exported"] == len(rows)
    assert s["substitutions_annotated"] == len(dec) < len(rows)


def test_verification_does_not_depend_on_the_block_size(exported):
    """Blocks handed out at size 2000 verify the same whatever the current export's block size
    (verification never reads it), and the same annotations returned in blocks of 3 give the
    same verified sets and decisions."""
    questions, subs, rows, _, tmp = exported
    ids = rows["row_id"].tolist()
    alice = {ids[0]: {"verdict": "wrong", "added_synonyms": "fellow"}, ids[3]: {"idiom": "x"},
             ids[5]: {"verdict": "n"}}
    bob = {ids[0]: {"verdict": "wrong"}, ids[5]: {"verdict": "wrong"}, ids[7]: {"verdict": "no"}}

    def edit(changes):
        def apply(block_rows):
            for r in block_rows:
                r.update(changes.get(r["row_id"], {}))
        return apply

    def returned(size):
        handed = pd.concat(V.blocks(rows, size), ignore_index=True)
        folder = tmp / f"returned-{size}"
        folder.mkdir()
        for block in handed["block"].unique():
            annotate(handed, block, folder / f"{block}.alice.csv", edit(alice))
            annotate(handed, block, folder / f"{block}.bob.csv", edit(bob))
        return V.returned_files(folder)

    files = returned(2000)
    assert [f.name for f in files] == ["block-001.alice.csv", "block-001.bob.csv"]
    results = {}
    for size in (2000, 3):  # the current export: block-001 holds 3 rows at size 3
        V.export(rows, tmp / f"export-{size}", size)
        results[size] = V.verify(rows, files, subs, questions)
    assert len(list((tmp / "export-3").glob("block-*.csv"))) > 1
    a, b = results[2000], results[3]
    for name in ("original", "one", "all"):
        pd.testing.assert_frame_equal(a["sets"][name], b["sets"][name])
    pd.testing.assert_frame_equal(a["decisions"], b["decisions"])
    pd.testing.assert_frame_equal(a["agreement"], b["agreement"])
    assert a["summary"] == b["summary"]
    dec = a["decisions"].set_index("row_id")
    assert dec.at[ids[0], "replacement"] == "fellow" and dec.at[ids[3], "reason"] == "flagged idiom"
    assert dec.at[ids[5], "reason"] == "rejected" and dec.at[ids[7], "reason"] == "annotators disagree"
    assert a["summary"]["substitutions_annotated"] == a["summary"]["substitutions_exported"]
    # returned in blocks of 3 instead: same sets and decisions, only the block names differ
    small = V.verify(rows, returned(3), subs, questions)
    for name in ("original", "one", "all"):
        pd.testing.assert_frame_equal(a["sets"][name], small["sets"][name])
    pd.testing.assert_frame_equal(a["decisions"].drop(columns="block"),
                                  small["decisions"].drop(columns="block"))
    assert small["decisions"]["block"].nunique() > 1 and len(small["agreement"]) > 1


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
    _, _, rows, handed, tmp = exported
    path = annotate(handed, "block-001", tmp / "block-001.x.csv", edit)
    with pytest.raises(InputError) as e:
        V.read_returned([path], rows)
    msg = str(e.value)
    assert "block-001" in msg and where in msg and what in msg and str(path) in msg


def _question_rows(handed, block, multi):
    """The row_ids of the last question of ``block`` with several rows (``multi``) or one."""
    b = handed[handed["block"] == block]
    sizes = b.groupby("id", sort=False)["row_id"].agg(list)
    return [r for r in sizes if (len(r) > 1) == multi][-1]


def test_bad_annotation_files(exported):
    _, _, rows, handed, tmp = exported
    path = annotate(handed, "block-001", tmp / "block-001.csv",
                    lambda rows: [r.pop("verdict") for r in rows])
    with pytest.raises(InputError, match=r"block-001, row 1: missing column\(s\) verdict"):
        V.read_returned([path], rows)
    path = tmp / "block-077.csv"
    path.write_text(",".join(V.COLUMNS) + "\n")
    with pytest.raises(InputError, match="block-077: no annotated rows"):
        V.read_returned([path], rows)


def test_deleted_row_of_a_question_is_caught(exported):
    """A block holds every row of its questions: one row of a multi-row question deleted is an
    error; a question deleted whole is only not verified (the export is not read)."""
    questions, subs, rows, handed, tmp = exported
    block = next(b for b in handed["block"].unique()
                 if handed[handed["block"] == b].groupby("id").size().max() > 1)
    multi = _question_rows(handed, block, multi=True)
    path = annotate(handed, block, tmp / f"{block}.csv",
                    lambda rs: rs.remove(next(r for r in rs if r["row_id"] == multi[-1])))
    with pytest.raises(InputError, match=rf"{block}: 1 exported row\(s\) missing, e\.g\. row_id "
                                         rf"'{multi[-1]}'") as e:
        V.read_returned([path], rows)
    assert str(path) in str(e.value)
    single = _question_rows(handed, "block-001", multi=False)
    path = annotate(handed, "block-001", tmp / "block-001.csv",
                    lambda rs: rs.remove(next(r for r in rs if r["row_id"] == single[0])))
    out = V.verify(rows, [path], subs, questions)
    assert single[0] not in set(out["decisions"]["row_id"])
    n = (handed["block"] == "block-001").sum() - 1
    assert out["summary"]["substitutions_annotated"] == n < out["summary"]["substitutions_exported"]


def test_row_in_two_blocks_and_block_files_that_differ(exported):
    _, _, rows, handed, tmp = exported
    one = annotate(handed, "block-001", tmp / "block-001.csv")
    # a question of block-001 also returned in block-002
    moved = handed[handed["id"] == handed.at[0, "id"]].assign(block="block-002")
    two = annotate(pd.concat([handed, moved]), "block-002", tmp / "block-002.csv")
    with pytest.raises(InputError, match=rf"block-002, row \d+, column row_id: id "
                                         rf"'{moved['row_id'].iloc[0]}' is also in block-001.csv "
                                         rf"\(block block-001\)") as e:
        V.read_returned([one, two], rows)
    assert str(two) in str(e.value)
    # two annotators of block-001, one without a (whole) question
    gone = _question_rows(handed, "block-001", multi=False)[0]
    bob = annotate(handed, "block-001", tmp / "block-001.bob.csv",
                   lambda rs: rs.remove(next(r for r in rs if r["row_id"] == gone)))
    with pytest.raises(InputError, match=rf"block-001: the rows differ from block-001.csv \(same "
                                         rf"block\), e\.g\. row_id '{gone}' is only in block-001.csv"):
        V.read_returned([one, bob], rows)
    with pytest.raises(InputError, match=rf"rows differ from block-001.bob.csv .* row_id '{gone}' "
                                         rf"is only in block-001.csv"):
        V.read_returned([bob, one], rows)


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
