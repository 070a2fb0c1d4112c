"""Word-sense disambiguation over WordNet 3.0: first sense, simplified Lesk, enhanced Lesk.

*first_sense*: WordNet's first synset of the lemma and POS (ordered by tagged frequency).

*simplified_lesk*: the sense whose gloss + examples share most lemmatised, non-stop-word terms with
the context (ties: the earlier sense).

*enhanced_lesk* (after Basile, Caputo & Semeraro 2014): each sense's gloss is extended with the
glosses of related synsets (hypernyms, hyponyms, meronyms, holonyms, similar-to, also-see), each
related gloss weighted by ``decay ** distance``; terms are weighted by their inverse gloss
frequency (IGF, over all WordNet glosses). The extended gloss and the context become IGF-weighted
sums of term embeddings from the configured encoder (through :class:`csbench.embed.Embedder`, so
cached); optionally the sense's own gloss sentence is also compared with the whole context sentence.
The similarity is combined with the sense prior from WordNet's tagged-sense counts (``cntlist.rev``,
``Lemma.count()``, add-one smoothed): ``score = w_sim * sim + w_gloss * gloss_sim + w_prior * f(prior)``
with ``f = log`` (default) or the identity. Default weights were chosen on semeval2007 (the usual
development set of the framework) only.
"""
from __future__ import annotations

import functools
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..config import default
from ..text import stop_words, words
from ..wordnet import wordnet

METHODS = ("first_sense", "simplified_lesk", "enhanced_lesk")
UPOS_TO_WN = {"NOUN": "n", "VERB": "v", "ADJ": "a", "ADV": "r"}
LESK = default("qads.wsd.enhanced_lesk")  # the schema's defaults of the enhanced Lesk settings
RELATIONS = tuple(LESK["relations"])


@dataclass
class Target:
    """One word to disambiguate: its lemma, WordNet POS (n/v/a/r) and context text."""
    lemma: str
    pos: str
    context: str
    word: str = ""


@dataclass
class Choice:
    synset: object | None
    score: float
    scores: list = field(default_factory=list)


def senses(lemma: str, pos: str):
    """Synsets of ``lemma`` with POS ``pos`` (adjectives include satellites), WordNet order."""
    wn = wordnet()
    key = lemma.strip().lower().replace(" ", "_")
    if pos == "a":
        return [s for s in wn.synsets(key) if s.pos() in ("a", "s")]
    return wn.synsets(key, pos=pos)


def lemma_in(synset, lemma: str):
    """The :class:`Lemma` of ``synset`` for ``lemma`` (or its morphological base), else None."""
    key = lemma.strip().lower().replace(" ", "_")
    names = {l.name().lower(): l for l in synset.lemmas()}
    if key in names:
        return names[key]
    base = wordnet().morphy(key, synset.pos() if synset.pos() != "s" else "a")
    return names.get(base) if base else None


def prior(synsets, lemma: str) -> np.ndarray:
    """Add-one smoothed P(sense | lemma) from the tagged-sense counts (``cntlist.rev``)."""
    counts = []
    for s in synsets:
        lem = lemma_in(s, lemma)
        counts.append(lem.count() if lem is not None else 0)
    c = np.asarray(counts, dtype=np.float64) + 1.0
    return c / c.sum()


@functools.lru_cache(maxsize=500_000)
def lemmatise(word: str) -> str:
    wn = wordnet()
    for pos in ("n", "v", "a", "r"):
        base = wn.morphy(word, pos)
        if base:
            return base
    return word


def terms(text: str) -> list[str]:
    """Lemmatised content terms (stop words, numbers and one-letter tokens removed)."""
    sw = stop_words()
    return [lemmatise(w) for w in words(text.replace("_", " "))
            if w not in sw and len(w) > 1 and not w.isdigit()]


def gloss_text(synset) -> str:
    return "; ".join([synset.definition()] + list(synset.examples()))


