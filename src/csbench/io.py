"""Shared file helpers: atomic outputs, tolerant-but-strict readers, Parquet writing.

Every reader raises :class:`csbench.errors.InputError` naming the file and line of a bad record,
and every writer writes to a temporary name first so that a failed job never leaves a partial
file under its final name.
"""
from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import os
import tempfile
from pathlib import Path
from typing import IO, Iterator

import pandas as pd

from .errors import InputError


def current_umask() -> int:
    """The process umask (read from ``/proc/self/status`` where it can be, without changing it)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _public_mode(path: Path, directory: bool = False) -> None:
    """Give a file made by ``mkstemp`` (0600) or a directory made by ``mkdtemp`` (0700) the mode
    that ``open``/``mkdir`` would have given it: 0666 (0777) less the umask."""
    os.chmod(path, (0o777 if directory else 0o666) & ~current_umask())


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it to ``path`` only on success.

    The file ends up with the mode a plain ``open(path, "w")`` gives (0666 less the umask), not
    the 0600 of ``mkstemp``, so results are readable by the group on shared machines.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp)
    try:
        _public_mode(tmp)
        yield tmp
        if tmp.exists() and not tmp.is_dir():
            _public_mode(tmp)   # (a writer may have replaced the file with one of its own)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def publish_tree(path: str | Path) -> None:
    """Give a directory tree the modes ``open``/``mkdir`` would have given it under the current
    umask (files 0666, directories 0777, less the umask; executable files keep their x bits).
    For trees written by third-party code that uses ``mkstemp`` (transformers writes
    ``model.safetensors`` 0600)."""
    mask = current_umask()
    for root, dirs, files in os.walk(path):
        os.chmod(root, 0o777 & ~mask)
        for f in files:
            p = os.path.join(root, f)
            if os.path.islink(p):
                continue
            mode = os.stat(p).st_mode
            os.chmod(p, (0o777 if mode & 0o100 else 0o666) & ~mask)


@contextlib.contextmanager
def atomic_dir(path: str | Path) -> Iterator[Path]:
    """Yield a temporary directory next to ``path``; it replaces ``path`` only on success.

    The directory and everything written into it get the umask's modes (:func:`publish_tree`),
    not ``mkdtemp``'s 0700 or the 0600 of files that writers made with ``mkstemp``.
    """
    import shutil

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent))
    try:
        _public_mode(tmp, directory=True)
        yield tmp
        publish_tree(tmp)
        if path.exists():
            shutil.rmtree(path)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)


@contextlib.contextmanager
def atomic_open(path: str | Path, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Open a temporary file for writing that replaces ``path`` when the block succeeds."""
    if "b" in mode:
        encoding = None
    with atomic_path(path) as tmp:
        with open(tmp, mode, encoding=encoding) as fh:
            yield fh


class _CheckedText(io.TextIOWrapper):
    """A text stream whose decoding errors are :class:`InputError` naming the file and line."""

    def __init__(self, raw, path: Path, encoding: str):
        super().__init__(raw, encoding=encoding)
        self._csbench_path = path

    def _bad(self, exc: UnicodeDecodeError) -> InputError:
        line, col = _locate_decode_error(self._csbench_path, self.encoding)
        where = f" at byte {col} of the line" if col is not None else ""
        return InputError(self._csbench_path, f"not valid {self.encoding}{where} ({exc.reason})",
                          line)

    def __next__(self):
        try:
            return super().__next__()
        except UnicodeDecodeError as exc:
            raise self._bad(exc) from None

    def readline(self, *args):
        try:
            return super().readline(*args)
        except UnicodeDecodeError as exc:
            raise self._bad(exc) from None

    def read(self, *args):
        try:
            return super().read(*args)
        except UnicodeDecodeError as exc:
            raise self._bad(exc) from None

    def readlines(self, *args):
        try:
            return super().readlines(*args)
        except UnicodeDecodeError as exc:
            raise self._bad(exc) from None


