"""Compiled (numba) hot path of the lexical scan: one pass over a batch's bytes.

For each document range of a batch buffer the kernel lower-cases ASCII on the fly, splits words
with the same classes as :mod:`.hashing` (ASCII letters/digits and non-ASCII bytes), hashes each
word exactly as :func:`.hashing.tokenise` does, keeps a rolling hash of the last L words for each
looked-up length L (exactly :func:`.hashing.ngram_hashes`), and looks every n-gram up in a packed
bit table and then by binary search in the sorted probe keys. It returns only the matches
(start word, length slot, key index), so nothing per word is materialised. n-grams never cross a
document boundary (the rolling state restarts at each document).

The kernel works in two passes: pass 1 (:func:`_word_hashes`, branch-free, one table load per
byte for the word mask) writes the word hashes of each document, pass 2 (:func:`_ngram_pass`)
rolls n-gram hashes over them and looks them up. On the per-document path non-ASCII documents
are normalised in Python first (:func:`.hashing.normalise_bytes`) and :meth:`KernelIndex.scan`
runs both passes; on the fused JSON-lines path (:mod:`.jsonl`) the extraction kernel folds the
text and runs pass 1 on each document as it is copied, and :meth:`KernelIndex.scan_words` runs
pass 2 only. Either way the hashes are those of the bytes the numpy path sees, so results are
identical. ``buf`` may be ``bytes`` or a uint8 array; document ranges need not be
contiguous or in buffer order, only non-overlapping. Without numba (not
installed, fails to compile, or ``CSBENCH_NUMBA=0``) :func:`available` is False and the scanner
keeps its numpy path. Compiled code is cached on disk (``cache=True``), so the compile cost (a few
seconds) is paid once per installation, not per job.
"""
from __future__ import annotations

import logging
import os

import numpy as np

from . import hashing as H

log = logging.getLogger(__name__)

try:  # pragma: no cover - exercised when numba is installed
    import numba
except Exception:  # noqa: BLE001 - any import failure means: use the numpy path
    numba = None

BYTE_POWS = 4096             # P_BYTE**j from a table for words up to this many bytes (a power of 2)

_LOWER = np.arange(256, dtype=np.uint8)
_LOWER[ord("A"):ord("Z") + 1] += 32
_ISWORD = H._WORD_LUT[_LOWER]
# word bytes: byte value + 1 after lower-casing (as hashing._BYTE_VAL); separators: 0
_VAL = np.where(_ISWORD, _LOWER.astype(np.uint64) + np.uint64(1), np.uint64(0))
_WMASK = np.where(_ISWORD, np.uint64(0xFFFFFFFFFFFFFFFF), np.uint64(0))   # word byte: all ones

_BYTE_POW_TABLE = np.ones(BYTE_POWS, dtype=np.uint64)
for _j in range(1, BYTE_POWS):
    _BYTE_POW_TABLE[_j] = (int(_BYTE_POW_TABLE[_j - 1]) * H.P_BYTE) & 0xFFFFFFFF


def _word_hashes(buf, lo, hi, val, wmask, byte_pows, hw, k):
    """Pass 1 over ``buf[lo:hi]``: 32-bit word hashes (low bits of ``hw``) from index k on.

    Branch-free per byte: ``wmask[c]`` is all ones for a word byte, 0 for a separator; every
    byte updates the running hash (reset to 0 by a separator) and writes it at slot k, which
    advances when a word ends, so the slot keeps the finished hash. Byte powers come from a
    table; counters are unsigned (no negative-index handling). Returns (new k, True) or
    (k, False) if a word was too long for the table.
    """
    zero = np.uint64(0)
    one = np.uint64(1)
    top = np.uint64(BYTE_POWS - 1)
    h = zero
    j = zero
    prevm = zero
    big = zero
    q = np.uint64(k)
    seg = buf[lo:hi]
    for i in range(seg.shape[0]):               # (indices from 0: no negative-index checks)
        c = seg[i]
        m = wmask[c]
        q += (prevm & ~m) & one
        h = (h + val[c] * byte_pows[j & top]) & m
        hw[q] = h
        big |= j
        j = (j + one) & m
        prevm = m
    q += prevm & one
    return np.int64(q), big < np.uint64(BYTE_POWS)