@functools.lru_cache(maxsize=1)
def gloss_frequency() -> tuple[Counter, int]:
    """Number of synset glosses containing each term, over the WordNet ``data.*`` files."""
    wn = wordnet()
    root = Path(wn.root.path if hasattr(wn.root, "path") else str(wn.root))
    df: Counter = Counter()
    n = 0
    for name in ("data.noun", "data.verb", "data.adj", "data.adv"):
        with open(root / name, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith(" ") or "|" not in line:
                    continue
                n += 1
                df.update(set(terms(line.split("|", 1)[1])))
    return df, n


def igf(term: str) -> float:
    df, n = gloss_frequency()
    return math.log((n + 1) / (df.get(term, 0) + 1))


def related(synset, relations=RELATIONS, depth: int = 1):
    """``[(synset, distance)]`` reachable through ``relations`` within ``depth`` steps, in a fixed
    order (some of NLTK's relations come in set order, which varies between processes; the order
    decides how extended glosses are summed, hence their last float bits)."""
    seen = {synset: 0}
    frontier = [synset]
    for d in range(1, depth + 1):
        nxt = []
        for s in frontier:
            for rel in relations:
                for r in sorted(getattr(s, rel)(), key=lambda x: x.name()):
                    if r not in seen:
                        seen[r] = d
                        nxt.append(r)
        frontier = nxt
    return [(s, d) for s, d in seen.items() if d > 0]


def _ctx_terms(t: Target) -> list[str]:
    skip = {t.lemma.lower(), t.word.lower(), lemmatise(t.word.lower())} if t.word else {t.lemma.lower()}
    return [w for w in terms(t.context) if w not in skip]


class Disambiguator:
    """Choose a synset per :class:`Target` with one of :data:`METHODS`."""

    def __init__(self, method: str = "enhanced_lesk", embedder=None, w_sim: float = LESK["w_sim"],
                 w_gloss: float = LESK["w_gloss"], w_prior: float = LESK["w_prior"],
                 decay: float = LESK["decay"], depth: int = LESK["depth"], relations=RELATIONS,
                 prior_mode: str = LESK["prior"]):
        if method not in METHODS:
            raise ValueError(f"unknown WSD method {method!r}; choose from {METHODS}")
        if method == "enhanced_lesk" and embedder is None:
            raise ValueError("enhanced_lesk needs an embedder (csbench.embed.Embedder)")
        self.method, self.embedder = method, embedder
        self.w_sim, self.w_gloss, self.w_prior = w_sim, w_gloss, w_prior
        self.decay, self.depth, self.relations = decay, depth, tuple(relations)
        if prior_mode not in ("log", "linear"):
            raise ValueError(f"prior_mode must be 'log' or 'linear', not {prior_mode!r}")
        self.prior_mode = prior_mode
        self._ext: dict = {}

    # -- simplified Lesk -------------------------------------------------------------------
    def _lesk(self, t: Target, syns) -> list[float]:
        ctx = set(_ctx_terms(t))
        return [float(len(ctx & set(terms(gloss_text(s))))) for s in syns]

    # -- enhanced Lesk ---------------------------------------------------------------------
    def extended_gloss(self, synset) -> dict[str, float]:
        """Term -> weight of the extended gloss (IGF x relation distance decay)."""
        if synset in self._ext:
            return self._ext[synset]
        bag: Counter = Counter()
        for s, d in [(synset, 0)] + related(synset, self.relations, self.depth):
            w = self.decay ** d
            for term in terms(gloss_text(s)) + terms(" ".join(s.lemma_names())):
                bag[term] += w
        out = {term: c * igf(term) for term, c in bag.items()}
        self._ext[synset] = out
        return out

    def _term_vectors(self, bags: list[dict[str, float]]) -> np.ndarray:
        vocab = sorted({t for b in bags for t in b})
        dim = self.embedder.dim
        if not vocab:
            return np.zeros((len(bags), dim), dtype=np.float32)
        emb = self.embedder.encode(vocab)
        index = {t: i for i, t in enumerate(vocab)}
        out = np.zeros((len(bags), dim), dtype=np.float32)
        for i, b in enumerate(bags):
            if b:
                idx = [index[t] for t in b]
                out[i] = np.asarray(list(b.values()), dtype=np.float32) @ emb[idx]
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1.0, norms)

    def _enhanced(self, targets, all_syns) -> list[list[float]]:
        flat = sorted({s for syns in all_syns for s in syns}, key=lambda s: s.name())
        sidx = {s: i for i, s in enumerate(flat)}
        gvec = self._term_vectors([self.extended_gloss(s) for s in flat])
        cvec = self._term_vectors([{w: igf(w) for w in _ctx_terms(t)} for t in targets])
        if self.w_gloss:
            gsent = self.embedder.encode([gloss_text(s) for s in flat])
            csent = self.embedder.encode([t.context for t in targets])
        out = []
        for i, (t, syns) in enumerate(zip(targets, all_syns)):
            if not syns:
                out.append([])
                continue
            rows = [sidx[s] for s in syns]
            sc = self.w_sim * (gvec[rows] @ cvec[i])
            if self.w_gloss:
                sc = sc + self.w_gloss * (gsent[rows] @ csent[i])
            p = prior(syns, t.lemma)
            sc = sc + self.w_prior * (np.log(p) if self.prior_mode == "log" else p)
            out.append([float(x) for x in sc])
        return out

    def disambiguate(self, targets: list[Target]) -> list[Choice]:
        all_syns = [senses(t.lemma, t.pos) for t in targets]
        if self.method == "first_sense":
            scores = [list(prior(s, t.lemma)) if s else [] for t, s in zip(targets, all_syns)]
            scores = [[1.0] + [0.0] * (len(s) - 1) if s else [] for s in scores]
            # keep the smoothed prior of the first sense as the confidence
            for t, s, sc in zip(targets, all_syns, scores):
                if s:
                    sc[0] = float(prior(s, t.lemma)[0])
        elif self.method == "simplified_lesk":
            scores = [self._lesk(t, s) for t, s in zip(targets, all_syns)]
        else:
            scores = self._enhanced(targets, all_syns)
        out = []
        for syns, sc in zip(all_syns, scores):
            if not syns:
                out.append(Choice(None, 0.0, []))
                continue
            best = int(np.argmax(sc)) if self.method != "first_sense" else 0
            out.append(Choice(syns[best], float(sc[best]), list(sc)))
        return out


def enhanced_lesk(cfg: dict, embedder) -> Disambiguator:
    """The enhanced Lesk method with the ``qads.wsd.enhanced_lesk`` settings ``cfg``."""
    return Disambiguator("enhanced_lesk", embedder, w_sim=cfg["w_sim"], w_gloss=cfg["w_gloss"],
                         w_prior=cfg["w_prior"], decay=cfg["decay"], depth=cfg["depth"],
                         relations=cfg["relations"], prior_mode=cfg["prior"])
