"""Fused, compiled Parquet input for the lexical scan: Arrow string buffers in, folded batches out.

:func:`iter_batches` reads a Parquet file's text (and id) column in record batches. A string
column's values are one contiguous UTF-8 buffer plus offsets, so one numba kernel
(:func:`_fold_docs`) takes the whole batch: per document it copies the text into one output buffer,
**folded while copying** exactly as :func:`.hashing.normalise_bytes` folds it (ASCII lower-cased
64 bytes at a time with a vector copy, every non-ASCII character through the per-code-point table
of :mod:`.folding`) and hashes its words right away (:func:`.ngram._word_hashes`). No Python
object is made per document; ids are read from the Arrow column only for documents with matches.

A document the kernel does not fold exactly (a character that is not context-free, see
:mod:`.folding`, or invalid UTF-8) goes through Python (:func:`.hashing.normalise_bytes` of the
value) and keeps its place, so documents, ids, bytes and hit tables are those of the
per-document path (:func:`.corpus.iter_documents`). Null texts are skipped, as there. A text
column that is not a string column takes the per-document path, which reports the error.
"""
from __future__ import annotations

import time
from typing import Iterator

import numpy as np

from ...errors import InputError
from . import jsonl as J
from . import simd as S
from .folding import tables
from .jit import jit, numba
from .json_syntax import _LOWER
from .json_text import _close_run, _fold_utf8
from .ngram import PAD, _word_hashes
from .runs import run_cache
from .simd import _trailing_zeros

BATCH_ROWS = 4096

if numba is not None:
    from llvmlite import ir as _ir
    from numba.core import types as _types
    from numba.extending import intrinsic as _intrinsic

    @_intrinsic
    def _copy64_ascii(typingctx, src, i, dst, o):
        """Copy src[i:i + 64] to dst[o:o + 64] with 'A'..'Z' lower-cased; returns the mask of
        the non-ASCII bytes (bit j: src[i + j] >= 0x80). One vector load, two compares, one
        store."""
        def codegen(context, builder, sig, args):
            x = builder.load(S._ir_ptr(context, builder, sig, args, 0), align=1)
            builder.store(S._ir_lower(builder, x), S._ir_ptr(context, builder, sig, args, 2),
                          align=1)
            return builder.bitcast(builder.icmp_signed("<", x, S._ir_splat(0)),
                                   _ir.IntType(64))
        return _types.uint64(src, i, dst, o), codegen
else:  # (the kernel only runs compiled; this keeps the module importable)
    def _copy64_ascii(src, i, dst, o):
        seg = src[i:i + 64]
        dst[o:o + 64] = _LOWER[seg]
        return np.uint64(sum(1 << j for j, c in enumerate(seg.tolist()) if c >= 0x80))


def _fold_doc(data, a, b, out, o, lower, ok, off, pool, runs):
    """Fold ``data[a:b]`` into out[o:]; returns the new o, or -1 for a fallback (invalid UTF-8,
    or a run missing from the run cache: recorded, see :func:`.json_text._close_run`). Non-ASCII
    characters are folded one by one from the table (:func:`.json_text._fold_utf8`); a maximal run
    of them that holds one that is not context-free is folded whole from the run cache
    (``runs``: :meth:`.runs.RunCache.arrays`)."""
    lost = False
    j = a
    while j < b:
        while j + 64 <= b:                  # plain ASCII, 64 bytes at a time
            spec = _copy64_ascii(data, j, out, o)
            if spec != 0:
                q = _trailing_zeros(spec)
                j += q
                o += q
                break
            j += 64
            o += 64
        while j < b and data[j] < 0x80:     # the rest one by one, up to a non-ASCII byte
            out[o] = lower[data[j]]
            o += 1
            j += 1
        if j >= b:
            break
        run_j = j                           # a run of non-ASCII characters
        run_o = o
        j, o, plain = _fold_utf8(data, j, b, out, o, ok, off, pool)
        if plain < 0:
            return -1
        if plain == 0:
            o, found = _close_run(data, run_j, j - run_j, out, run_o, runs)
            lost = lost or not found
    return -1 if lost else o


def _fold_docs(data, offs, valid, out, st, dlo, dhi, hw, wlo, whi, lower, ok, off, pool, runs):
    """All documents of a string column: document i is ``data[offs[i]:offs[i + 1]]`` (null
    where ``valid[i]`` is 0). Per document its status ``st`` (0 folded, 1 null, 2 fallback),
    its range in ``out`` (documents separated by a newline) and of its word hashes in ``hw``.
    Returns (bytes used in out, words in hw)."""
    o = 0
    k = 0
    for i in range(offs.shape[0] - 1):
        if valid[i] == 0:
            st[i] = 1
            continue
        s = o
        if o > 0:
            out[o] = 10
            s = o + 1
        e = _fold_doc(data, offs[i], offs[i + 1], out, s, lower, ok, off, pool, runs)
        if e < 0:
            st[i] = 2
            continue
        st[i] = 0
        dlo[i] = s
        dhi[i] = e
        wlo[i] = k
        k = _word_hashes(out, s, e, hw, k)
        whi[i] = k
        o = e
    return o, k


if numba is not None:
    _fold_doc = jit(_fold_doc)
    _fold_docs = jit(_fold_docs)


