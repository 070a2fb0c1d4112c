"""Fused, compiled JSON-lines input for the lexical scan: raw bytes in, folded documents out.

:func:`iter_batches` streams a shard piece ``(path, start, end)`` (plain with byte ranges, .gz,
.zst; opened with :func:`.corpus.open_binary`) in blocks of a few MB, cuts each block at its last
newline (the remainder is carried over) and hands the block to one numba kernel
(:func:`.extract._extract`). Per line the kernel

* skips blank (whitespace-only) lines, which still count for line numbers;
* validates the line as one JSON object with a small strict parser (strings with escapes and
  UTF-8 checked, numbers by the JSON grammar, ``true``/``false``/``null``, nested arrays and
  objects up to depth ``MAX_DEPTH``);
* finds the top-level key equal to ``text_field`` and copies its string value, unescaped
  (``\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX``, surrogate pairs combined), into one output buffer.
  Plain ASCII goes 64 bytes at a time (:func:`.json_text._copy64`: one vector load, compares
  that find the first quote, backslash, control or non-ASCII byte, upper case folded, one
  store); on CPUs with a byte compress (AVX-512 VBMI2) the one-character escapes other than
  ``\\\\`` are taken inside that loop too (:func:`.json_text._copy64_esc`), so text with a
  newline escape every few dozen bytes stays in it; the last bytes go 8 at a time (SWAR) and
  then one by one. The text is **folded while copying** exactly as
  :func:`.hashing.normalise_bytes` folds it: ASCII lower-cased, every non-ASCII character
  replaced by its entry of a per-code-point table (:mod:`.folding`);
* records the span of the ``id_field`` value (a string without escapes or an integer literal);
* hashes the words of the copied document right away, while its folded bytes are in cache
  (:func:`.ngram._word_hashes`, the scan kernel's own pass 1: same bytes, same hashes), into
  a word-hash buffer (``hw[wlo[d]:whi[d]]`` for document d).

Documents are separated by ``\\n`` in the output buffer. The word hashes go straight to
:meth:`.ngram.KernelIndex.scan_words` (rolling n-gram hashes and lookups only): no Python
object per document. Folded bytes and ids are materialised only for the documents with matches
(verification and evidence). The line arrays are sized from the previous block; a block with
more lines is counted and extracted again.

**Fallback.** A line the kernel does not handle exactly goes to the per-line Python code
(:func:`.corpus.parse_line`: orjson/json, the same errors naming file and line), and its text is
normalised with :func:`.hashing.normalise_bytes` and its word hashes appended to the buffer
(the same compiled pass 1); its document keeps its place in the batch,
so the scan sees the same documents in the same order as the per-document path and results are
identical. Fallback lines: invalid JSON (including ``NaN``, bare control characters, a leading
BOM, depth beyond ``MAX_DEPTH``, a number literal over 1000 characters), escaped or non-ASCII-
invalid key names, a duplicate text or id key, a text value that is not a string, lone surrogate
escapes, invalid UTF-8, an id value other than a plain string without escapes or an integer
literal of at most 18 digits that ``str(int(...))`` gives back (``-0`` is not), a missing text or id
field, and text with a run (:mod:`.runs`) missing from a full run cache, or one that needs escapes
and is longer than 4 KB.

The per-code-point folding table and the run cache that let non-ASCII text stay in the kernel
are described in :mod:`.folding` and :mod:`.runs`.
"""
from __future__ import annotations

import logging
import os
import sys
import time
from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np

from .. import corpus as C
from .. import hashing as H
from . import ngram as F
from .blocks import _chunks, _chunks_ahead
from .extract import _extract
from .folding import tables
from .jit import numba
from .json_syntax import _BLANK, _CLS, _ESC, _LOWER, MAX_DEPTH
from .json_text import _has_compress
from .runs import RunCache, run_cache

log = logging.getLogger(__name__)

BLOCK = 1 << 22            # bytes read per block

_COMPRESS = _has_compress()
_STATE: dict[str, bool] = {}


@dataclass
class Batch:
    """The documents of one block. ``buf[lo[d]:hi[d]]`` is document d, folded; ``buf`` is reused
    by the next batch, so a batch must be used before the iterator advances."""
    buf: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    nbytes: int                       # UTF-8 bytes of the documents' text (before folding)
    seconds: float                    # CPU time of extraction and fallback parsing
    doc_id: Callable[[int], str]
    fallbacks: int                    # lines parsed by the Python fallback
    hw: np.ndarray                    # word hashes (spread to 64 bits) of the documents:
    wlo: np.ndarray                   # document d's are hw[wlo[d]:whi[d]] (reused likewise)
    whi: np.ndarray

    def doc_bytes(self, d: int) -> bytes:
        return self.buf[self.lo[d]:self.hi[d]].tobytes()


