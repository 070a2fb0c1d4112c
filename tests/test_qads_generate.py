"""Candidates, synonyms, inflection and question generation on the hand-written demo questions."""
import pandas as pd
import pytest

from csbench.data import squad_v2
from csbench.qads import candidates as C
from csbench.qads import generate as G
from csbench.qads.wsd import Disambiguator
from csbench.wordnet import wordnet


@pytest.fixture(scope="module")
def nlp():
    return C.load_nlp()


@pytest.fixture(scope="module")
def demo(repo):
    return squad_v2.read_squad(repo / "resources/demo/mirror/squad_v2/dev-v2.0.json")


def texts(nlp, q, **kw):
    return [c.text for c in C.candidates(nlp(q), **kw)]


def test_candidates_skip_proper_nouns_numbers_entities_and_mwes(nlp):
    got = texts(nlp, "Which president did the House vote to impeach in 1998?")
    assert "House" not in got and "1998" not in got and "president" in got
    assert texts(nlp, "According to the text, when were the roads built?") == ["text", "roads", "built"]
    got = texts(nlp, "How many voting members does the House of Representatives have?")
    assert "Representatives" not in got and "members" in got
    assert texts(nlp, "Who was the leader of the Norse raiders?", pos=("VERB",)) == []


def test_synonyms_drop_same_stem_multiword_and_proper_names():
    wn = wordnet()
    assert "way" in G.synonyms(wn.synset("direction.n.01"), "direction")
    syn = G.synonyms(wn.synset("construct.v.01"), "build")
    assert "construct" in syn and all("_" not in s for s in syn)
    assert "make" not in G.synonyms(wn.synset("make.v.03"), "make")  # the word itself
    assert all(s.islower() for s in G.synonyms(wn.synset("house.n.05"), "house", hypernyms=True))
    assert "runner" not in G.synonyms(wn.synset("runner.n.01"), "running")  # same stem
    assert G.synonyms(wn.synset("know.v.01"), "know")[0] == "cognize"
    assert G.synonyms(wn.synset("know.v.01"), "know", min_count=1) == []


def test_inflection_and_case():
    assert G.inflect("purchase", "VBD") == "purchased"
    assert G.inflect("transport", "VBZ") == "transports"
    assert G.inflect("way", "NNS") == "ways"
    assert G.inflect("big", "JJR") == "bigger" and G.inflect("bigger", "JJR") == "bigger"
    assert G.inflect("take_off", "VBD") == "took off"
    assert G.inflect("difficult", "JJR") == "more difficult"
    assert G.inflect("pharmaceutics", "NNS") == "pharmaceutics"
    assert G.match_case("way", "Direction") == "Way" and G.match_case("usa", "US") == "USA"
    assert G.substitute("Which direction did Romans use?", [(6, 15, "way"), (27, 30, "apply")]) \
        == "Which way did Romans apply?"


def test_generate_demo(demo, nlp):
    subs, out = G.generate(demo, Disambiguator("first_sense"), nlp=nlp)
    assert list(subs.columns) == G.SUB_COLUMNS
    assert set(out) == {"one", "all"}
    one, all_ = out["one"], out["all"]
    assert one["id"].str.fullmatch(r".+-\d+").all() and all_["id"].str.endswith("-1").all()
    orig = demo.set_index("id")
    for df in (one, all_):
        base = df["id"].str.rsplit("-", n=1).str[0]
        assert (df["context"].values == orig.loc[base, "context"].values).all()
        assert (df["question"].values != orig.loc[base, "question"].values).all()
        # proper nouns and numbers are never touched
        for q, b in zip(df["question"], base):
            for keep in ("1998", "Normans", "Romans", "House", "Charles", "Normandy", "10th"):
                if keep in orig.loc[b, "question"]:
                    assert keep in q
    # the unanswerable question keeps its (empty) answers and plausible answers
    imp = all_[all_["is_impossible"]]
    assert len(imp) >= 1 and all(len(a) == 0 for a in imp["answers"])
    # a verb is inflected like the original token
    built = subs[(subs["token"] == "built") & subs["synonym"].notna()]
    # ("made": the Zipf policy prefers make over construct; irregular forms come from lemminflect)
    assert len(built) and built["synonym"].isin(["made", "constructed"]).all()
    # mode one makes one question per replaced candidate
    assert len(one) == subs["synonym"].notna().sum()
    doc = squad_v2.to_squad_json(all_)
    assert doc["version"] == "v2.0" and doc["data"][0]["paragraphs"][0]["qas"]
