"""The run cache of the fused readers (:class:`RunCache`). A maximal run of non-ASCII characters
that holds one that is not context-free (a combining mark, a Devanagari vowel sign, a Hangul
jamo, U+03A3, a code point above the table) is folded whole, as ``normalise_bytes`` folds it:
when the run ends the kernel looks its UTF-8 up in a per-process hash table of run foldings and
writes that folding over the run's output (:func:`.json_text._close_run`). A run missing from
the table is recorded, its line becomes a fallback line for the moment, and after the block the
Python side folds each missed run once (:func:`.hashing.fold_run_uncached`), adds it to the
table and extracts the block's fallback lines again (:func:`.jsonl._extract_again`); only lines
that still fail take the Python path. Words recur, so after a few blocks text in such scripts
stays in the kernel: Hindi is scanned at 5.9x and NFD Vietnamese at 8.2x the speed of folding
those lines in Python (``bench/contamination_scripts_bench.py``, figures in
``docs/contamination.md``).
"""
from __future__ import annotations

import numpy as np

from .. import hashing as H
from .json_text import _run_hash


class RunCache:
    """Foldings of whole non-ASCII runs that hold a character that is not context-free (say a
    Devanagari word with its vowel signs), for the kernel (:func:`.json_text._close_run`): an open-
    addressing table of hashes of the runs' UTF-8 (``keys``; 0: empty; half full at most), and per
    slot (``meta``) the offset and length of the run's UTF-8 and of its folding
    (:func:`.hashing.fold_run_uncached`, exactly what ``normalise_bytes`` gives the run) in one byte
    pool. One per process, shared by all batches; it stops growing at ``MAX_RUNS`` runs (later
    missing runs send their lines to the Python path). The kernel records the runs it misses in
    ``mbuf``/``miss`` (:meth:`take_missed`)."""

    MAX_RUNS = 1 << 20

    def __init__(self, slots: int = 1 << 12):
        self.n = 0
        self.keys = np.zeros(slots, dtype=np.uint64)
        self.meta = np.zeros((slots, 4), dtype=np.int64)
        self.pool = np.zeros(1 << 16, dtype=np.uint8)
        self.used = 0
        self.scratch = np.zeros(1 << 12, dtype=np.uint8)   # the longest escaped run folded
        self.mbuf = np.zeros(1 << 20, dtype=np.uint8)       # runs the kernel missed
        self.miss = np.zeros(2 + (1 << 14), dtype=np.int64)  # count, bytes, offsets

    def arrays(self) -> tuple:
        return self.keys, self.meta, self.pool, self.scratch, self.mbuf, self.miss

    def learn(self) -> bool:
        """Fold and cache the runs the kernel missed since the last call; True if there were
        any (their lines are then worth extracting again)."""
        missed = self.take_missed()
        for run in set(missed):
            self.add(run)
        return bool(missed)

    def take_missed(self) -> list[bytes]:
        """The runs the kernel recorded as missing since the last call (then forgotten)."""
        c = int(self.miss[0])
        lo = self.miss[2:3 + c].tolist()
        self.miss[:2] = 0
        return [self.mbuf[lo[q]:lo[q + 1]].tobytes() for q in range(c)]

    def add(self, raw: bytes) -> bool:
        """Cache the folding of run ``raw``; False when the cache is full."""
        if self.n >= self.MAX_RUNS:
            return False
        h = int(_run_hash(np.frombuffer(raw, dtype=np.uint8), 0, len(raw)))
        if self._find(h, raw) >= 0:
            return True
        if 2 * (self.n + 1) > len(self.keys):
            self._grow()
        fold = H.fold_run_uncached(raw)
        j = self._slot(h)
        self.keys[j] = h
        self.meta[j] = (self._put(raw), len(raw), self._put(fold), len(fold))
        self.n += 1
        return True

    def _slot(self, h: int) -> int:
        mask = len(self.keys) - 1
        j = h & mask
        while self.keys[j] != 0:
            j = (j + 1) & mask
        return j

    def _find(self, h: int, raw: bytes) -> int:
        mask = len(self.keys) - 1
        j = h & mask
        while self.keys[j] != 0:
            a, m = int(self.meta[j, 0]), int(self.meta[j, 1])
            if int(self.keys[j]) == h and m == len(raw) and self.pool[a:a + m].tobytes() == raw:
                return j
            j = (j + 1) & mask
        return -1

    def _put(self, data: bytes) -> int:
        if self.used + len(data) > len(self.pool):
            self.pool = np.concatenate((self.pool, np.zeros(max(len(self.pool), len(data)),
                                                            np.uint8)))
        at = self.used
        self.pool[at:at + len(data)] = np.frombuffer(data, dtype=np.uint8)
        self.used += len(data)
        return at

    def _grow(self) -> None:
        keys, meta = self.keys, self.meta
        self.keys = np.zeros(2 * len(keys), dtype=np.uint64)
        self.meta = np.zeros((2 * len(keys), 4), dtype=np.int64)
        for j in np.flatnonzero(keys).tolist():
            k = self._slot(int(keys[j]))
            self.keys[k] = keys[j]
            self.meta[k] = meta[j]


_RUNS: list[RunCache] = []


def run_cache() -> RunCache:
    """This process's run cache."""
    if not _RUNS:
        _RUNS.append(RunCache())
    return _RUNS[0]
