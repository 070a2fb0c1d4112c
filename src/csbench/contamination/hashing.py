"""Vectorised word tokenisation and rolling n-gram hashing over byte buffers.

The scan never builds Python strings per word: a batch of documents is one ``bytes`` buffer,
normalised the way :func:`csbench.text.fold` normalises text (NFKC, lower case, punctuation and
whitespace are separators), split into words with a 256-entry lookup table, and every word and
every word n-gram gets a 64-bit polynomial hash from prefix sums (arithmetic modulo 2**64, which
numpy's uint64 wrap-around gives for free). A word is a maximal run of ASCII letters/digits or
non-ASCII bytes, so tokenising ``fold(text)`` on the benchmark side and the raw corpus bytes on the
corpus side gives the same words.
"""
from __future__ import annotations

import re
import unicodedata

import numpy as np

from ..text import fold

P_BYTE = 0x01000193                       # odd multiplier for bytes within a word (mod 2**32)
P_SPREAD = np.uint64(0xBF58476D1CE4E5B9)   # spreads a 32-bit word hash over 64 bits
P_WORD = np.uint64(0x9E3779B97F4A7C15)     # odd multiplier for words within an n-gram


def _inverse(p: int) -> int:
    return pow(int(p), -1, 1 << 64)


INV_BYTE = pow(P_BYTE, -1, 1 << 32)
INV_WORD = np.uint64(_inverse(P_WORD))

_WORD_LUT = np.zeros(256, dtype=bool)
for _c in b"abcdefghijklmnopqrstuvwxyz0123456789":
    _WORD_LUT[_c] = True
_WORD_LUT[0x80:] = True
# Word-byte values are offset by one so that no word byte hashes to zero.
_BYTE_VAL = np.arange(256, dtype=np.uint64) + np.uint64(1)

# UTF-8 encodings of the Unicode punctuation csbench.text.fold maps to spaces
# (U+2010-2027, U+2030-205E, U+00A1-00BF, U+00D7, U+00F7), plus the Unicode line separators.
_UNI_PUNCT = re.compile(
    rb"\xe2\x80[\x90-\xa9\xb0-\xbf]|\xe2\x81[\x80-\x9e]|\xc2[\xa0-\xbf]|\xc3[\x97\xb7]"
)




