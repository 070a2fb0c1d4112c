"""The per-code-point folding table of the fused readers (:func:`tables`, built once per process,
~0.3 s). :func:`.hashing.normalise_bytes` folds each maximal *run* of non-ASCII bytes as text:
NFKC, ``str.lower``, Unicode punctuation blanked. For code points 0..0x1FFFF the table stores
``fold_run_uncached(chr(cp).encode())`` (a pool of UTF-8 outputs plus offsets). Folding a run
character by character gives the run's result when every character is context-free, i.e. NFKC
and lower-casing of the run are the concatenation of those of its characters; a character is
marked context-free unless

* it is a surrogate, a Hangul jamo (conjoining U+1100-11FF, U+A960-A97F, U+D7B0-D7FF,
  compatibility U+3130-318F, half-width U+FFA0-FFDC), or its category is M* (combining marks);
* the first character of its NFKD decomposition has a non-zero combining class or can be the
  second character of a canonical composition (then it could compose with, or reorder
  against, the character before it);
* its NFKC form or the lower-cased NFKC form is empty, starts with a character of category
  M*, one with a non-zero combining class or a "second", or contains U+03A3 (the final-sigma
  rule of ``str.lower`` depends on the neighbours) or a Hangul jamo.

Marks *after* a starter in a character's own folding are allowed (the spacing accents such as
U+00B4 ´ fold to a space and a combining mark, U+0130 İ lower-cases to ``i`` and a combining
dot): the next character of a run is context-free too, so its folding starts with a starter
that is not a "second". Composition only joins a starter with a following character that is
either a non-starter or a "second" of a composition pair (a starter between them blocks it),
reordering only moves adjacent non-starters, and ``str.lower`` is context-free except for
U+03A3; so for runs of context-free characters per-character folding equals run folding (the
unit tests check it on random strings and on every pair of a sample of these characters).
Punctuation blanking is per character anyway (every pattern of ``hashing._UNI_PUNCT`` is one
whole character).
"""
from __future__ import annotations

import unicodedata
from dataclasses import dataclass

import numpy as np

from .. import hashing as H

TABLE_N = 0x20000          # code points covered by the folding table
_JAMO = ((0x1100, 0x1200), (0x3130, 0x3190), (0xA960, 0xA980), (0xD7B0, 0xD800), (0xFFA0, 0xFFDD))


@dataclass
class Tables:
    ok: np.ndarray        # uint8[TABLE_N]: 1 if the code point is context-free
    off: np.ndarray       # int64[TABLE_N + 1]: its folded UTF-8 is pool[off[cp]:off[cp + 1]]
    pool: np.ndarray      # uint8
    max_expand: int       # bound on output bytes per input byte


_TABLES: list[Tables] = []


def _is_jamo(cp: int) -> bool:
    return any(a <= cp < b for a, b in _JAMO)


def _composition_seconds() -> set[int]:
    """Code points that can be the second character of a canonical composition."""
    sec = set(range(0x1161, 0x1176)) | set(range(0x11A8, 0x11C3))    # Hangul V and T jamo
    for cp in range(0x30000):
        d = unicodedata.decomposition(chr(cp))
        if d and not d.startswith("<"):
            parts = d.split()
            if len(parts) == 2:
                sec.add(int(parts[1], 16))
    return sec


def context_free(cp: int, seconds: set[int]) -> bool:
    """True when folding ``chr(cp)`` alone gives its share of any run it stands in (module doc)."""
    if 0xD800 <= cp < 0xE000 or _is_jamo(cp) or cp < 0x80:
        return False
    c = chr(cp)
    if unicodedata.category(c).startswith("M"):
        return False
    first = unicodedata.normalize("NFKD", c)[0]
    if unicodedata.combining(first) or ord(first) in seconds:
        return False
    s = unicodedata.normalize("NFKC", c)
    for t in (s, s.lower()):
        if not t:
            return False
        f = t[0]                   # a starter that nothing before it can compose with
        if unicodedata.category(f).startswith("M") or unicodedata.combining(f) or ord(f) in seconds:
            return False
        if any(x == "\u03a3" or _is_jamo(ord(x)) for x in t):
            return False
    return True


def tables() -> Tables:
    """The per-code-point folding table (built on first use, once per process)."""
    if not _TABLES:
        seconds = _composition_seconds()
        ok = np.zeros(TABLE_N, dtype=np.uint8)
        parts: list[bytes] = []
        lens = np.zeros(TABLE_N, dtype=np.int64)
        expand = 1
        for cp in range(0x80, TABLE_N):
            if not context_free(cp, seconds):
                continue
            raw = chr(cp).encode("utf-8")
            out = H.fold_run_uncached(raw)
            ok[cp] = 1
            lens[cp] = len(out)
            parts.append(out)
            expand = max(expand, -(-len(out) // len(raw)))
        off = np.zeros(TABLE_N + 1, dtype=np.int64)
        np.cumsum(lens, out=off[1:])
        pool = np.frombuffer(b"".join(parts), dtype=np.uint8).copy()
        _TABLES.append(Tables(ok, off, pool, expand))
    return _TABLES[0]

