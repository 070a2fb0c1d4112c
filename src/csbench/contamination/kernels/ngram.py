"""The n-gram scan kernel (numba) of the lexical scan: one pass over a batch's bytes.

For each document range of a batch buffer (normalised: ASCII lower-cased, as
:func:`.hashing.normalise_bytes` gives it) the kernel splits words with the same classes as
:mod:`.hashing` (ASCII letters/digits and non-ASCII bytes), hashes each word exactly as
:func:`.hashing.word_hashes` does, tests each word against the probes' vocabulary (a packed
bit table), and only inside runs of at least L vocabulary words keeps a rolling hash of the last
L words for each looked-up length L (exactly :func:`.hashing.ngram_hashes`: rotations and XORs,
no multiply chain), looked up in a packed bit table and then by binary search in the sorted
probe keys. Every word of a key is a probe word, so the n-grams skipped cannot match. It returns
only the matches (start word, length slot, key index), so nothing per word is materialised.
n-grams never cross a document boundary (the run counter restarts at each document).

The kernel works in two passes. Pass 1 (:func:`_word_hashes`) classifies 64 bytes at a time with
one vector compare per byte class (:func:`.simd._word_bits64`: LLVM vector IR, AVX-512 or AVX2
code on x86), turns the 64-bit mask into word starts and ends with bit tricks, and hashes each
word from two unaligned 8-byte loads (no work per byte, no branch per byte); on CPUs with
AVX-512 VBMI and VBMI2 (:data:`.simd.VECTOR`) 16 words of a block at a time, their bytes picked
by byte permutes (:func:`_pass1`). Pass 2 (:func:`_ngram_pass`) tests the word hashes against
the vocabulary and rolls n-gram hashes inside vocabulary runs. On the per-document path
:meth:`KernelIndex.scan` runs both passes; on the fused JSON-lines path (:mod:`.jsonl`) the
extraction kernel runs pass 1 on each document as it is copied, and
:meth:`KernelIndex.scan_words` runs pass 2 only. Either way the hashes are those of the bytes
the numpy path sees, so results are identical. Pass 1 reads up to ``PAD`` bytes past a
document's end (never uses them): buffers handed to the kernels have that much room. Document
ranges need not be contiguous or in buffer order, only non-overlapping. Without numba (not
installed, fails to compile, ``CSBENCH_NUMBA=0`` or a big-endian machine) :func:`available` is
False and the scanner keeps its numpy path. Compiled code is cached on disk (``cache=True``,
:func:`.jit.jit`), so the compile cost (a few seconds) is paid once per installation, not per
job.
"""
from __future__ import annotations

import logging
import os
import sys

import numpy as np

from .jit import jit, numba
from .simd import (LANES, VECTOR, _K_FIRST, _K_LAST, _K_LEN, _SPREAD, _hash_lanes, _leading_zeros,
                   _load8, _trailing_zeros, _word_bits64)

log = logging.getLogger(__name__)

PAD = 128                    # bytes pass 1 may read past a document's end
_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)


def _word_hash(buf, s, e):
    """The hash of the word buf[s:e] (:func:`.hashing.word_hashes`)."""
    n = np.uint64(e - s)
    a = _load8(buf, s) & (_ALL >> (np.uint64(64) - np.uint64(8) * min(n, np.uint64(8))))
    b = _load8(buf, max(e - 8, s)) & (np.uint64(0) - np.uint64(n > 8))
    h = (a * _K_FIRST) ^ (b * _K_LAST) ^ (n * _K_LEN)
    h ^= h >> np.uint64(32)
    return h * _SPREAD


def _block(buf, base, hi, carry):
    """The 64-byte block at ``base``: its word-byte mask W (:func:`.simd._word_bits64`, bits past
    ``hi`` cleared), word starts ``S = B & W`` and ends ``E = B & ~W``, where
    ``B = W ^ (W << 1 | carry)`` are the transitions (carry: the previous block's last bit)."""
    one = np.uint64(1)
    w = _word_bits64(buf, base)
    if hi - base < 64:
        w &= (one << np.uint64(hi - base)) - one
    b = w ^ ((w << one) | carry)
    return w, b & w, b & ~w


