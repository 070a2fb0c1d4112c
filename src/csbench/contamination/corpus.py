"""Corpus inputs: expand globs, plan shards (files or byte ranges), stream documents.

A corpus is ``{paths: [globs], format: jsonl|parquet|text, text_field, id_field}``. Files may be
plain, gzip (``.gz``) or zstandard (``.zst``). A shard is a list of pieces ``(path, start, end)``:
small files are packed together, and a large uncompressed JSON-lines file is cut into byte ranges
(a line belongs to the range its first byte falls in), so shards run as independent jobs and the
memory of one job never depends on the corpus size.
"""
from __future__ import annotations

import glob
import gzip
import io
import json
import os
import zlib
from pathlib import Path
from typing import Iterator

from ..errors import InputError

try:
    import orjson

    _fast_loads = orjson.loads
except ImportError:  # pragma: no cover - orjson is in the pinned environment
    _fast_loads = None

try:  # ISA-L gzip: ~3x zlib's decompression speed; same format, same errors
    from isal.igzip import open as _gzip_open
except ImportError:  # pragma: no cover - isal is in the pinned environment
    _gzip_open = gzip.open

FORMATS = ("jsonl", "parquet", "text")
COMPRESSED = (".gz", ".zst")
READ_BLOCK = 1 << 22


def expand_paths(name: str, globs: list[str]) -> list[str]:
    """Sorted files matched by a corpus's globs; an unmatched glob is an error naming it."""
    files: set[str] = set()
    for pattern in globs:
        hits = [p for p in glob.glob(pattern, recursive=True) if os.path.isfile(p)]
        if not hits:
            raise InputError(pattern, f"corpus {name!r}: glob matches no file")
        files.update(hits)
    return sorted(files)