class _Powers:
    """Cached powers p**i and p**-i (mod 2**bits), grown on demand."""

    def __init__(self, p, inv, dtype):
        self.p, self.inv, self.dtype = p, inv, dtype
        self.pow = np.ones(1, dtype=dtype)
        self.ipow = np.ones(1, dtype=dtype)

    def get(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        if len(self.pow) < n:
            m = max(n, 2 * len(self.pow))
            with np.errstate(over="ignore"):
                self.pow = _power_table(self.p, m).astype(self.dtype)
                self.ipow = _power_table(self.inv, m).astype(self.dtype)
        return self.pow[:n], self.ipow[:n]


def _power_table(p, n: int) -> np.ndarray:
    out = np.empty(n, dtype=np.uint64)
    out[0] = 1
    step = 1
    with np.errstate(over="ignore"):
        # doubling: out[step:2step] = out[:step] * p**step
        pk = np.uint64(int(p))
        while step < n:
            k = min(step, n - step)
            np.multiply(out[:k], pk, out=out[step:step + k])
            pk = pk * pk
            step *= 2
    return out


_BYTE_POWERS = _Powers(P_BYTE, INV_BYTE, np.uint32)
_WORD_POWERS = _Powers(P_WORD, INV_WORD, np.uint64)


_RUN_CACHE: dict[bytes, bytes] = {}


def fold_run_uncached(run: bytes) -> bytes:
    """Normalisation of one run of non-ASCII UTF-8 bytes: NFKC, lower case, Unicode punctuation
    blanked (the per-character table of :mod:`.jsonl` is built from this very function)."""
    text = unicodedata.normalize("NFKC", run.decode("utf-8", errors="replace")).lower()
    return _UNI_PUNCT.sub(b" ", text.encode("utf-8", errors="replace"))


def _fold_run(run: bytes) -> bytes:
    out = _RUN_CACHE.get(run)
    if out is None:
        out = fold_run_uncached(run)
        if len(run) <= 64 and len(_RUN_CACHE) < 200_000:
            _RUN_CACHE[run] = out
    return out


def normalise_bytes(buf: bytes) -> bytes:
    """Corpus-side normalisation of UTF-8 bytes, word-equivalent to ``fold``.

    ASCII needs only ``bytes.lower`` (punctuation is a separator in the lookup table). Each run
    of non-ASCII bytes is NFKC-normalised and lower-cased as text and its Unicode punctuation
    blanked (runs are found with numpy and their results cached, since the same few characters
    recur). Offsets therefore stay those of the input for ASCII text. Limitation: a combining
    accent after an ASCII letter is not composed with it.
    """
    low = buf.lower()
    if low.isascii():
        return low
    hi = np.flatnonzero(np.frombuffer(low, dtype=np.uint8) >= 0x80)
    cut = np.flatnonzero(np.diff(hi) != 1)
    starts = np.concatenate((hi[:1], hi[cut + 1])).tolist()
    ends = (np.concatenate((hi[cut], hi[-1:])) + 1).tolist()
    out = []
    prev = 0
    for a, b in zip(starts, ends):
        out.append(low[prev:a])
        out.append(_fold_run(low[a:b]))
        prev = b
    out.append(low[prev:])
    return b"".join(out)


def tokenise(buf: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Word start offsets, end offsets and 64-bit word hashes of a normalised buffer.

    Bytes are hashed with 32-bit arithmetic (half the memory traffic of 64-bit), then each word
    hash is spread to 64 bits by an odd multiplier; collisions only cost a verification, since
    every hit is checked word by word against the benchmark text.
    """
    arr = np.frombuffer(buf, dtype=np.uint8)
    n = len(arr)
    if n == 0:
        e = np.zeros(0, dtype=np.int64)
        return e, e, np.zeros(0, dtype=np.uint64)
    isw = _WORD_LUT[arr]
    b = np.flatnonzero(isw[1:] != isw[:-1]) + 1
    if isw[0]:
        b = np.concatenate(([0], b))
    if isw[-1]:
        b = np.concatenate((b, [n]))
    starts, ends = b[0::2], b[1::2]
    pw, ipw = _BYTE_POWERS.get(n + 1)
    vals = arr.astype(np.uint32)
    vals += np.uint32(1)
    vals *= pw[:n]
    prefix = np.empty(n + 1, dtype=np.uint32)
    prefix[0] = 0
    np.cumsum(vals, out=prefix[1:])
    h32 = (prefix[ends] - prefix[starts]) * ipw[starts]
    with np.errstate(over="ignore"):
        return starts, ends, h32.astype(np.uint64) * P_SPREAD


def ngram_prefix(word_hashes: np.ndarray) -> np.ndarray:
    """Prefix sums of word hashes weighted by powers of ``P_WORD`` (length m + 1)."""
    m = len(word_hashes)
    pw, _ = _WORD_POWERS.get(m + 1)
    out = np.empty(m + 1, dtype=np.uint64)
    out[0] = 0
    with np.errstate(over="ignore"):
        np.cumsum(word_hashes * pw[:m], out=out[1:])
    return out


def ngram_hashes(prefix: np.ndarray, n: int) -> np.ndarray:
    """Hashes of all word n-grams (one per start word) from :func:`ngram_prefix` output."""
    m = len(prefix) - 1
    if m < n:
        return np.zeros(0, dtype=np.uint64)
    _, ipw = _WORD_POWERS.get(m + 1)
    with np.errstate(over="ignore"):
        return (prefix[n:] - prefix[:m - n + 1]) * ipw[:m - n + 1]


def text_words(text: str) -> list[str]:
    """The words of a benchmark text exactly as the corpus tokeniser sees them."""
    return fold(text).split()


def text_hashes(text: str) -> tuple[list[str], np.ndarray]:
    """Words and word hashes of a benchmark text (same hash as the corpus side)."""
    buf = normalise_bytes(fold(text).encode("utf-8"))
    s, e, h = tokenise(buf)
    return [buf[a:b].decode("utf-8", errors="replace") for a, b in zip(s, e)], h


def sequence_hash(word_hashes: np.ndarray) -> int:
    """Hash of a whole word sequence (equals :func:`ngram_hashes` for n = its length)."""
    pre = ngram_prefix(np.asarray(word_hashes, dtype=np.uint64))
    return int(ngram_hashes(pre, len(word_hashes))[0])