def _word_hashes2(buf, lo, hi, val, wmask, byte_pows, hw, k):
    """Pass 1 as :func:`_word_hashes` (the reference: same slots, same values), with the
    long-word check taken out of the per-byte loop: the bytes go in blocks of
    ``BYTE_POWS // 2``, and the position in the current word is checked at each block's end.
    A word of more than ``BYTE_POWS`` bytes spans two block ends, the second one at least
    ``BYTE_POWS // 2`` bytes into it, so (k, False) is returned for it as by the reference;
    (k, False) also for some words of ``BYTE_POWS // 2`` to ``BYTE_POWS`` bytes (rare), whose
    documents then take :func:`_word_hashes_long` (same hashes, only slower)."""
    zero = np.uint64(0)
    one = np.uint64(1)
    top = np.uint64(BYTE_POWS - 1)
    h = zero
    j = zero
    prevm = zero
    big = zero
    q = np.uint64(k)
    seg = buf[lo:hi]
    n = seg.shape[0]
    for b0 in range(0, n, BYTE_POWS // 2):
        sub = seg[b0:min(n, b0 + BYTE_POWS // 2)]
        for i in range(sub.shape[0]):           # (indices from 0: no negative-index checks)
            c = sub[i]
            m = wmask[c]
            q += (prevm & ~m) & one
            h = (h + val[c] * byte_pows[j & top]) & m
            hw[q] = h
            j = (j + one) & m
            prevm = m
        big |= j
    q += prevm & one
    return np.int64(q), big < np.uint64(BYTE_POWS // 2)


def _word_hashes_long(buf, lo, hi, val, p_byte, hw, k):
    """Pass 1 as :func:`_word_hashes` with byte powers by multiplication (any word length)."""
    zero = np.uint64(0)
    one = np.uint64(1)
    h = zero
    p = one
    prevw = 0
    seg = buf[lo:hi]
    for i in range(seg.shape[0]):
        v = val[seg[i]]
        w = 1 if v != 0 else 0
        m = zero - np.uint64(w)
        hw[k] = h
        k += prevw & (1 - w)
        h = (h + v * p) & m
        p = ((p * p_byte) & m) | (one & ~m)
        prevw = w
    if prevw:
        hw[k] = h
        k += 1
    return k


def _ngram_pass(hw, wlo, whi, lengths, word_pows, inv_word, table, shift, keys, key_off,
                wstart, out):
    """Pass 2: rolling n-gram hashes over given word hashes and lookups. Document d's 64-bit
    (spread) word hashes are ``hw[wlo[d]:whi[d]]`` (ranges need not be contiguous or in order);
    ``wstart`` (length documents + 1) receives the cumulative word counts, and match rows give
    the start word as ``wstart[d]`` + its index in document d, i.e. as if the documents' words
    lay one after another. Returns (matches, candidates); see :func:`_scan_kernel`."""
    nd = wlo.shape[0]
    one = np.uint64(1)
    t = 0
    for d in range(nd):
        wstart[d] = t
        t += whi[d] - wlo[d]
    wstart[nd] = t
    cap = out.shape[0]
    nout = 0
    ncand = 0
    for s in range(lengths.shape[0]):
        L = lengths[s]
        top_pow = word_pows[L - 1]
        klo = key_off[s]
        khi = key_off[s + 1]
        for d in range(nd):
            a = wlo[d]
            m = whi[d] - a
            if m < L:
                continue
            seg = hw[a:a + m]                   # (indices from 0: no negative-index checks)
            base = wstart[d]
            g = np.uint64(0)
            for q in range(L):
                g += seg[q] * word_pows[q]
            last = m - L
            for q in range(last + 1):
                top = g >> shift
                if (table[top >> np.uint64(3)] >> (top & np.uint64(7))) & one:
                    ncand += 1
                    lo = klo
                    hi = khi
                    while lo < hi:
                        mid = (lo + hi) >> 1
                        if keys[mid] < g:
                            lo = mid + 1
                        else:
                            hi = mid
                    if lo < khi and keys[lo] == g:
                        if nout < cap:
                            out[nout, 0] = base + q
                            out[nout, 1] = s
                            out[nout, 2] = lo - klo
                        nout += 1
                if q < last:
                    g = (g - seg[q]) * inv_word + seg[q + L] * top_pow
    return nout, ncand


def _scan_kernel(buf, doc_lo, doc_hi, lengths, word_pows, inv_word, table, shift, keys, key_off,
                 val, wmask, byte_pows, spread, hw, wstart, out):
    """Matches of one batch: (start word, length slot, key index) rows written to ``out`` (an
    (cap, 3) int64 array; rows beyond cap are counted, not written); returns (matches, candidates).

    ``keys[key_off[s]:key_off[s+1]]`` are the sorted unique keys of length ``lengths[s]``;
    ``word_pows[i]`` = P_WORD**i; ``table`` is the packed pre-filter indexed by ``h >> shift``;
    ``hw`` has room for a hash per word (len(buf) // 2 + 2); ``wstart`` (length documents + 1)
    receives each document's first word index.
    """
    nd = doc_lo.shape[0]
    mask32 = np.uint64(0xFFFFFFFF)
    k = 0
    for d in range(nd):                         # pass 1: word hashes, document by document
        wstart[d] = k
        k2, ok = _word_hashes2(buf, doc_lo[d], doc_hi[d], val, wmask, byte_pows, hw, k)
        if not ok:
            k2 = _word_hashes_long(buf, doc_lo[d], doc_hi[d], val, byte_pows[1], hw, k)
        k = k2
    wstart[nd] = k
    for q in range(k):                          # spread the 32-bit word hashes over 64 bits
        hw[q] = (hw[q] & mask32) * spread
    ws = wstart.copy()
    return _ngram_pass(hw, ws[:nd], ws[1:], lengths, word_pows, inv_word, table, shift,
                       keys, key_off, wstart, out)


if numba is not None:
    _word_hashes = numba.njit(cache=True, nogil=True)(_word_hashes)
    _word_hashes2 = numba.njit(cache=True, nogil=True)(_word_hashes2)
    _word_hashes_long = numba.njit(cache=True, nogil=True)(_word_hashes_long)
    _ngram_pass = numba.njit(cache=True, nogil=True)(_ngram_pass)
_kernel = numba.njit(cache=True, nogil=True)(_scan_kernel) if numba is not None else None
_ngram = _ngram_pass
_STATE: dict[str, bool] = {}


class KernelIndex:
    """The probe keys of a :class:`~csbench.contamination.scan.ProbeIndex` laid out for the kernel."""

    def __init__(self, lengths, keys: dict, table_bits: int):
        self.lengths = np.asarray(lengths, dtype=np.int64)
        if len(self.lengths) and int(self.lengths.min()) < 1:
            raise ValueError("n-gram lengths must be positive")
        uniqs = [keys[L][0] for L in lengths]
        self.keys = (np.concatenate(uniqs) if uniqs else np.zeros(0)).astype(np.uint64)
        self.key_off = np.concatenate(([0], np.cumsum([len(u) for u in uniqs]))).astype(np.int64)
        bits = np.zeros(1 << table_bits, dtype=bool)
        for u in uniqs:
            bits[(u >> np.uint64(64 - table_bits)).astype(np.int64)] = True
        self.table = np.packbits(bits, bitorder="little")
        self.shift = np.uint64(64 - table_bits)
        m = int(self.lengths.max()) if len(self.lengths) else 1
        pw, _ = H._WORD_POWERS.get(m)
        self.word_pows = np.ascontiguousarray(pw[:m], dtype=np.uint64)
        self.out = np.empty((4096, 3), dtype=np.int64)
        self.hw = np.empty(0, dtype=np.uint64)

    def scan(self, buf: bytes, doc_lo: np.ndarray, doc_hi: np.ndarray):
        """(start words, length slots, key indices, candidate count, first word of each
        document) of one batch buffer."""
        arr = buf if isinstance(buf, np.ndarray) else np.frombuffer(buf, dtype=np.uint8)
        if len(self.hw) < len(arr) // 2 + 2:
            self.hw = np.empty(len(arr) // 2 + 2 + (1 << 16), dtype=np.uint64)
        wstart = np.empty(len(doc_lo) + 1, dtype=np.int64)
        while True:
            nout, ncand = _kernel(arr, doc_lo, doc_hi, self.lengths, self.word_pows, H.INV_WORD,
                                  self.table, self.shift, self.keys, self.key_off, _VAL,
                                  _WMASK, _BYTE_POW_TABLE, H.P_SPREAD, self.hw, wstart, self.out)
            if nout <= len(self.out):
                o = self.out[:nout]
                return o[:, 0].copy(), o[:, 1].copy(), o[:, 2].copy(), ncand, wstart
            self.out = np.empty((2 * nout, 3), dtype=np.int64)   # rare: rerun with room

    def scan_words(self, hw: np.ndarray, wlo: np.ndarray, whi: np.ndarray):
        """As :meth:`scan` for word hashes computed already (the fused JSON-lines path):
        document d's spread 64-bit word hashes are ``hw[wlo[d]:whi[d]]``. Start words and the
        returned first-word indices count the documents' words one after another, exactly as
        :meth:`scan` of the same documents gives them."""
        wstart = np.empty(len(wlo) + 1, dtype=np.int64)
        while True:
            nout, ncand = _ngram(hw, wlo, whi, self.lengths, self.word_pows, H.INV_WORD,
                                 self.table, self.shift, self.keys, self.key_off, wstart,
                                 self.out)
            if nout <= len(self.out):
                o = self.out[:nout]
                return o[:, 0].copy(), o[:, 1].copy(), o[:, 2].copy(), ncand, wstart
            self.out = np.empty((2 * nout, 3), dtype=np.int64)


def available() -> bool:
    """True when the compiled kernel can be used (numba present, compiles, not disabled)."""
    if os.environ.get("CSBENCH_NUMBA", "1").strip().lower() in ("0", "false", "no", "off"):
        return False
    if "ok" not in _STATE:
        ok = False
        if _kernel is not None:
            try:
                ki = KernelIndex([2], {2: (np.zeros(1, dtype=np.uint64),)}, 10)
                ki.scan(b"a b", np.array([0], dtype=np.int64), np.array([3], dtype=np.int64))
                ok = True
            except Exception as exc:  # noqa: BLE001 - fall back on any compile/run failure
                log.warning("numba scan kernel unavailable (%s); using the numpy path", exc)
        _STATE["ok"] = ok
    return _STATE["ok"]
