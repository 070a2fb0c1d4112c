"""Vectorised word tokenisation and rolling n-gram hashing over byte buffers.

The scan never builds Python strings per word: a batch of documents is one ``bytes`` buffer,
normalised the way :func:`csbench.text.fold` normalises text (NFKC, lower case, punctuation and
whitespace are separators), split into words with a 256-entry lookup table, and every word and
every word n-gram gets a 64-bit hash from prefix XORs of rotated word hashes
(:func:`ngram_hashes`). A word is a maximal run of ASCII
letters/digits or non-ASCII bytes, so tokenising ``fold(text)`` on the benchmark side and the
normalised corpus bytes on the corpus side gives the same words.

**Word hash** (:func:`word_hashes`; the compiled kernels of :mod:`.kernels.ngram` compute the same
value): a word of L bytes is read as two little-endian 64-bit numbers, its first min(L, 8)
bytes ``a`` and, when L > 8, its last 8 bytes ``b`` (0 otherwise); then
``h = a*K_FIRST ^ b*K_LAST ^ L*K_LEN``, ``h ^= h >> 32`` and the word hash is ``h * P_SPREAD``
(mod 2**64). Two loads and a few multiplies per word, whatever its length, so the compiled scan
needs no work per byte beyond finding word boundaries. Words longer than 16 bytes that agree on
their first 8 bytes, last 8 bytes and length share a hash; like any collision this only costs a
verification, since every hit is checked word by word against the benchmark text.
"""
from __future__ import annotations

import re
import unicodedata

import numpy as np

from ..text import fold

K_FIRST = np.uint64(0xA0761D6478BD642F)    # word hash: multiplier of the first 8 bytes
K_LAST = np.uint64(0xE7037ED1A0B428DB)     # ... of the last 8 bytes (words over 8 bytes)
K_LEN = np.uint64(0x8EBC6AF09C88C6E3)      # ... of the length
P_SPREAD = np.uint64(0xBF58476D1CE4E5B9)   # final multiplier of a word hash
_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)
_MOD64 = np.uint64(63)                     # rotation amounts are taken mod 64


_WORD_LUT = np.zeros(256, dtype=bool)
for _c in b"abcdefghijklmnopqrstuvwxyz0123456789":
    _WORD_LUT[_c] = True
_WORD_LUT[0x80:] = True

# UTF-8 encodings of the Unicode punctuation csbench.text.fold maps to spaces
# (U+2010-2027, U+2030-205E, U+00A1-00BF, U+00D7, U+00F7), plus the Unicode line separators.
_UNI_PUNCT = re.compile(
    rb"\xe2\x80[\x90-\xa9\xb0-\xbf]|\xe2\x81[\x80-\x9e]|\xc2[\xa0-\xbf]|\xc3[\x97\xb7]"
)




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
    """Word start offsets, end offsets and 64-bit word hashes (:func:`word_hashes`) of a
    normalised buffer."""
    starts, ends = word_spans(buf)
    return starts, ends, word_hashes(np.frombuffer(buf, dtype=np.uint8), starts, ends)


def word_spans(buf: bytes) -> tuple[np.ndarray, np.ndarray]:
    """Word start and end offsets of a normalised buffer (words: runs of word bytes)."""
    arr = np.frombuffer(buf, dtype=np.uint8)
    n = len(arr)
    if n == 0:
        e = np.zeros(0, dtype=np.int64)
        return e, e
    isw = _WORD_LUT[arr]
    b = np.flatnonzero(isw[1:] != isw[:-1]) + 1
    if isw[0]:
        b = np.concatenate(([0], b))
    if isw[-1]:
        b = np.concatenate((b, [n]))
    return b[0::2], b[1::2]


def word_hashes(arr: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Hashes of the words ``arr[starts[i]:ends[i]]`` (uint8 array; module doc)."""
    n = len(arr)
    pad = np.zeros(n + 8, dtype=np.uint8)
    pad[:n] = arr
    win = np.ndarray((n + 1,), dtype="<u8", buffer=pad, strides=(1,))   # win[i]: bytes i..i+7
    L = (ends - starts).astype(np.uint64)
    keep = _ALL >> (np.uint64(64) - np.uint64(8) * np.minimum(L, np.uint64(8)))
    a = win[starts] & keep
    b = np.where(L > 8, win[np.maximum(ends - 8, starts)], np.uint64(0)).astype(np.uint64)
    with np.errstate(over="ignore"):
        h = (a * K_FIRST) ^ (b * K_LAST) ^ (L * K_LEN)
        h ^= h >> np.uint64(32)
        return h * P_SPREAD


def rotl(x, r):
    """x rotated left by r bits (uint64; r taken mod 64)."""
    r = np.asarray(r, dtype=np.uint64) & _MOD64
    return (x << r) | (x >> ((np.uint64(64) - r) & _MOD64))


def ngram_prefix(word_hashes: np.ndarray) -> np.ndarray:
    """Prefix XORs of the word hashes, hash j rotated right by j bits (length m + 1)."""
    m = len(word_hashes)
    out = np.zeros(m + 1, dtype=np.uint64)
    if m:
        right = np.uint64(64) - (np.arange(m, dtype=np.uint64) & _MOD64)    # rotr by j
        np.bitwise_xor.accumulate(rotl(np.asarray(word_hashes, dtype=np.uint64), right),
                                  out=out[1:])
    return out


def ngram_hashes(prefix: np.ndarray, n: int) -> np.ndarray:
    """Hashes of all word n-grams (one per start word) from :func:`ngram_prefix` output: the
    n-gram of words w_0 .. w_{n-1} hashes to XOR_i rotl(hash(w_i), n - 1 - i), a cyclic
    polynomial that the compiled kernel rolls with two rotations and two XORs per word."""
    m = len(prefix) - 1
    if m < n:
        return np.zeros(0, dtype=np.uint64)
    q = np.arange(m - n + 1, dtype=np.uint64)
    return rotl(prefix[n:] ^ prefix[:m - n + 1], q + np.uint64(n - 1))


def text_hashes(text: str) -> tuple[list[str], np.ndarray]:
    """Words and word hashes of a benchmark text (same hash as the corpus side)."""
    buf = normalise_bytes(fold(text).encode("utf-8"))
    s, e, h = tokenise(buf)
    return [buf[a:b].decode("utf-8", errors="replace") for a, b in zip(s, e)], h


def sequence_hash(word_hashes: np.ndarray) -> int:
    """Hash of a whole word sequence (equals :func:`ngram_hashes` for n = its length)."""
    pre = ngram_prefix(np.asarray(word_hashes, dtype=np.uint64))
    return int(ngram_hashes(pre, len(word_hashes))[0])