def plan_shards(files: list[str], fmt: str, shard_bytes: int) -> list[list[tuple[str, int, int]]]:
    """Group files into shards of about ``shard_bytes`` (on-disk size); end -1 means end of file."""
    shards: list[list[tuple[str, int, int]]] = []
    current: list[tuple[str, int, int]] = []
    size = 0
    for path in files:
        n = os.path.getsize(path)
        splittable = fmt == "jsonl" and not path.endswith(COMPRESSED)
        if splittable and n > shard_bytes:
            if current:
                shards.append(current)
                current, size = [], 0
            k = -(-n // shard_bytes)
            cuts = [round(i * n / k) for i in range(k + 1)]
            shards.extend([[(path, a, b)] for a, b in zip(cuts, cuts[1:])])
            continue
        if current and size + n > shard_bytes:
            shards.append(current)
            current, size = [], 0
        current.append((path, 0, -1))
        size += n
    if current:
        shards.append(current)
    return shards


class _GzipRaw(io.RawIOBase):
    """gzip decompression (ISA-L's ``isal.igzip`` when installed: about 3x zlib's speed, same
    format and errors; else the standard library); a corrupt or truncated file is an
    :class:`InputError` naming it."""

    def __init__(self, path: str):
        self.path = path
        self._f = _gzip_open(path, "rb")

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        try:
            return self._f.readinto(b)
        except (OSError, EOFError, zlib.error) as exc:
            raise InputError(self.path, f"cannot decompress gzip data ({exc})") from None

    def close(self) -> None:
        if not self.closed:
            self._f.close()
        super().close()


class _ZstdRaw(io.RawIOBase):
    """zstd decompression frame by frame; a corrupt file, or one whose last frame is cut off
    (which a streaming reader would end silently), is an :class:`InputError` naming it."""

    CHUNK = 1 << 17             # compressed bytes per call (bounds the output held at once)

    def __init__(self, path: str):
        import zstandard

        self.path = path
        self._error = zstandard.ZstdError
        self._dctx = zstandard.ZstdDecompressor()
        self._obj = self._dctx.decompressobj()
        self._open = False       # bytes fed since the last complete frame
        self._f = open(path, "rb")
        self._out = memoryview(b"")

    def readable(self) -> bool:
        return True

    def _feed(self, data: bytes) -> None:
        parts = []
        while data:
            try:
                parts.append(self._obj.decompress(data))
            except self._error as exc:
                raise InputError(self.path, f"cannot decompress zstd data ({exc})") from None
            self._open = True
            if not self._obj.eof:
                break
            data = self._obj.unused_data        # the next frame
            self._obj = self._dctx.decompressobj()
            self._open = False
        self._out = memoryview(b"".join(parts))

    def readinto(self, b) -> int:
        while not len(self._out):
            chunk = self._f.read(self.CHUNK)
            if not chunk:
                if self._open:
                    raise InputError(self.path, "truncated zstd data (the last frame is "
                                                "incomplete)")
                return 0
            self._feed(chunk)
        n = min(len(b), len(self._out))
        b[:n] = self._out[:n]
        self._out = self._out[n:]
        return n

    def close(self) -> None:
        if not self.closed:
            self._f.close()
        super().close()


def open_binary(path: str):
    """Binary stream of a plain, .gz or .zst file (decompression failures and truncated
    compressed files raise :class:`InputError` naming the file)."""
    if not os.path.exists(path):
        raise InputError(path, "file not found")
    if path.endswith(".gz"):
        return io.BufferedReader(_GzipRaw(path), buffer_size=READ_BLOCK)
    if path.endswith(".zst"):
        return io.BufferedReader(_ZstdRaw(path), buffer_size=READ_BLOCK)
    return open(path, "rb", buffering=READ_BLOCK)


def _lines(path: str, start: int, end: int) -> Iterator[tuple[int, int | None, bytes]]:
    """Yield (byte offset, line number or None, line) of the lines starting in [start, end)."""
    with open_binary(path) as fh:
        lineno: int | None = 0
        pos = 0
        if start > 0:
            fh.seek(start - 1)
            pos = start - 1 + len(fh.readline())   # finish the line that straddles the cut
            lineno = None
        for line in fh:
            if end >= 0 and pos >= end:
                break
            if lineno is not None:
                lineno += 1
            yield pos, lineno, line
            pos += len(line)


def iter_documents(piece: tuple[str, int, int], fmt: str, text_field: str = "text",
                   id_field: str | None = None) -> Iterator[tuple[str, bytes]]:
    """Yield ``(document id, UTF-8 text)`` of one shard piece.

    Document ids are the ``id_field`` value or, without one, ``<file>:<line>`` (jsonl; ``@<byte>``
    inside a byte range), ``<file>#<row>`` (parquet) or the file name (text).
    """
    path, start, end = piece
    if fmt == "text":
        with open_binary(path) as fh:
            yield path, fh.read()
        return
    if fmt == "parquet":
        import pyarrow.parquet as pq

        pf = pq.ParquetFile(path)
        cols = [text_field] + ([id_field] if id_field else [])
        missing = [c for c in cols if c not in pf.schema_arrow.names]
        if missing:
            raise InputError(path, f"missing column(s) {', '.join(missing)}")
        row = 0
        for batch in pf.iter_batches(columns=cols, batch_size=8192):
            texts = batch.column(0).to_pylist()
            ids = batch.column(1).to_pylist() if id_field else None
            for i, t in enumerate(texts):
                if t is None:
                    continue
                if not isinstance(t, str):
                    raise InputError(path, f"row {row + i}: field {text_field!r} is not a string")
                yield (str(ids[i]) if ids else f"{path}#{row + i}"), t.encode("utf-8")
            row += len(texts)
        return
    if fmt != "jsonl":
        raise InputError(path, f"unknown corpus format {fmt!r} (expected one of {FORMATS})")
    for pos, lineno, line in _lines(path, start, end):
        doc = parse_line(path, pos, lineno, line, text_field, id_field)
        if doc is not None:
            yield doc


def parse_line(path: str, pos: int, lineno: int | None, line: bytes, text_field: str = "text",
               id_field: str | None = None) -> tuple[str, bytes] | None:
    """``(document id, UTF-8 text)`` of one JSON line starting at byte ``pos`` (line number
    ``lineno``, None inside a byte range), None for a blank line; an invalid record is an
    :class:`InputError` naming file and line. (The compiled reader of :mod:`.jsonl` sends every
    line it does not handle exactly here.)"""
    if not line.strip():
        return None
    fast = _fast_loads
    try:
        # orjson parses ~1.5x faster; what it rejects (NaN literals, lone surrogates ...) is
        # parsed again by json, so results and errors are json's; so is a record whose id
        # is a float (orjson reads integers beyond 64 bits as floats, json as int)
        rec = fast(line) if fast is not None else json.loads(line)
        if id_field and isinstance(rec, dict) and isinstance(rec.get(id_field), float):
            rec = None
    except ValueError:
        rec = None
    if rec is None:
        try:
            rec = json.loads(line)
        except ValueError as exc:
            where = lineno if lineno is not None else None
            raise InputError(path, f"invalid JSON at byte {pos} ({exc})", where) from None
    if not isinstance(rec, dict) or text_field not in rec:
        raise InputError(path, f"record at byte {pos} has no field {text_field!r}", lineno)
    text = rec[text_field]
    if not isinstance(text, str):
        raise InputError(path, f"field {text_field!r} at byte {pos} is not a string", lineno)
    if id_field:
        if id_field not in rec:
            raise InputError(path, f"record at byte {pos} has no field {id_field!r}", lineno)
        doc_id = str(rec[id_field])
    else:
        doc_id = f"{path}:{lineno}" if lineno is not None else f"{path}@{pos}"
    return doc_id, text.encode("utf-8")


def shard_documents(shard, fmt: str, text_field: str = "text", id_field: str | None = None):
    for piece in shard:
        yield from iter_documents(tuple(piece), fmt, text_field, id_field)


def shard_size(shard) -> int:
    """On-disk bytes of a shard (for throughput figures)."""
    total = 0
    for path, start, end in shard:
        total += (end if end >= 0 else os.path.getsize(path)) - start
    return total


__all__ = ["FORMATS", "expand_paths", "plan_shards", "iter_documents", "shard_documents",
           "open_binary", "shard_size", "parse_line", "Path"]
