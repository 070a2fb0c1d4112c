"""WSD methods: first sense, simplified Lesk, enhanced Lesk (MiniLM through the Embedder)."""
import pandas as pd
import pytest

from csbench.data import wsd_eval as W
from csbench.qads import wsd, wsd_eval


@pytest.fixture(scope="module")
def embedder(tmp_path_factory):
    from csbench.embed import Embedder

    return Embedder("sentence-transformers/all-MiniLM-L6-v2",
                    cache_dir=tmp_path_factory.mktemp("emb"))


@pytest.fixture(scope="module")
def demo_all(repo):
    root = repo / "resources/demo/mirror/wsd_eval"
    return W.normalise("ALL", {f: root / f for f in W.files_of("ALL")})


def test_senses_and_prior():
    syns = wsd.senses("house", "n")
    assert syns[0].name() == "house.n.01"
    p = wsd.prior(syns, "house")
    assert p.argmax() == 0 and abs(p.sum() - 1) < 1e-9
    assert all(s.pos() in "as" for s in wsd.senses("good", "a"))
    assert wsd.lemma_in(wsd.senses("vote", "v")[0], "voted").name() == "vote"


def test_first_sense_and_simplified_lesk():
    t = wsd.Target("bank", "n", "She deposited the money in the bank and the bank accepts deposits .", "bank")
    assert wsd.Disambiguator("first_sense").disambiguate([t])[0].synset.name() == "bank.n.01"
    got = wsd.Disambiguator("simplified_lesk").disambiguate([t])[0].synset.name()
    assert got == "depository_financial_institution.n.01"
    assert wsd.Disambiguator("first_sense").disambiguate([wsd.Target("qwzx", "n", "x")])[0].synset is None
    with pytest.raises(ValueError):
        wsd.Disambiguator("enhanced_lesk")


def test_enhanced_lesk_house_member(embedder, repo):
    from csbench.data.squad_v2 import read_squad

    q = read_squad(repo / "resources/demo/mirror/squad_v2/dev-v2.0.json").iloc[0]
    assert q["question"].startswith("Which house member")
    t = wsd.Target("house", "n", f"{q['question']} {q['context']}", "house")
    # the context similarity alone picks the legislative assembly ...
    d = wsd.Disambiguator("enhanced_lesk", embedder, w_prior=0.0)
    assert d.disambiguate([t])[0].synset.name() == "house.n.05"
    # ... but with the default weights the strong prior of the dwelling sense (157 tagged
    # occurrences against 0) still wins: a known limitation documented in docs/qads.md
    d = wsd.Disambiguator("enhanced_lesk", embedder)
    assert d.disambiguate([t])[0].synset.name() == "house.n.01"
    bank = wsd.Target("bank", "n", "She deposited the money in her account at the bank.", "bank")
    assert d.disambiguate([bank])[0].synset.name() == "depository_financial_institution.n.01"
    g = d.extended_gloss(wsd.senses("house", "n")[4])
    assert g["legislative"] > 0 and "assembly" in g


def test_framework_scoring(demo_all):
    methods = {"first_sense": wsd.Disambiguator("first_sense"),
               "simplified_lesk": wsd.Disambiguator("simplified_lesk")}
    parts = {"ALL": demo_all, "senseval2": demo_all[demo_all["id"].str.startswith("senseval2")]
             .assign(id=lambda d: d["id"].str.split(".", n=1).str[1])}
    res = wsd_eval.evaluate(parts, methods).set_index(["method", "dataset"])
    assert (res["precision"] == res["recall"]).all()  # every instance attempted
    assert res.loc[("simplified_lesk", "ALL"), "f1"] > res.loc[("first_sense", "ALL"), "f1"]
    fs = res.loc[("first_sense", "senseval2")]
    assert fs["n"] == 7 and 0 <= fs["f1"] <= 1
    keys = wsd_eval.predict_keys(demo_all.iloc[:1], methods["first_sense"])
    assert keys == ["house%1:06:00::"]
    sc = wsd_eval.score(demo_all.iloc[:2], [None, "member%1:18:00::"])
    assert sc["precision"] == 1.0 and sc["recall"] == 0.5
