"""Shared file helpers: atomic outputs, tolerant-but-strict readers, Parquet writing.

Every reader raises :class:`csbench.errors.InputError` naming the file and line of a bad record,
and every writer writes to a temporary name first so that a failed job never leaves a partial
file under its final name.
"""
from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import tempfile
from pathlib import Path
from typing import IO, Iterator

import pandas as pd

from .errors import InputError


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it to ``path`` only on success."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp)
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


@contextlib.contextmanager
def atomic_open(path: str | Path, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Open a temporary file for writing that replaces ``path`` when the block succeeds."""
    if "b" in mode:
        encoding = None
    with atomic_path(path) as tmp:
        with open(tmp, mode, encoding=encoding) as fh:
            yield fh


def open_text(path: str | Path, encoding: str = "utf-8") -> IO[str]:
    """Open a text file that may be plain, gzip (``.gz``) or zstandard (``.zst``) compressed."""
    path = Path(path)
    if not path.exists():
        raise InputError(path, "file not found")
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding=encoding)
    if path.suffix == ".zst":
        import zstandard

        raw = zstandard.ZstdDecompressor().stream_reader(open(path, "rb"))
        return io.TextIOWrapper(raw, encoding=encoding)
    return open(path, encoding=encoding)


def read_jsonl(path: str | Path, required: tuple[str, ...] = ()) -> Iterator[tuple[int, dict]]:
    """Yield ``(line_number, record)`` for each non-blank line of a JSON-lines file.

    Raises :class:`InputError` on invalid JSON, a non-object line, a missing required field,
    or an empty file.
    """
    n = 0
    with open_text(path) as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(path, f"invalid JSON ({exc.msg})", lineno) from None
            if not isinstance(rec, dict):
                raise InputError(path, "expected a JSON object", lineno)
            missing = [k for k in required if k not in rec]
            if missing:
                raise InputError(path, f"missing field(s) {', '.join(missing)}", lineno)
            n += 1
            yield lineno, rec
    if n == 0:
        raise InputError(path, "file is empty")


def read_json(path: str | Path):
    """Load a whole JSON document, naming the file and line on a syntax error."""
    with open_text(path) as fh:
        text = fh.read()
    if not text.strip():
        raise InputError(path, "file is empty")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(path, f"invalid JSON ({exc.msg})", exc.lineno) from None


def require_fields(path, rec: dict, fields, line: int | None = None) -> None:
    """Raise :class:`InputError` if ``rec`` lacks any of ``fields``."""
    missing = [k for k in fields if k not in rec]
    if missing:
        raise InputError(path, f"missing field(s) {', '.join(missing)}", line)


def write_parquet(df: pd.DataFrame, path: str | Path) -> None:
    """Write a DataFrame to Parquet atomically (no index)."""
    with atomic_path(path) as tmp:
        df.to_parquet(tmp, index=False)


def write_tsv(df: pd.DataFrame, path: str | Path, float_format: str | None = None) -> None:
    """Write a DataFrame as a tab-separated file atomically (no index)."""
    with atomic_path(path) as tmp:
        df.to_csv(tmp, sep="\t", index=False, float_format=float_format)


def write_json(obj, path: str | Path, indent: int | None = None) -> None:
    """Write JSON atomically."""
    with atomic_open(path) as fh:
        json.dump(obj, fh, indent=indent, ensure_ascii=False)
