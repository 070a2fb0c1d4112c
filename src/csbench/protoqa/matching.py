"""Answer-cluster similarity: score matrices (answers x clusters) in [0, 1].

Reference behaviour (iesl/protoqa-evaluator) reproduced here:

* a predicted answer is pre-processed with ``answer.lower()[:50].strip()``; cluster strings are
  used as released (not pre-processed);
* exact: 1 if the pre-processed answer equals one of the cluster's strings;
* WordNet: both strings are tokenised with NLTK's Treebank-style word tokenizer (punctuation
  tokens kept), NLTK's English stop words removed; every partition of each token list into
  contiguous groups is tried; groups score 1 when equal or when ``wn.synsets`` of the groups
  (spaces as underscores) share a synset; a partition pair scores the optimal one-to-one matching
  divided by the larger number of groups; the pair score is the best partition pair; against a
  cluster, the max over its strings; the cluster matrix is then rounded half-to-even (np.round).
  Two strings that are all stop words both become the single group "" and so match each other
  (a reference quirk, kept unless ``stopword_only_match=False``).

:class:`WordNetMatcher` computes the same numbers as :func:`wordnet_score_plain` (a direct,
uncached transcription used as the benchmark baseline and as a test oracle) but caches
tokenisation, synsets and pair scores, skips pairs that share no matching span, and prunes
partition pairs whose bound cannot beat the best found.
"""
from __future__ import annotations

import functools
import itertools
import logging

import numpy as np
from scipy.optimize import linear_sum_assignment

from ..text import NLTK_STOP_WORDS
from ..wordnet import wordnet

log = logging.getLogger(__name__)

LENGTH_LIMIT = 50


def preprocess(answer: str, length_limit: int = LENGTH_LIMIT) -> str:
    """The reference's answer normalisation: lower-case, truncate to 50 characters, strip."""
    return answer.lower()[:length_limit].strip()


@functools.lru_cache(maxsize=1)
def _tokenizer():
    from nltk.tokenize import NLTKWordTokenizer

    return NLTKWordTokenizer()


def tokenize(text: str, stop_words=NLTK_STOP_WORDS) -> list[str]:
    return [t for t in _tokenizer().tokenize(text) if t not in stop_words]


def partitions(tokens: list[str]):
    """All splits of ``tokens`` into contiguous groups, each group joined by spaces."""
    n = len(tokens)
    if n == 0:
        yield [""]
        return
    for k in range(n):
        for cuts in itertools.combinations(range(1, n), k):
            bounds = (0, *cuts, n)
            yield [" ".join(tokens[a:b]) for a, b in zip(bounds, bounds[1:])]


# ----------------------------------------------------------------------------- exact
def exact_matrix(answers: list[str], clusters) -> np.ndarray:
    """answers (already pre-processed) x clusters; 1.0 where the answer is a cluster string."""
    sets = [frozenset(c) for c in clusters]
    m = np.zeros((len(answers), len(sets)))
    for i, a in enumerate(answers):
        for j, s in enumerate(sets):
            if a in s:
                m[i, j] = 1.0
    return m


# ----------------------------------------------------------------------------- WordNet, plain
def wordnet_score_plain(pred: str, true: str) -> float:
    """Direct, uncached WordNet score of two strings (reference algorithm, for baselines/tests)."""
    wn = wordnet()

    def group_score(a: str, b: str) -> float:
        sa = wn.synsets(a.replace(" ", "_"))
        sb = wn.synsets(b.replace(" ", "_"))
        syn = 1.0 if any(x == y for x in sa for y in sb) else 0.0
        return max(syn, float(a == b))

    best = 0.0
    for pa in partitions(tokenize(pred)):
        for pb in partitions(tokenize(true)):
            m = np.array([[group_score(a, b) for b in pb] for a in pa])
            r, c = linear_sum_assignment(-m)
            best = max(best, m[r, c].sum() / max(m.shape))
    return best


def wordnet_matrix_plain(answers: list[str], clusters) -> np.ndarray:
    m = np.zeros((len(answers), len(clusters)))
    for i, a in enumerate(answers):
        for j, cl in enumerate(clusters):
            m[i, j] = max(wordnet_score_plain(a, t) for t in cl)
    return np.round(m)