def _pass1(buf, lo, hi, hw, k, vector):
    """Pass 1 over ``buf[lo:hi]``: the word hashes go to hw[k:]; returns the new k.

    Per 64-byte block (:func:`_block`) the starts S and ends E alternate, so after the end of
    a word carried over from the previous block every end pairs with the next start. The word
    that crosses into the block is hashed on its own (:func:`_word_hash`); the words that
    start and end inside it are hashed one at a time, or with ``vector`` ``LANES`` at a time by
    :func:`_hash_lanes` (more than ``LANES`` in a block: again with the first ``LANES`` starts
    and ends dropped). Reads up to ``PAD`` bytes past ``hi``."""
    one = np.uint64(1)
    carry = np.uint64(0)
    base = lo
    so = lo                                     # start of a word open at a block end
    while base < hi:
        w, s, e = _block(buf, base, hi, carry)
        if carry and e:                         # the end of the carried word
            hw[k] = _word_hash(buf, so, base + _trailing_zeros(e))
            k += 1
            e &= e - one
        if vector:
            c = np.int64(_hash_lanes(buf, base, s, e, hw, k))
            while c > LANES:                    # (rare: short words)
                k += LANES
                c -= LANES
                for _ in range(LANES):
                    s &= s - one
                    e &= e - one
                _hash_lanes(buf, base, s, e, hw, k)
            k += c
        else:
            while e:
                a = base + _trailing_zeros(s)
                s &= s - one
                hw[k] = _word_hash(buf, a, base + _trailing_zeros(e))
                k += 1
                e &= e - one
        carry = w >> np.uint64(63)
        if carry and s:                         # the last start opens a word
            so = base + 63 - np.int64(_leading_zeros(s))
        base += 64
    if carry:
        hw[k] = _word_hash(buf, so, hi)
        k += 1
    return k


def _word_hashes(buf, lo, hi, hw, k):
    """Pass 1 over ``buf[lo:hi]`` (:func:`_pass1`), by vectors where the CPU has them
    (:data:`VECTOR`, fixed when the code is compiled); both give the same hashes."""
    return _pass1(buf, lo, hi, hw, k, VECTOR)


def _rotl(x, r):
    """x rotated left by r bits (r < 64; one instruction)."""
    return (x << r) | (x >> ((np.uint64(64) - r) & np.uint64(63)))


