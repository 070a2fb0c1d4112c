"""The files of one model's LM cache: a directory per model key, one SQLite file per writer.

``<cache_dir>/lm-<model key>/`` holds the files. Each process that stores something creates its
own file (exclusive create; named by creation time, job, host, process id and a random suffix)
and is the only one that ever writes it, in SQLite's rollback-journal mode (no WAL, no shared
memory, no lock another host must honour). While it is written the file is
``<id>.open.sqlite``; when its writer ends normally it is renamed ``<id>.sqlite`` (finished:
never written again). Readers open every file of the model read-only, each once per job:

* a finished file with ``immutable=1`` (no locks at all);
* an unfinished one (its writer running, or killed) with ``mode=ro``: SQLite cannot change it.
  A writer killed in the middle of a commit leaves a hot journal, which a read-only connection
  cannot roll back (``SQLITE_READONLY_ROLLBACK``): that file and its journal are copied to a
  private temporary directory, the copy rolled back and read. A file that fails in any other way
  is skipped for this job with a warning (over a network filesystem an unfinished file may be
  seen half-written); nothing of it is changed.

A file from before this layout (``<cache_dir>/lm-<model key>.sqlite``, WAL mode) is adopted by
the first job that opens the model's cache: renamed into the directory (an atomic rename; a
second job finds nothing to adopt), checksummed if older than checksums, switched to rollback
journal mode and finished, so its entries stay readable.
"""
from __future__ import annotations

import logging
import os
import re
import secrets
import shutil
import socket
import sqlite3
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

log = logging.getLogger(__name__)

SCHEMA = ("CREATE TABLE IF NOT EXISTS scores (model TEXT, key TEXT, req TEXT, logprob REAL, "
          "n_tokens INTEGER, checksum TEXT, PRIMARY KEY (model, key, req))",
          "CREATE TABLE IF NOT EXISTS samples (model TEXT, req TEXT, texts TEXT, checksum TEXT, "
          "PRIMARY KEY (model, req))")

OPEN, DONE = ".open.sqlite", ".sqlite"

# SQLite's primary result codes for a damaged file.
_SQLITE_CORRUPT, _SQLITE_NOTADB = 11, 26
_SQLITE_READONLY_ROLLBACK = 8 | (3 << 8)


@dataclass(frozen=True)
class CacheDir:
    """Where a job's LM cache lives (``path``) and which job it is (``job``: e.g. the rule and
    its wildcards, part of the name of the file the job writes). Usable as a path."""

    path: str
    job: str | None = None

    def __fspath__(self) -> str:
        return str(self.path)


def is_corrupt(exc: BaseException) -> bool:
    """Whether an SQLite error says the file is damaged (not locked, not busy)."""
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (_SQLITE_CORRUPT, _SQLITE_NOTADB)
    text = str(exc).lower()
    return "malformed" in text or "not a database" in text


def _safe(text: str, n: int) -> str:
    return re.sub(r"[^A-Za-z0-9_.=+-]+", "_", text)[:n].strip("._") or "x"


def writer_id(job: str | None, at_ns: int | None = None) -> str:
    """A new writer's file id: creation time (sortable, so newer files are read first), job,
    host, process id, random suffix."""
    at_ns = time.time_ns() if at_ns is None else at_ns
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(at_ns // 10**9)) + f".{at_ns % 10**9:09d}"
    parts = [stamp] + ([_safe(job, 80)] if job else []) + [
        _safe(socket.gethostname().split(".")[0], 40), str(os.getpid()), secrets.token_hex(4)]
    return "-".join(parts)


def file_id(name: str) -> str | None:
    """The writer id of a cache file name (None: not a cache file)."""
    for suffix in (OPEN, DONE):
        if name.endswith(suffix):
            return name[:-len(suffix)]
    return None


def corrupt_name(path: Path) -> Path:
    dest = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}")
    return dest.with_name(f"{dest.name}-{os.getpid()}") if dest.exists() else dest


def move_aside(path: Path, exc: BaseException) -> Path | None:
    """Rename a damaged file (and its journal) to ``<file>.corrupt-<timestamp>``; None when it is
    gone already (another job moved it)."""
    dest = corrupt_name(path)
    try:
        os.replace(path, dest)
    except FileNotFoundError:
        return None
    for suffix in ("-journal", "-wal"):
        side = Path(f"{path}{suffix}")
        if side.exists():
            os.replace(side, Path(f"{dest}{suffix}"))
    log.warning("LM cache %s is damaged (sqlite3.%s: %s): moved aside to %s; its entries are "
                "recomputed", path, type(exc).__name__, exc, dest.name)
    return dest