class _Arrays:
    def __init__(self):
        self.n = 0
        self.lines = 0
        self.res = np.zeros(8, dtype=np.int64)      # (kernel scratch: one line's results,
        self.stack = np.empty(MAX_DEPTH, dtype=np.uint8)    # and the nesting of its JSON)

    def ensure(self, nbytes: int, lines: int, expand: int) -> None:
        if lines > self.lines:
            self.lines = max(lines, 2 * self.lines)
            m = self.lines + 1
            self.ls = np.empty(m, dtype=np.int64)
            self.st = np.empty(m, dtype=np.uint8)
            self.dlo, self.dhi, self.draw, self.ilo, self.ihi, self.wlo, self.whi = (
                np.zeros(m, dtype=np.int64) for _ in range(7))
        if nbytes > self.n:
            self.n = max(nbytes, 2 * self.n)
            # (pages are used on touch; pass 1 reads up to PAD bytes past a document)
            self.out = np.empty(self.n * expand + 64 + F.PAD, dtype=np.uint8)
        # a document of b output bytes has at most (b + 1) // 2 words
        if len(getattr(self, "hw", ())) < len(self.out) // 2 + self.lines + 2:
            self.hw = np.empty(len(self.out) // 2 + self.lines + 2, dtype=np.uint64)


def iter_batches(piece, text_field: str = "text", id_field: str | None = None,
                 block: int = BLOCK, read_ahead: bool = False) -> Iterator[Batch]:
    """Batches of one JSON-lines shard piece ``(path, start, end)``; documents, ids, text bytes
    and errors exactly as :func:`.corpus.iter_documents` gives them. ``read_ahead``: read and
    decompress in a second thread (:func:`_chunks_ahead`)."""
    path, start, end = piece
    T = tables()
    key_text = np.frombuffer(text_field.encode("utf-8"), dtype=np.uint8)
    key_id = np.frombuffer((id_field or "").encode("utf-8"), dtype=np.uint8)
    A = _Arrays()
    B = _Arrays()                                   # (lines extracted again)
    R = run_cache()
    lineno: int | None = 0 if start <= 0 else None
    chunks = _chunks_ahead if read_ahead else _chunks
    for base, chunk, size in chunks(path, start, end, block):
        t0 = time.process_time()
        arr = np.frombuffer(chunk, dtype=np.uint8, count=size)
        A.ensure(size, 1024, T.max_expand)          # lines: as many as last time, at first
        while True:
            nl, used, nw = _extract(arr, key_text, key_id, bool(id_field), _CLS, _LOWER, _ESC,
                                    _BLANK, T.ok, T.off, T.pool, A.out, A.ls, A.st, A.dlo, A.dhi,
                                    A.draw, A.ilo, A.ihi, A.stack, A.res, A.hw, A.wlo, A.whi,
                                    _COMPRESS, R.arrays())
            if nl >= 0:
                break
            A.ensure(size, chunk.count(b"\n", 0, size) + 1, T.max_expand)   # more lines: again
        st = A.st[:nl]
        lines = np.flatnonzero(st != 1)
        lo, hi = A.dlo[lines], A.dhi[lines]
        wlo, whi = A.wlo[lines], A.whi[lines]
        nbytes = int(A.draw[:nl][st == 0].sum())
        out = A.out
        hw = A.hw
        fb_ids: dict[int, str] = {}
        fb = np.flatnonzero(st == 2)
        again = {}
        if R.learn() and len(fb):      # runs the cache lacked: folded now, extract again
            again = _extract_again(chunk, A.ls, fb, B, key_text, key_id, id_field, T, R)
        if len(fb):
            where = np.searchsorted(lines, fb)
            keep = np.ones(len(lines), dtype=bool)
            for li, k in zip(fb.tolist(), where.tolist()):
                if li in again:
                    folded, raw, did = again[li]
                    if did is not None:
                        fb_ids[li] = did
                    nbytes += raw
                    out, used, hw, nw = append_doc(folded, out, used, hw, nw, k, lo, hi, wlo, whi)
                    continue
                a, b = int(A.ls[li]), int(A.ls[li + 1])
                doc = C.parse_line(path, base + a, None if lineno is None else lineno + li + 1,
                                   bytes(chunk[a:b]), text_field, id_field)
                if doc is None:                    # (blank by bytes.strip; the kernel agrees)
                    keep[k] = False
                    continue
                fb_ids[li] = doc[0]
                nbytes += len(doc[1])
                out, used, hw, nw = append_folded(doc[1], out, used, hw, nw, k, lo, hi, wlo, whi)
            lines, lo, hi = lines[keep], lo[keep], hi[keep]
            wlo, whi = wlo[keep], whi[keep]
        ls = A.ls[lines]
        if id_field:
            ilo, ihi = A.ilo[lines], A.ihi[lines]

            def doc_id(d, lines=lines, ilo=ilo, ihi=ihi, chunk=chunk, fb_ids=fb_ids):
                li = int(lines[d])
                if li in fb_ids:
                    return fb_ids[li]
                return chunk[ilo[d]:ihi[d]].decode("utf-8")
        elif lineno is not None:
            def doc_id(d, lines=lines, first=lineno + 1):
                return f"{path}:{first + int(lines[d])}"
        else:
            def doc_id(d, ls=ls, base=base):
                return f"{path}@{base + int(ls[d])}"
        seconds = time.process_time() - t0
        yield Batch(out[:used], lo, hi, nbytes, seconds, doc_id, len(fb) - len(again), hw[:nw],
                    wlo, whi)
        if lineno is not None:
            lineno += nl


def _extract_again(chunk, ls, fb, B, key_text, key_id, id_field, T, R) -> dict:
    """The fallback lines ``fb`` of a block extracted again (after the runs they missed were
    added to the run cache): {line: (folded text, UTF-8 length, id or None)} for those that
    now pass; the others stay fallback lines."""
    spans = [(int(ls[li]), int(ls[li + 1])) for li in fb.tolist()]
    sub = b"".join(bytes(chunk[a:b]) if chunk[b - 1:b] == b"\n" else bytes(chunk[a:b]) + b"\n"
                   for a, b in spans)
    arr = np.frombuffer(bytearray(sub), dtype=np.uint8)   # (writable, as blocks are: the
    B.ensure(len(sub), len(spans) + 1, T.max_expand)      # kernel compiled once, not twice)
    nl, _, _ = _extract(arr, key_text, key_id, bool(id_field), _CLS, _LOWER, _ESC, _BLANK, T.ok,
                        T.off, T.pool, B.out, B.ls, B.st, B.dlo, B.dhi, B.draw, B.ilo, B.ihi,
                        B.stack, B.res, B.hw, B.wlo, B.whi, _COMPRESS, R.arrays())
    R.take_missed()                 # (still missing: the cache is full; Python folds them)
    got = {}
    if nl != len(spans):            # (cannot happen: one line per span)
        return got
    for j, li in enumerate(fb.tolist()):
        if B.st[j] == 0:
            did = sub[B.ilo[j]:B.ihi[j]].decode("utf-8") if id_field else None
            got[li] = (B.out[B.dlo[j]:B.dhi[j]].tobytes(), int(B.draw[j]), did)
    return got


def append_folded(text: bytes, out, used, hw, nw, d, lo, hi, wlo, whi):
    """Append document d, folded in Python (:func:`.hashing.normalise_bytes`), to a batch's
    output buffer: :func:`append_doc`."""
    return append_doc(H.normalise_bytes(text), out, used, hw, nw, d, lo, hi, wlo, whi)


def append_doc(folded: bytes, out, used, hw, nw, d, lo, hi, wlo, whi):
    """Append document d, folded already, to a batch's output buffer after a newline, and its
    word hashes to ``hw``; record its ranges in lo/hi/wlo/whi[d]. Buffers grow when needed
    (keeping ``F.PAD`` bytes of room); returns (out, used, hw, nw)."""
    t = b"\n" + folded
    if used + len(t) + F.PAD > len(out):
        out = np.concatenate((out[:used], np.zeros(len(t) + len(out) + F.PAD, np.uint8)))
    out[used:used + len(t)] = np.frombuffer(t, dtype=np.uint8)
    lo[d], hi[d] = used + 1, used + len(t)
    used += len(t)
    if nw + len(t) // 2 + 2 > len(hw):              # (at most (len + 1) // 2 words)
        hw = np.concatenate((hw[:nw], np.empty(len(t) + len(hw), np.uint64)))
    wlo[d], whi[d] = nw, _hash_words(out, used - len(t) + 1, used, hw, nw)
    return out, used, hw, int(whi[d])


def _hash_words(out, lo, hi, hw, k):
    """Word hashes of ``out[lo:hi]`` into hw[k:] (a fallback document: as the kernel hashes the
    documents it copies); returns the new k."""
    return F._word_hashes(out, lo, hi, hw, k)


def available() -> bool:
    """True when the extraction kernel compiles and runs (numba present, not disabled)."""
    if numba is None or os.environ.get("CSBENCH_NUMBA", "1").strip().lower() in (
            "0", "false", "no", "off"):
        return False
    if sys.byteorder != "little":       # the 8-byte copy reads bytes in little-endian order
        return False
    if "ok" not in _STATE:
        ok = False
        try:
            A = _Arrays()
            A.ensure(64, 4, 4)
            T = tables()
            buf = np.frombuffer(b'{"text": "A\\u00e9", "n": [1, {"x": null}]}\n\n', np.uint8)
            nl, used, nw = _extract(buf, np.frombuffer(b"text", np.uint8), np.zeros(0, np.uint8),
                                    False, _CLS, _LOWER, _ESC, _BLANK, T.ok, T.off, T.pool, A.out,
                                    A.ls, A.st, A.dlo, A.dhi, A.draw, A.ilo, A.ihi,
                                    A.stack, A.res, A.hw, A.wlo, A.whi,
                                    _COMPRESS, RunCache(16).arrays())
            ok = (nl == 2 and A.out[:used].tobytes() == "aé".encode()
                  and A.hw[:nw].tolist() == H.tokenise("aé".encode())[2].tolist())
        except Exception as exc:  # noqa: BLE001 - fall back on any compile/run failure
            log.warning("numba JSON-lines kernel unavailable (%s); using the per-document path",
                        exc)
        _STATE["ok"] = ok
    return _STATE["ok"]