def open_binary(path: str | Path) -> IO[bytes]:
    """Open a plain, gzip (``.gz``) or zstandard (``.zst``) file for reading its bytes."""
    path = Path(path)
    if not path.exists():
        raise InputError(path, "file not found")
    if path.suffix == ".gz":
        return gzip.open(path, "rb")
    if path.suffix == ".zst":
        import zstandard

        return io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(open(path, "rb")))
    return open(path, "rb")


def sha256_file(path: str | Path) -> str:
    """Hex sha256 of a file's bytes as stored (read in 1 MiB blocks)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _locate_decode_error(path: Path, encoding: str) -> tuple[int | None, int | None]:
    """(line, byte offset in the line) of the first undecodable byte of ``path``."""
    try:
        with open_binary(path) as fh:
            for lineno, raw in enumerate(fh, start=1):
                try:
                    raw.decode(encoding)
                except UnicodeDecodeError as exc:
                    return lineno, exc.start
    except (OSError, EOFError):
        pass
    return None, None


def open_text(path: str | Path, encoding: str = "utf-8") -> IO[str]:
    """Open a text file that may be plain, gzip (``.gz``) or zstandard (``.zst``) compressed.

    Bytes that are not valid in ``encoding`` raise :class:`InputError` naming the file and line.
    """
    path = Path(path)
    return _CheckedText(open_binary(path), path, encoding)


class DuplicateKeyError(ValueError):
    """A JSON object names the same key twice (``json`` would silently keep the last value)."""

    def __init__(self, key: str):
        self.key = key
        super().__init__(f"key {key!r} given twice in one object")


def strict_object(pairs: list[tuple[str, object]]) -> dict:
    """``object_pairs_hook`` for :mod:`json` that rejects repeated keys."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for k, _ in pairs:
            if k in seen:
                raise DuplicateKeyError(k)
            seen.add(k)
    return out


class PairsDict(dict):
    """A JSON object that also keeps every (key, value) pair in order, repeated keys included
    (``object_pairs_hook=PairsDict.from_pairs``): for inputs where a repeat is reported, not fatal."""

    pairs: list[tuple[str, object]]

    @classmethod
    def from_pairs(cls, pairs):
        d = cls(pairs)
        d.pairs = list(pairs)
        return d


def _line_of_key(text: str, key: str, nth: int = 2) -> int | None:
    """Line of the ``nth`` occurrence of the JSON string ``key`` in ``text`` (for messages)."""
    needle = json.dumps(key)
    pos = -1
    for _ in range(nth):
        pos = text.find(needle, pos + 1)
        if pos < 0:
            return None
    return text.count("\n", 0, pos) + 1


def read_jsonl(path: str | Path, required: tuple[str, ...] = (),
               object_pairs_hook=strict_object) -> Iterator[tuple[int, dict]]:
    """Yield ``(line_number, record)`` for each non-blank line of a JSON-lines file.

    Raises :class:`InputError` on invalid JSON (a truncated last line included), invalid UTF-8,
    a non-object line, a key given twice in one object, a missing required field, or an empty
    file. ``object_pairs_hook=PairsDict.from_pairs`` keeps repeated keys instead.
    """
    n = 0
    with open_text(path) as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line, object_pairs_hook=object_pairs_hook)
            except json.JSONDecodeError as exc:
                raise InputError(path, f"invalid JSON ({exc.msg} at column {exc.colno})",
                                 lineno) from None
            except DuplicateKeyError as exc:
                raise InputError(path, f"invalid record: {exc}", lineno) from None
            if not isinstance(rec, dict):
                raise InputError(path, "expected a JSON object", lineno)
            missing = [k for k in required if k not in rec]
            if missing:
                raise InputError(path, f"missing field(s) {', '.join(missing)}", lineno)
            n += 1
            yield lineno, rec
    if n == 0:
        raise InputError(path, "file is empty")