class Reader:
    """Read-only connection to another writer's file (see the module docstring)."""

    def __init__(self, path: Path):
        self.path = path
        self.finished = path.name.endswith(DONE) and not path.name.endswith(OPEN)
        self.copy_dir: str | None = None
        self._index: dict[str, set[int]] = {}
        self._rows: dict[str, int] = {}       # per table, about how many rows (max rowid)
        self._asked: dict[str, int] = {}      # per table, questions asked without the index
        mode = "immutable=1" if self.finished else "mode=ro"
        self.con = sqlite3.connect(f"file:{quote(str(path))}?{mode}", uri=True, timeout=30,
                                   check_same_thread=False)

    def query(self, sql: str, args) -> list:
        try:
            return self.con.execute(sql, args).fetchall()
        except sqlite3.OperationalError as exc:
            if getattr(exc, "sqlite_errorcode", None) == _SQLITE_READONLY_ROLLBACK \
                    and self.copy_dir is None:
                self._recover()
                return self.query(sql, args)
            if "no such table" in str(exc):   # created, killed before its tables were made
                return []
            raise

    def index(self, table: str, model: str, asking: int) -> set[int] | None:
        """A finished file's index of ``table`` (the hashes of its entries' keys: (key, request
        hash) for scores, the request hash for samples), so that a lookup asks the file only for
        what it holds; None: ask it for every one of the ``asking`` items. The index is read
        once the questions asked of the file would outnumber a third of its rows (reading a row
        costs about a third of a question), so neither a large file asked a few questions nor a
        small one asked many costs much; an unfinished file (it may still grow) has none."""
        if not self.finished:
            return None
        if table in self._index:
            return self._index[table]
        if table not in self._rows:
            self._rows[table] = self.query(f"SELECT max(rowid) FROM {table}", ())[0][0] or 0 \
                if self.query("SELECT 1 FROM sqlite_master WHERE name=?", (table,)) else 0
            self._asked[table] = 0
        self._asked[table] += asking
        if 3 * self._asked[table] < self._rows[table]:
            return None
        sql = ("SELECT key, req FROM scores WHERE model=?" if table == "scores"
               else "SELECT req FROM samples WHERE model=?")
        rows = self.query(sql, (model,))
        self._index[table] = ({hash((k, r)) for k, r in rows} if table == "scores"
                              else {hash(r) for (r,) in rows})
        return self._index[table]

    def _recover(self) -> None:
        """Read a file whose writer stopped in the middle of a commit from a private copy with
        that commit rolled back (the file itself is not touched)."""
        self.copy_dir = tempfile.mkdtemp(prefix="csbench-lmcache-")
        copy = Path(self.copy_dir) / "copy.sqlite"
        shutil.copyfile(self.path, copy)
        try:
            shutil.copyfile(f"{self.path}-journal", f"{copy}-journal")
        except FileNotFoundError:
            pass  # the writer finished its commit meanwhile: the copy is consistent
        self.con.close()
        self.con = sqlite3.connect(str(copy), timeout=30, check_same_thread=False)
        self.con.execute("SELECT count(*) FROM sqlite_master").fetchone()  # rolls back
        log.warning("LM cache %s: its writer stopped in the middle of a commit; read from a "
                    "copy with that commit rolled back (the file is left as it is)", self.path)

    def close(self) -> None:
        self.con.close()
        if self.copy_dir is not None:
            shutil.rmtree(self.copy_dir, ignore_errors=True)


