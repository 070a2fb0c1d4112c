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