def read_json(path: str | Path, object_pairs_hook=strict_object):
    """Load a whole JSON document, naming the file and line on a syntax error, invalid UTF-8 or
    a key given twice in one object (``object_pairs_hook=PairsDict.from_pairs`` keeps repeats)."""
    with open_text(path) as fh:
        text = fh.read()
    if not text.strip():
        raise InputError(path, "file is empty")
    try:
        return json.loads(text, object_pairs_hook=object_pairs_hook)
    except json.JSONDecodeError as exc:
        raise InputError(path, f"invalid JSON ({exc.msg} at column {exc.colno})",
                         exc.lineno) from None
    except DuplicateKeyError as exc:
        raise InputError(path, str(exc), _line_of_key(text, exc.key)) from None


def read_json_array(path: str | Path) -> list[tuple[int, object]]:
    """A JSON document whose top level is an array, as ``[(line of the element, element)]``, so
    that a bad element can be reported with its line. Same errors as :func:`read_json`."""
    with open_text(path) as fh:
        text = fh.read()
    if not text.strip():
        raise InputError(path, "file is empty")
    dec = json.JSONDecoder(object_pairs_hook=strict_object)
    ws = json.decoder.WHITESPACE.match
    out: list[tuple[int, object]] = []
    pos = ws(text, 0).end()
    try:
        if text[pos:pos + 1] != "[":
            read_json(path)             # (a syntax error is reported as such)
            raise InputError(path, "expected a JSON array", text.count("\n", 0, pos) + 1)
        pos = ws(text, pos + 1).end()
        line, counted = 1, 0                 # line of text[counted], advanced incrementally
        if text[pos:pos + 1] == "]":
            end = pos + 1
        else:
            while True:
                item, end = dec.raw_decode(text, pos)
                line += text.count("\n", counted, pos)
                counted = pos
                out.append((line, item))
                pos = ws(text, end).end()
                if text[pos:pos + 1] == ",":
                    pos = ws(text, pos + 1).end()
                    continue
                if text[pos:pos + 1] != "]":
                    raise json.JSONDecodeError("expected ',' or ']'", text, pos)
                end = pos + 1
                break
        if text[end:].strip():
            raise json.JSONDecodeError("extra data", text, ws(text, end).end())
    except json.JSONDecodeError as exc:
        raise InputError(path, f"invalid JSON ({exc.msg} at column {exc.colno})",
                         exc.lineno) from None
    except DuplicateKeyError as exc:
        rel = _line_of_key(text[pos:], exc.key)      # pos: start of the element being read
        line = text.count("\n", 0, pos) + (rel if rel is not None else 1)
        raise InputError(path, str(exc), line) from None
    return out


def line_of(path: str | Path, needle: str, nth: int = 1) -> int | None:
    """Line of the ``nth`` occurrence of ``needle`` in a text file (to name the line of a bad
    record in formats whose parsers do not track lines: JSON documents, XML); None if absent."""
    try:
        with open_text(path) as fh:
            text = fh.read()
    except InputError:
        return None
    pos = -1
    for _ in range(nth):
        pos = text.find(needle, pos + 1)
        if pos < 0:
            return None
    return text.count("\n", 0, pos) + 1


def expect_type(path, value, types, what: str, line: int | None = None):
    """``value`` if it is an instance of ``types`` (bool never counts as int), else raise
    :class:`InputError` naming the file, the line and the field: no silent ``str()`` coercion.
    ``line`` may be a function returning it (called only on error, where finding it costs)."""
    ok = isinstance(value, types) and not (isinstance(value, bool) and bool not in _tuple(types))
    if not ok:
        line = line() if callable(line) else line
        names = " or ".join(t.__name__ if t is not type(None) else "null" for t in _tuple(types))
        raise InputError(path, f"{what} must be {names}, got {type(value).__name__} "
                         f"{_short(value)}", line)
    return value


def _tuple(types) -> tuple:
    return types if isinstance(types, tuple) else (types,)


def _short(value) -> str:
    r = repr(value)
    return r if len(r) <= 60 else r[:57] + "..."


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