def _ngram_pass(hw, wlo, whi, lengths, table, shift, keys, key_off, vocab, vshift, wstart, out,
                g):
    """Pass 2: n-gram lookups over given word hashes. Document d's word hashes are
    ``hw[wlo[d]:whi[d]]`` (ranges need not be contiguous or in order); ``wstart`` (length
    documents + 1) receives the cumulative word counts, and match rows give the start word as
    ``wstart[d]`` + its index in document d, i.e. as if the documents' words lay one after another.

    Every word of a probe key is a probe word, so an n-gram can only match where L words in a
    row are in the probes' vocabulary: each word is tested in the packed ``vocab`` bit table
    (indexed by ``h >> vshift``; one load from a table that sits in L1/L2), a run counter tracks
    how many words in a row passed, and n-gram hashes are formed only inside runs of at least L
    words (in real text, a few per cent of the words). There the hash is
    :func:`.hashing.ngram_hashes`' cyclic polynomial, computed whole where a run reaches L words
    and then rolled by ``g = rotl(g ^ rotl(h_q, L - 1), 1) ^ h_{q+L}``; then the packed bit
    ``table`` (indexed by ``g >> shift``) and a binary search in the sorted keys. Returns
    (matches, candidates), candidates being the n-grams of vocabulary runs that pass ``table``;
    see :func:`_scan_kernel`. ``g``: room for one uint64 per length (the rolling hashes)."""
    nd = wlo.shape[0]
    ns = lengths.shape[0]
    one = np.uint64(1)
    t = 0
    for d in range(nd):
        wstart[d] = t
        t += whi[d] - wlo[d]
    wstart[nd] = t
    lmin = 1 << 62
    for s in range(ns):
        lmin = min(lmin, lengths[s])
    cap = out.shape[0]
    nout = 0
    ncand = 0
    for d in range(nd):
        a = wlo[d]
        m = whi[d] - a
        if m < lmin:
            continue
        seg = hw[a:a + m]                       # (indices from 0: no negative-index checks)
        base = wstart[d]
        r = 0                                   # vocabulary words in a row, ending at q
        for q in range(m):
            v = seg[q] >> vshift
            r = (r + 1) & -np.int64((vocab[v >> np.uint64(3)] >> (v & np.uint64(7))) & one)
            if r < lmin:
                continue
            for s in range(ns):
                L = lengths[s]
                if r < L:
                    continue
                st = q + 1 - L
                if r == L:                      # a run reaches L words: the hash, whole
                    x = np.uint64(0)
                    for i in range(L):
                        x ^= _rotl(seg[st + i], np.uint64(L - 1 - i) & np.uint64(63))
                else:                           # the run goes on: roll by one word
                    x = _rotl(g[s] ^ _rotl(seg[st - 1], np.uint64(L - 1) & np.uint64(63)),
                              one) ^ seg[q]
                g[s] = x
                top = x >> shift
                if (table[top >> np.uint64(3)] >> (top & np.uint64(7))) & one:
                    ncand += 1
                    klo = key_off[s]
                    khi = key_off[s + 1]
                    lo = klo
                    hi = khi
                    while lo < hi:
                        mid = (lo + hi) >> 1
                        if keys[mid] < x:
                            lo = mid + 1
                        else:
                            hi = mid
                    if lo < khi and keys[lo] == x:
                        if nout < cap:
                            out[nout, 0] = base + st
                            out[nout, 1] = s
                            out[nout, 2] = lo - klo
                        nout += 1
    return nout, ncand


def _scan_kernel(buf, doc_lo, doc_hi, lengths, table, shift, keys, key_off, vocab, vshift, hw,
                 wstart, out, g):
    """Matches of one batch: (start word, length slot, key index) rows written to ``out`` (an
    (cap, 3) int64 array; rows beyond cap are counted, not written); returns (matches, candidates).

    ``keys[key_off[s]:key_off[s+1]]`` are the sorted unique keys of length ``lengths[s]``;
    ``table`` is the packed pre-filter indexed by ``h >> shift``, ``vocab`` the packed bit table
    of the probes' word hashes indexed by ``h >> vshift``;
    ``hw`` has room for a hash per word (len(buf) // 2 + 2); ``wstart`` (length documents + 1)
    receives each document's first word index; ``g`` as for :func:`_ngram_pass`.
    """
    nd = doc_lo.shape[0]
    k = 0
    for d in range(nd):                         # pass 1: word hashes, document by document
        wstart[d] = k
        k = _word_hashes(buf, doc_lo[d], doc_hi[d], hw, k)
    wstart[nd] = k
    # (the documents' word ranges are wstart itself: pass 2 rewrites it with the same values)
    return _ngram_pass(hw, wstart[:nd], wstart[1:], lengths, table, shift, keys, key_off, vocab,
                       vshift, wstart, out, g)


if numba is not None:
    _word_hash = jit(_word_hash, inline=True)
    _block = jit(_block, inline=True)
    _pass1 = jit(_pass1)
    _word_hashes = jit(_word_hashes)
    _rotl = jit(_rotl, inline=True)
    _ngram_pass = jit(_ngram_pass)
_kernel = jit(_scan_kernel) if numba is not None else None
_ngram = _ngram_pass
_STATE: dict[str, bool] = {}


def _packed(bits: np.ndarray, what: str):
    """A bool table of 2**b entries (1 <= b <= 32) as packed bits and the shift that turns a
    64-bit hash into its index (its top b bits)."""
    b = len(bits).bit_length() - 1
    if len(bits) != 1 << b or not 1 <= b <= 32:
        raise ValueError(f"the {what} table needs a power-of-two size, 2 to 2**32")
    return np.packbits(bits, bitorder="little"), np.uint64(64 - b)