class Writer:
    """The one file this process writes: created on first use (exclusive create), renamed
    finished by :meth:`finish`."""

    def __init__(self, root: Path, job: str | None):
        self.root, self.job = root, job
        self.id = writer_id(job)
        self.path = root / (self.id + OPEN)
        self.con: sqlite3.Connection | None = None

    def connect(self) -> sqlite3.Connection:
        if self.con is None:
            os.close(os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
            con = sqlite3.connect(str(self.path), timeout=30, check_same_thread=False)
            con.execute("PRAGMA journal_mode=DELETE")
            for sql in SCHEMA:
                con.execute(sql)
            con.commit()
            self.con = con
        return self.con

    def restart(self) -> None:
        """A fresh file after this one was moved aside."""
        self.close_connection()
        self.id = writer_id(self.job)
        self.path = self.root / (self.id + OPEN)

    def close_connection(self) -> None:
        if self.con is not None:
            try:
                self.con.close()
            except sqlite3.Error:
                pass
            self.con = None

    def finish(self) -> None:
        """Close and rename the file finished (nothing more is written to it)."""
        if self.con is None:
            return
        self.close_connection()
        try:
            os.replace(self.path, self.root / (self.id + DONE))
        except FileNotFoundError:
            pass
        self.path = self.root / (self.id + DONE)


def adopt_legacy(cache_dir: Path, root: Path, model_key: str, migrate) -> None:
    """Move the model's file of the one-file layout (``lm-<key>.sqlite``, WAL mode) into
    ``root`` as a finished file (see the module docstring); ``migrate(con, path)`` adds
    checksums to a file older than them."""
    legacy = cache_dir / f"lm-{model_key[:24]}.sqlite"
    if not legacy.exists():
        return
    try:
        at = legacy.stat().st_mtime_ns
    except FileNotFoundError:
        return
    wid = writer_id("legacy", at)
    dest = root / (wid + OPEN)
    try:
        os.rename(legacy, dest)
    except FileNotFoundError:
        return  # another job adopted it
    if Path(f"{legacy}-wal").exists():
        os.replace(f"{legacy}-wal", f"{dest}-wal")
    try:
        os.unlink(f"{legacy}-shm")
    except FileNotFoundError:
        pass
    try:
        con = sqlite3.connect(str(dest), timeout=30)
        try:
            migrate(con, dest)
            con.execute("PRAGMA journal_mode=DELETE")  # checkpoints and removes the WAL
        finally:
            con.close()
    except sqlite3.DatabaseError as exc:
        if not is_corrupt(exc):
            raise
        move_aside(dest, exc)
        return
    os.replace(dest, root / (wid + DONE))
    log.info("LM cache %s (one file per model, from before one file per writer) moved to %s",
             legacy, root / (wid + DONE))


def merge(root: Path) -> Path | None:
    """Merge every file of one model's directory ``root`` into one new finished file (for a
    request stored in several, the newest file's entry) and delete the merged files. Only with
    no job of the model running: it opens unfinished files for writing (rolling back the commit
    a killed writer left); a damaged file is moved aside. Returns the new file (None: fewer
    than two files)."""
    files = sorted((p for p in root.iterdir() if file_id(p.name) is not None),
                   key=lambda p: p.name)
    if len(files) < 2:
        return None
    out = Writer(root, "merged")
    con = out.connect()
    merged = []
    for f in files:
        try:
            src = sqlite3.connect(str(f), timeout=30)
            src.execute("SELECT count(*) FROM sqlite_master").fetchone()  # rolls back a cut commit
            src.close()
            con.execute("ATTACH DATABASE ? AS src", (str(f),))
            try:
                with con:
                    for table, cols in (("scores", "model, key, req, logprob, n_tokens, checksum"),
                                        ("samples", "model, req, texts, checksum")):
                        if con.execute("SELECT 1 FROM src.sqlite_master WHERE name=?",
                                       (table,)).fetchone():
                            con.execute(f"INSERT OR REPLACE INTO main.{table} ({cols}) "
                                        f"SELECT {cols} FROM src.{table}")
            finally:
                con.execute("DETACH DATABASE src")
        except sqlite3.DatabaseError as exc:
            if not is_corrupt(exc):
                raise
            move_aside(f, exc)
            continue
        merged.append(f)
    out.finish()
    for f in merged:
        f.unlink()
    log.info("LM cache %s: %d files merged into %s", root, len(merged), out.path.name)
    return out.path


if __name__ == "__main__":
    import argparse
    import sys

    ap = argparse.ArgumentParser(
        prog="python -m csbench.lm.cache_files",
        description="Merge each model's LM cache files into one (run it with no LM job running).")
    ap.add_argument("command", choices=["merge"])
    ap.add_argument("cache_dir", help="the LM cache directory, e.g. results/cache/lm")
    a = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    for d in sorted(Path(a.cache_dir).glob("lm-*")):
        if d.is_dir():
            merge(d)
