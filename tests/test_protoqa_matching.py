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


# ------------------------------------------------------------------ embedding: fast == reference
class WordEmbedder:
    """Deterministic float32 vectors: the answer's words (random directions) plus per-text noise;
    records the batches it is asked to encode."""

    def __init__(self, dim=12):
        self.dim = dim
        self.calls = []

    def _dir(self, key):
        import hashlib

        seed = int.from_bytes(hashlib.sha1(key.encode()).digest()[:8], "little")
        return np.random.default_rng(seed).normal(size=self.dim)

    def encode(self, texts):
        self.calls.append(list(texts))
        out = []
        for t in texts:
            answer = t.split("? ", 1)[-1]
            v = sum((self._dir(w) for w in answer.split()), np.zeros(self.dim))
            v = v + 0.3 * self._dir("noise " + t)
            out.append(v / np.linalg.norm(v))
        return np.array(out, dtype=np.float32)


def _embedding_fixture():
    from csbench.protoqa.data import Predictions, Question

    qs = {
        "q1": Question("q1", "name a fruit?", (("apple", "apples", "green apple"), ("banana",),
                                               ("red cherry", "cherry")), (9, 5, 3),
                       raw=(("apple", 5), ("apples", 2), ("green apple", 2), ("banana", 5),
                            ("cherry", 2), ("red cherry", 1), ("rock", 1))),
        "q2": Question("q2", "name a pet?", (("dog", "puppy"),), (7,),
                       raw=(("dog", 5), ("puppy", 2))),                  # one cluster: cosine
        "q3": Question("q3", "name a colour?", (("red",), ("blue", "navy")), (6, 4),
                       raw=(("red", 6), ("blue", 3), ("navy", 1), ("dog", 1))),
        "q4": Question("q4", "name a tool?", (("hammer",),), (3,), raw=(("hammer", 3),)),
    }
    preds = Predictions(answers={
        "q1": ["Apples", "banana split", "rock", "cherry", "apple", "  dog ", "green apple pie",
               "a very long answer that goes on and on past the fifty character limit"],
        "q2": ["puppy", "cat", "dog", "red"],
        "q3": [],                                   # empty list: scores 0, nothing to encode
        "zz": ["unknown"],                          # unknown id: skipped
    })                                              # q4: no predictions
    return qs, preds


def _reference_scores(qs, preds, embedder, threshold):
    """Straightforward per-question embedding scoring: every text encoded on its own, GP fits
    exactly as described in EmbeddingMatcher's docstring, no prefetch, no caches."""
    from sklearn.gaussian_process import GaussianProcessClassifier
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel

    from csbench.protoqa import METRICS
    from csbench.protoqa.scoring import score_question

    def enc(q, a):
        return embedder.encode([f"{q.question} {a}"])[0]

    out = {}
    for qid, answers in preds.answers.items():
        if qid not in qs:
            continue
        q = qs[qid]
        answers = [preprocess(a) for a in answers]
        if not answers:
            out[qid] = {m: 0.0 for m in METRICS}
            continue
        texts = []
        for a in [a for a, _ in q.raw] + [a for c in q.clusters for a in c]:
            if a not in texts:
                texts.append(a)
        X = np.stack([enc(q, a) for a in texts])
        Z = np.stack([enc(q, a) for a in answers])
        probs = np.zeros((len(answers), len(q.clusters)))
        kernel = None
        for j, cluster in enumerate(q.clusters):
            y = np.array([int(a in cluster) for a in texts])
            if 0 < y.sum() < len(y):
                gpc = GaussianProcessClassifier(
                    kernel=kernel or ConstantKernel(1.0) * RBF(1.0),
                    optimizer=None if kernel else "fmin_l_bfgs_b", random_state=0).fit(X, y)
                kernel = gpc.kernel_
                probs[:, j] = gpc.predict_proba(Z)[:, 1]
            else:
                probs[:, j] = [min(max(max(float(z @ x) for x in X[y == 1]), 0.0), 1.0) for z in Z]
        m = np.zeros_like(probs)
        for i, row in enumerate(probs):
            j = int(np.argmax(row))
            if row[j] >= threshold:
                m[i, j] = 1.0
        out[qid] = score_question(m, None, q.counts)
    return out


@pytest.mark.parametrize("threshold", [0.1, 0.5])     # 0.5: some answers count as incorrect
def test_embedding_fast_path_equals_reference(threshold):
    from csbench.protoqa.scoring import Scorer, evaluate

    qs, preds = _embedding_fixture()
    ref = _reference_scores(qs, preds, WordEmbedder(), threshold)
    emb = WordEmbedder()
    df = evaluate(preds, qs, Scorer("embedding", embedder=emb, threshold=threshold))
    got = {}
    for r in df[df.question_id != "mean"].itertuples():
        got.setdefault(r.question_id, {})[r.metric] = r.score
    assert got == ref                       # exact float equality, every question and metric
    assert len({v for s in ref.values() for v in s.values()}) > 2     # not only 0 and 1
    # one encode call for the whole file, each text once (q3 has no answers, so no texts)
    assert len(emb.calls) == 1 and len(set(emb.calls[0])) == len(emb.calls[0])
    assert not any(t.startswith(("name a colour?", "name a tool?")) for t in emb.calls[0])


def test_embedding_prefetch_encodes_only_new_texts():
    from csbench.protoqa.data import Predictions
    from csbench.protoqa.scoring import Scorer, evaluate

    qs, preds = _embedding_fixture()
    emb = WordEmbedder()
    scorer = Scorer("embedding", embedder=emb)
    evaluate(preds, qs, scorer)
    evaluate(Predictions(answers={"q1": ["apple", "kiwi"]}), qs, scorer)
    assert emb.calls[1] == ["name a fruit? kiwi"]          # targets and "apple" kept in memory
    # a matcher used without prefetch (direct matrix calls) encodes on demand
    em = EmbeddingMatcher(WordEmbedder(), threshold=0.1)
    assert em.matrix(["apple"], qs["q1"]).sum() == 1.0