# ----------------------------------------------------------------------------- WordNet, fast
POS_LIST = ("n", "v", "a", "r")
_FILES = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
# NLTK's WordNetCorpusReader.MORPHOLOGICAL_SUBSTITUTIONS (morphy's detachment rules)
_SUBSTITUTIONS = {
    "n": [("s", ""), ("ses", "s"), ("ves", "f"), ("xes", "x"), ("zes", "z"), ("ches", "ch"),
          ("shes", "sh"), ("men", "man"), ("ies", "y")],
    "v": [("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""),
          ("ing", "e"), ("ing", "")],
    "a": [("er", ""), ("est", ""), ("er", "e"), ("est", "e")],
    "r": [],
}


class LemmaIndex:
    """WordNet's lemma -> synset offsets index and morphy, read straight from the dict files.

    Gives the same synset identities as NLTK's ``wn.synsets(lemma)`` (lower-casing, exception
    lists, one round of detachment rules, forms kept only if indexed for that part of speech)
    without loading NLTK's full reader (about 5 s); building this index takes well under 1 s.
    """

    def __init__(self, root=None):
        from pathlib import Path

        if root is None:
            from ..wordnet import ensure_nltk_path

            ensure_nltk_path()
            import nltk

            root = nltk.data.find("corpora/wordnet")
        root = Path(str(root))
        self.index: dict[str, dict[str, tuple[int, ...]]] = {}
        self.exceptions: dict[str, dict[str, list[str]]] = {}
        for pos, suffix in _FILES.items():
            with open(root / f"index.{suffix}", encoding="utf-8") as fh:
                for line in fh:
                    if line.startswith(" "):
                        continue
                    f = line.split()
                    n_syn, n_ptr = int(f[2]), int(f[3])
                    offs = f[6 + n_ptr:6 + n_ptr + n_syn]
                    self.index.setdefault(f[0], {})[f[1]] = tuple(int(o) for o in offs)
            exc = {}
            with open(root / f"{suffix}.exc", encoding="utf-8") as fh:
                for line in fh:
                    terms = line.split()
                    if terms:
                        exc[terms[0]] = terms[1:]
            self.exceptions[pos] = exc

    def morphy(self, form: str, pos: str) -> list[str]:
        exc = self.exceptions[pos]
        if form in exc:
            forms = exc[form]
        else:
            forms = [form[: -len(old)] + new for old, new in _SUBSTITUTIONS[pos]
                     if form.endswith(old)]
        out = []
        for f in [form] + forms:
            if pos in self.index.get(f, ()) and f not in out:
                out.append(f)
        return out

    def synset_ids(self, lemma: str) -> frozenset:
        lemma = lemma.lower()
        return frozenset((p, off) for p in POS_LIST for form in self.morphy(lemma, p)
                         for off in self.index.get(form, {}).get(p, ()))


@functools.lru_cache(maxsize=1)
def lemma_index() -> LemmaIndex:
    return LemmaIndex()


def synset_ids(lemma: str) -> frozenset:
    """Identities ``(pos, offset)`` of the synsets NLTK's ``wn.synsets(lemma)`` returns."""
    return lemma_index().synset_ids(lemma)


def _max_matching(adj: list[list[int]], n_right: int) -> int:
    """Maximum bipartite matching size (Kuhn); ``adj[i]`` lists right vertices of left ``i``."""
    match_r = [-1] * n_right

    def augment(i, seen):
        for j in adj[i]:
            if not seen[j]:
                seen[j] = True
                if match_r[j] < 0 or augment(match_r[j], seen):
                    match_r[j] = i
                    return True
        return False

    return sum(augment(i, [False] * n_right) for i in range(len(adj)))


class WordNetMatcher:
    """Cached WordNet similarity with the reference's numbers."""

    def __init__(self, stop_words=NLTK_STOP_WORDS, stopword_only_match: bool = True):
        self.stop_words = frozenset(stop_words)
        self.stopword_only_match = stopword_only_match
        self._tokens: dict[str, tuple[str, ...]] = {}
        self._synsets: dict[str, frozenset] = {}
        self._pairs: dict[tuple[str, str], float] = {}
        self._parts: dict[tuple[str, ...], list[list[int]]] = {}

    def tokens(self, text: str) -> tuple[str, ...]:
        t = self._tokens.get(text)
        if t is None:
            t = self._tokens[text] = tuple(tokenize(text, self.stop_words))
        return t

    def synsets(self, group: str) -> frozenset:
        s = self._synsets.get(group)
        if s is None:
            s = self._synsets[group] = synset_ids(group.replace(" ", "_"))
        return s

    def _spans(self, toks):
        """Span strings and, per partition, the span indices of its groups."""
        n = len(toks)
        if n == 0:
            return [""], [[0]]
        index = {}
        spans = []
        for a in range(n):
            for b in range(a + 1, n + 1):
                index[(a, b)] = len(spans)
                spans.append(" ".join(toks[a:b]))
        parts = self._parts.get(toks)
        if parts is None:
            parts = []
            for k in range(n):
                for cuts in itertools.combinations(range(1, n), k):
                    bounds = (0, *cuts, n)
                    parts.append([index[ab] for ab in zip(bounds, bounds[1:])])
            self._parts[toks] = parts
        return spans, parts

    def score(self, pred: str, true: str) -> float:
        key = (pred, true)
        s = self._pairs.get(key)
        if s is None:
            s = self._pairs[key] = self._score(self.tokens(pred), self.tokens(true))
        return s

    def _score(self, tp, tt) -> float:
        if tp == tt:
            return 1.0 if (tp or self.stopword_only_match) else 0.0
        if not tp or not tt:
            return 0.0
        sp, pp = self._spans(tp)
        st, pt = self._spans(tt)
        syn_t = [self.synsets(b) for b in st]
        match = [[j for j, b in enumerate(st) if a == b or (syn_t[j] and self.synsets(a) & syn_t[j])]
                 for a in sp]
        if not any(match):
            return 0.0
        best = 0.0
        for P in pp:
            if not any(match[i] for i in P):
                continue
            for Q in pt:
                lo, hi = sorted((len(P), len(Q)))
                if lo / hi <= best:
                    continue
                qpos = {span: k for k, span in enumerate(Q)}
                adj = [[qpos[j] for j in match[i] if j in qpos] for i in P]
                val = _max_matching(adj, len(Q)) / hi
                if val > best:
                    best = val
                    if best >= 1.0:
                        return 1.0
        return best

    def matrix(self, answers: list[str], clusters) -> np.ndarray:
        m = np.zeros((len(answers), len(clusters)))
        for i, a in enumerate(answers):
            for j, cl in enumerate(clusters):
                best = 0.0
                for t in cl:
                    v = self.score(a, t)
                    if v > best:
                        best = v
                        if v >= 1.0:
                            break
                m[i, j] = best
        return np.round(m)


# ----------------------------------------------------------------------------- embedding
class EmbeddingMatcher:
    """The ProtoQA paper's vector matching.

    Each text is ``"<question> <answer>"`` embedded with the configured encoder. Per question,
    one Gaussian-process classifier (RBF kernel) per cluster is fitted on that question's raw
    crowd answers (members of the cluster positive, all other raw answers negative). An answer is
    assigned to the cluster with the highest membership probability if it is >= ``threshold``.
    A cluster whose raw answers are all positive (single-cluster question) falls back to the
    cosine similarity to its nearest member as the probability. The kernel's hyper-parameters
    are optimised (marginal likelihood) for the question's first cluster and reused for its other
    clusters (one optimisation per question instead of one per cluster: about 8x faster).

    Speed: :meth:`prefetch` (called by :func:`csbench.protoqa.scoring.evaluate`) encodes every
    text of a predictions file in one :meth:`Embedder.encode` call (length-sorted batches across
    questions, one cache look-up) and keeps the vectors in memory, so each text is encoded once
    per process; the GP fits and predictions (matrices of some 10-90 rows) run with one BLAS
    thread (``blas_threads``): at that size threads only add synchronisation, and with another
    job holding a core they made the GP work 4-5x slower (docs/protoqa.md). The numbers are
    those of the per-question version (same texts, same fits; checked bit for bit on the dev set).
    """

    def __init__(self, embedder, threshold: float = 0.1, seed: int = 0, blas_threads: int = 1):
        self.embedder = embedder
        self.threshold = threshold
        self.seed = seed
        self.blas_threads = blas_threads
        self._models: dict[str, list] = {}
        self._vectors: dict[str, np.ndarray] = {}
        self._pool = None

    def _text(self, question: str, answer: str) -> str:
        return f"{question} {answer}"

    @staticmethod
    def _targets(q) -> list[str]:
        """The question's raw answers then its cluster strings, each once, in that order."""
        return list(dict.fromkeys([a for a, _ in q.raw] + [a for c in q.clusters for a in c]))

    def prefetch(self, items) -> int:
        """Encode, in one call, every text that scoring ``items`` will need: ``(question,
        pre-processed answers)`` pairs. Returns the number of texts not held in memory before."""
        texts = []
        for q, answers in items:
            if answers:
                texts += [self._text(q.question, a) for a in self._targets(q)]
                texts += [self._text(q.question, a) for a in answers]
        return self._remember(texts)

    def _remember(self, texts) -> int:
        new = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if new:
            self._vectors.update(zip(new, self.embedder.encode(new)))
        return len(new)

    def _encode(self, texts: list[str]) -> np.ndarray:
        self._remember(texts)
        return np.stack([self._vectors[t] for t in texts])

    def _blas(self):
        """Context capping the BLAS thread pool at ``blas_threads`` (None: leave it)."""
        import contextlib

        if self.blas_threads is None:
            return contextlib.nullcontext()
        if self._pool is None:
            import sklearn.gaussian_process  # noqa: F401  (loads scipy's BLAS before the scan)
            from threadpoolctl import ThreadpoolController

            self._pool = ThreadpoolController()
        return self._pool.limit(limits=self.blas_threads, user_api="blas")

    def _fit(self, q) -> list:
        if q.qid in self._models:
            return self._models[q.qid]
        from sklearn.gaussian_process import GaussianProcessClassifier
        from sklearn.gaussian_process.kernels import RBF, ConstantKernel

        texts = self._targets(q)
        members = [set(c) for c in q.clusters]
        X = self._encode([self._text(q.question, a) for a in texts])
        models = []
        kernel = None       # hyper-parameters fitted on the first listed cluster, then reused
        for mem in members:
            y = np.array([1 if a in mem else 0 for a in texts])
            if 0 < y.sum() < len(y):
                gpc = GaussianProcessClassifier(
                    kernel=kernel if kernel is not None else ConstantKernel(1.0) * RBF(1.0),
                    optimizer=None if kernel is not None else "fmin_l_bfgs_b",
                    random_state=self.seed)
                gpc.fit(X, y)
                kernel = gpc.kernel_
                models.append(("gp", gpc))
            else:
                models.append(("nn", X[y == 1]))
        self._models[q.qid] = models
        return models

    def matrix(self, answers: list[str], q) -> np.ndarray:
        m = np.zeros((len(answers), len(q.clusters)))
        if not answers:
            return m
        texts = [self._text(q.question, a) for a in answers]
        targets = [] if q.qid in self._models else [self._text(q.question, a)
                                                     for a in self._targets(q)]
        self._remember(targets + texts)         # encode outside the BLAS cap; no-op if prefetched
        with self._blas():
            models = self._fit(q)
            Z = self._encode(texts)
            probs = np.zeros_like(m)
            for j, (kind, mdl) in enumerate(models):
                if kind == "gp":
                    probs[:, j] = mdl.predict_proba(Z)[:, 1]
                else:
                    probs[:, j] = np.clip((Z @ mdl.T).max(axis=1), 0.0, 1.0)
        best = probs.argmax(axis=1)
        ok = probs[np.arange(len(answers)), best] >= self.threshold
        m[np.arange(len(answers))[ok], best[ok]] = 1.0
        return m
