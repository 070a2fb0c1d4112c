"""Text normalisation shared by every task (one definition, used everywhere)."""
from __future__ import annotations

import functools
import re
import string
import unicodedata

_WS = re.compile(r"\s+")
_WORD = re.compile(r"[0-9A-Za-z\u00C0-\uFFFF]+(?:'[A-Za-z]+)?")
_PUNCT_TABLE = {ord(c): " " for c in string.punctuation}
_UNICODE_PUNCT = re.compile(r"[\u2010-\u2027\u2030-\u205E\u00A1-\u00BF\u00D7\u00F7]")

# NLTK's English stop-word list, pinned (nltk_data's corpora/stopwords/english, the data behind
# `nltk.corpus.stopwords.words("english")`, which is not shipped offline): 198 words, the 179 of
# the list before its 2023 revision plus the 19 contractions that revision added at the end
# ("he'd" ... "we've"). Used by the ProtoQA evaluator's WordNet matching and the ProtoQA
# baseline's paper recipe; not the list of `stop_words()` (scikit-learn's, 318 words).
NLTK_STOP_WORDS = frozenset("""
i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself
yourselves he him his himself she she's her hers herself it it's its itself they them their
theirs themselves what which who whom this that that'll these those am is are was were be been
being have has had having do does did doing a an the and but if or because as until while of at
by for with about against between into through during before after above below to from up down
in out on off over under again further then once here there when where why how all any both
each few more most other some such no nor not only own same so than too very s t can will just
don don't should should've now d ll m o re ve y ain aren aren't couldn couldn't didn didn't
doesn doesn't hadn hadn't hasn hasn't haven haven't isn isn't ma mightn mightn't mustn mustn't
needn needn't shan shan't shouldn shouldn't wasn wasn't weren weren't won won't wouldn wouldn't
he'd he'll he's i'd i'll i'm i've it'd it'll she'd she'll they'd they'll they're they've we'd
we'll we're we've
""".split())


def fold(text: str) -> str:
    """Lower-case, Unicode NFKC, punctuation to spaces, whitespace collapsed, stripped.

    This is the "normalised" form used for duplicate detection and contamination scans.
    """
    text = unicodedata.normalize("NFKC", text).lower()
    text = text.translate(_PUNCT_TABLE)
    text = _UNICODE_PUNCT.sub(" ", text)
    return _WS.sub(" ", text).strip()


def words(text: str) -> list[str]:
    """Lower-cased word tokens (letters/digits, keeping an apostrophe suffix such as "it's")."""
    return _WORD.findall(unicodedata.normalize("NFKC", text).lower())


@functools.lru_cache(maxsize=1)
def stop_words() -> frozenset[str]:
    """English stop words (scikit-learn's list; no download needed)."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


@functools.lru_cache(maxsize=1)
def _stemmer():
    from nltk.stem.porter import PorterStemmer

    return PorterStemmer()


@functools.lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    """Porter stem of a lower-case word."""
    return _stemmer().stem(word)


def bag_of_words(text: str) -> tuple[str, ...]:
    """Sorted, de-duplicated stemmed content words: the "stemmed bag of words" of a text."""
    sw = stop_words()
    return tuple(sorted({stem(w) for w in words(text) if w not in sw}))
