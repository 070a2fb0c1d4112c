"""Answer-cluster similarity: reference normalisation, WordNet partitions, cached == plain."""
import numpy as np
import pytest

from csbench.protoqa.matching import (EmbeddingMatcher, WordNetMatcher, exact_matrix,
                                      preprocess, wordnet_score_plain)


@pytest.fixture(scope="module")
def wn():
    return WordNetMatcher()


def test_preprocess_lowercases_truncates_strips():
    assert preprocess("  Take a Shower ") == "take a shower"
    long = "x" * 49 + " yz"
    assert preprocess(long) == "x" * 49
    assert exact_matrix([preprocess("Take a Shower"), "eat"],
                        [("shower", "take a shower"), ("breakfast",)]).tolist() == [[1, 0], [0, 0]]


@pytest.mark.parametrize("pred,true,score", [
    ("chewing gum", "gum", 1.0),          # multi-word lemma chewing_gum shares a synset with gum
    ("automobile", "car", 1.0),           # synonyms
    ("the car", "car", 1.0),              # stop words dropped
    ("red car", "car", 0.5),              # best partition pair: 1 matched group of 2
    ("banana", "car", 0.0),
    ("", "what", 1.0),                    # reference quirk: all-stop-word strings match
])
def test_wordnet_scores(wn, pred, true, score):
    assert wn.score(pred, true) == pytest.approx(score)
    assert wordnet_score_plain(pred, true) == pytest.approx(score)


def test_stopword_quirk_can_be_fixed():
    assert WordNetMatcher(stopword_only_match=False).score("the", "what") == 0.0


def test_cached_equals_plain_on_awkward_pairs(wn):
    pairs = [("brush teeth then get dressed and drive to the", "brush their teeth"),
             ("take a hot shower and eat", "take a shower"), ("dark rain clouds", "clouds"),
             ("weather forecast on tv", "weather forecast"), ("oh my god", "omg"),
             ("pen and pencil", "pencil"), ("ice cube", "ice")]
    for a, b in pairs:
        assert wn.score(a, b) == pytest.approx(wordnet_score_plain(a, b)), (a, b)


def test_wordnet_matrix_rounds_half_to_even(wn):
    m = wn.matrix(["red car", "automobile"], [("car",), ("banana",)])
    assert m.tolist() == [[0.0, 0.0], [1.0, 0.0]]   # 0.5 rounds to 0 like np.round


class FakeEmbedder:
    """Answer words -> fixed random directions (question prefix ignored)."""

    def __init__(self, question):
        self.q = question
        self.rng = np.random.default_rng(0)
        self.vec = {}

    def encode(self, texts):
        out = []
        for t in texts:
            a = t[len(self.q) + 1:]
            if a not in self.vec:
                self.vec[a] = self.rng.normal(size=16)
            v = self.vec[a]
            out.append(v / np.linalg.norm(v))
        return np.array(out)


def test_embedding_matcher_assigns_known_answers():
    from csbench.protoqa.data import Question

    q = Question("q", "name a fruit.", (("apple", "apples"), ("banana",)), (10, 5),
                 raw=(("apple", 6), ("apples", 4), ("banana", 5), ("rock", 1)))
    em = EmbeddingMatcher(FakeEmbedder("name a fruit."), threshold=0.1)
    m = em.matrix(["apples", "banana"], q)
    assert m.tolist() == [[1.0, 0.0], [0.0, 1.0]]
    assert em.matrix([], q).shape == (0, 2)


def test_lemma_index_matches_nltk_synsets():
    from csbench.protoqa.matching import synset_ids
    from csbench.wordnet import wordnet

    wn = wordnet()
    for w in ["dog", "Dogs", "geese", "running", "better", "happier", "teeth", "chewing_gum",
              "mice", "was", "", "ate", "leaves", "axes", "best", "news", "ice_cream", "glasses"]:
        want = {(s.pos().replace("s", "a"), s.offset()) for s in wn.synsets(w)}
        assert synset_ids(w) == want, w