class KernelIndex:
    """The probe keys of a :class:`~csbench.contamination.scan.ProbeIndex` laid out for the
    kernel."""

    def __init__(self, lengths, keys: dict, table: np.ndarray, vocab: np.ndarray | None = None):
        """``keys[L][0]``: the sorted unique keys of length L; ``table``: the n-gram pre-filter,
        a bool table of a power-of-two size indexed by the top bits of an n-gram hash (it must
        hold every key); ``vocab``: the probes' vocabulary likewise, indexed by the top bits of
        a word hash (None lets every word through). Both are :class:`.scan.ProbeIndex`'s."""
        if vocab is None:
            vocab = np.ones(2, dtype=bool)
        self.table, self.shift = _packed(table, "pre-filter")
        self.vocab, self.vshift = _packed(vocab, "vocabulary")
        self.lengths = np.asarray(lengths, dtype=np.int64)
        if len(self.lengths) and int(self.lengths.min()) < 1:
            raise ValueError("n-gram lengths must be positive")
        uniqs = [keys[L][0] for L in lengths]
        self.keys = (np.concatenate(uniqs) if uniqs else np.zeros(0)).astype(np.uint64)
        self.key_off = np.concatenate(([0], np.cumsum([len(u) for u in uniqs]))).astype(np.int64)
        self.out = np.empty((4096, 3), dtype=np.int64)
        self.hw = np.empty(0, dtype=np.uint64)
        self.g = np.zeros(max(len(self.lengths), 1), dtype=np.uint64)   # (kernel scratch)

    def scan(self, buf: bytes, doc_lo: np.ndarray, doc_hi: np.ndarray):
        """(start words, length slots, key indices, candidate count, first word of each
        document) of one batch buffer (normalised: ASCII lower-cased)."""
        arr = buf if isinstance(buf, np.ndarray) else np.frombuffer(buf, dtype=np.uint8)
        if len(doc_hi) and len(arr) < int(doc_hi.max()) + PAD:     # room to read past the end
            arr = np.concatenate((arr, np.zeros(PAD, dtype=np.uint8)))
        if len(self.hw) < len(arr) // 2 + 2:
            self.hw = np.empty(len(arr) // 2 + 2 + (1 << 16), dtype=np.uint64)
        wstart = np.empty(len(doc_lo) + 1, dtype=np.int64)
        while True:
            nout, ncand = _kernel(arr, doc_lo, doc_hi, self.lengths, self.table, self.shift,
                                  self.keys, self.key_off, self.vocab, self.vshift, self.hw,
                                  wstart, self.out, self.g)
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
            nout, ncand = _ngram(hw, wlo, whi, self.lengths, self.table, self.shift, self.keys,
                                 self.key_off, self.vocab, self.vshift, wstart, self.out, self.g)
            if nout <= len(self.out):
                o = self.out[:nout]
                return o[:, 0].copy(), o[:, 1].copy(), o[:, 2].copy(), ncand, wstart
            self.out = np.empty((2 * nout, 3), dtype=np.int64)


def available() -> bool:
    """True when the compiled kernel can be used (numba present, compiles, not disabled)."""
    if os.environ.get("CSBENCH_NUMBA", "1").strip().lower() in ("0", "false", "no", "off"):
        return False
    if sys.byteorder != "little":       # the 8-byte loads read bytes in little-endian order
        return False
    if "ok" not in _STATE:
        ok = False
        if _kernel is not None:
            try:
                ki = KernelIndex([2], {2: (np.zeros(1, dtype=np.uint64),)},
                                 np.ones(1 << 10, dtype=bool))
                ki.scan(b"a b", np.array([0], dtype=np.int64), np.array([3], dtype=np.int64))
                ok = True
            except Exception as exc:  # noqa: BLE001 - fall back on any compile/run failure
                log.warning("numba scan kernel unavailable (%s); using the numpy path", exc)
        _STATE["ok"] = ok
    return _STATE["ok"]