def _fold_again(data, offs, fb, T, R) -> dict:
    """The fallback documents ``fb`` folded again (after the runs they missed were added to the
    run cache): {row: folded bytes} for those that now pass."""
    got = {}
    runs = R.arrays()
    for i in fb.tolist():
        a, b = int(offs[i]), int(offs[i + 1])
        tmp = np.empty((b - a) * T.max_expand + 64 + PAD, dtype=np.uint8)
        e = _fold_doc(data, a, b, tmp, 0, _LOWER, T.ok, T.off, T.pool, runs)
        if e >= 0:
            got[i] = tmp[:e].tobytes()
    R.take_missed()                 # (still missing: the cache is full; Python folds them)
    return got


def _column(batch, i):
    """(data, offsets, validity) numpy views of a string or large-string column, or None."""
    import pyarrow as pa

    col = batch.column(i)
    if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
        return None
    validity, offsets, data = col.buffers()
    n = len(col)
    odt = np.int64 if pa.types.is_large_string(col.type) else np.int32
    offs = np.frombuffer(offsets, dtype=odt)[col.offset:col.offset + n + 1].astype(np.int64)
    arr = (np.frombuffer(data, dtype=np.uint8) if data is not None
           else np.zeros(0, dtype=np.uint8))
    valid = (np.ones(n, dtype=np.uint8) if col.null_count == 0
             else col.is_valid().to_numpy(zero_copy_only=False).astype(np.uint8))
    return arr, offs, valid


def string_columns(path: str, text_field: str, id_field: str | None) -> bool:
    """True when the file's text column is a string column (the fused path can read it)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        schema = pq.ParquetFile(path).schema_arrow
    except Exception:  # noqa: BLE001 - unreadable: the per-document path reports it
        return False
    if text_field not in schema.names:
        return False
    t = schema.field(text_field).type
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def _slices(batches, block: int):
    """Record batches cut into zero-copy slices of at most ``block`` bytes of text (at least
    one row each), so that memory does not grow with the size of the documents."""
    for batch in batches:
        _, offs, _ = _column(batch, 0)
        start = 0
        n = len(offs) - 1
        while start < n:
            end = int(np.searchsorted(offs, offs[start] + block, side="right")) - 1
            end = min(max(end, start + 1), n)
            yield batch.slice(start, end - start)
            start = end


def iter_batches(piece, text_field: str = "text", id_field: str | None = None,
                 rows: int = BATCH_ROWS, block: int = J.BLOCK) -> Iterator[J.Batch]:
    """Batches of one Parquet file (a shard piece ``(path, 0, -1)``) with documents, ids, text
    bytes and errors as :func:`.corpus.iter_documents` gives them; the text column must be a
    string column (:func:`string_columns`). Record batches of ``rows`` rows are cut into slices
    of at most ``block`` bytes of text."""
    import pyarrow.parquet as pq

    path = piece[0]
    T = tables()
    pf = pq.ParquetFile(path)
    cols = [text_field] + ([id_field] if id_field else [])
    missing = [c for c in cols if c not in pf.schema_arrow.names]
    if missing:
        raise InputError(path, f"missing column(s) {', '.join(missing)}")
    A = J._Arrays()
    R = run_cache()
    row = 0
    for batch in _slices(pf.iter_batches(columns=cols, batch_size=rows), block):
        t0 = time.process_time()
        data, offs, valid = _column(batch, 0)
        n = len(valid)
        A.ensure(int(offs[-1] - offs[0]) + n + 1, n, T.max_expand)     # (this slice's text)
        st = A.st[:n]
        used, nw = _fold_docs(data, offs, valid, A.out, st, A.dlo, A.dhi, A.hw, A.wlo, A.whi,
                              _LOWER, T.ok, T.off, T.pool, R.arrays())
        docs = np.flatnonzero(st != 1)
        lo, hi = A.dlo[docs], A.dhi[docs]
        wlo, whi = A.wlo[docs], A.whi[docs]
        nbytes = int((offs[1:] - offs[:-1])[st == 0].sum())
        out, hw = A.out, A.hw
        fb = np.flatnonzero(st == 2)
        again = {}
        if R.learn() and len(fb):      # runs the cache lacked: folded now, fold the docs again
            again = _fold_again(data, offs, fb, T, R)
        if len(fb):
            texts = batch.column(0)
            for i, d in zip(fb.tolist(), np.searchsorted(docs, fb).tolist()):
                nbytes += int(offs[i + 1] - offs[i])
                if i in again:
                    out, used, hw, nw = J.append_doc(again[i], out, used, hw, nw, d, lo, hi, wlo,
                                                     whi)
                    continue
                raw = texts[i].as_py().encode("utf-8")
                out, used, hw, nw = J.append_folded(raw, out, used, hw, nw, d, lo, hi, wlo, whi)
        if id_field:
            ids = batch.column(1)

            def doc_id(d, docs=docs, ids=ids):
                return str(ids[int(docs[d])].as_py())
        else:
            def doc_id(d, docs=docs, row=row):
                return f"{path}#{row + int(docs[d])}"
        seconds = time.process_time() - t0
        yield J.Batch(out[:used], lo, hi, nbytes, seconds, doc_id, len(fb) - len(again), hw[:nw],
                      wlo, whi)
        row += n
