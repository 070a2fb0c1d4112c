"""The LM cache shared by every backend: per model key, a directory of SQLite files under
``cache_dir``, one per writing process (:mod:`csbench.lm.cache_files`: no file is ever written by
two processes, so jobs of one model may run at once on different hosts of a shared filesystem).

``scores``: summed log-probability and token count per (model key, caller key, request hash);
``samples``: the sampled texts per (model key, request hash) of a generation request (and, for
rows written since issue 28, per text whether ``max_new_tokens`` ended it). The model
key says which model answered: the local weights' fingerprint and dtype
(:func:`model_fingerprint`), or a served endpoint and model name (:mod:`csbench.lm.served`). Rows
are written as results arrive, so an interrupted run resumes where it stopped and a rerun sends
or computes nothing twice: a lookup reads this process's file, then every other file of the
model, newest first; the newest entry of a request decides.

Integrity (issue 29):

* Only valid values are stored: a log-probability must be a finite number <= 0 (up to
  :data:`LOGPROB_TOLERANCE`) and a token count an integer >= 1; :meth:`ScoreCache.put` raises
  otherwise (nothing of the batch is written).
* Every row carries a checksum of its key and values (:func:`score_checksum`), verified on read.
  A row that fails it, or holds an invalid value (a NULL, NaN, a positive number), is a miss: it
  is recomputed and stored anew in this process's file (newer, so read first from then on),
  counted in :attr:`ScoreCache.rejected` and logged.
* A file written before checksums existed is migrated when it is adopted (see
  :func:`csbench.lm.cache_files.adopt_legacy`): the column is added and its valid rows are
  checksummed (trusted once; invalid ones are dropped), in one transaction.
* A damaged file (``database disk image is malformed``, ``file is not a database``): this
  process's own, or another writer's finished one, is moved aside to
  ``<file>.corrupt-<timestamp>`` with a warning naming both paths (the process goes on with a
  fresh file of its own); another writer's unfinished file that fails to read is skipped for the
  job with a warning and left as it is (its writer may still be writing it).
* ``refresh=True`` (config ``lm.refresh_cache``): nothing is read; everything is recomputed and
  stored anew.
"""
from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import sqlite3
import threading
import weakref
from pathlib import Path

from .cache_files import (CacheDir, Reader, Writer, adopt_legacy, file_id, is_corrupt,
                          move_aside)

log = logging.getLogger(__name__)

# A log-probability read from a server may exceed 0 by rounding (a token of probability 1):
# values in (0, LOGPROB_TOLERANCE] count as 0; anything larger is an error.
LOGPROB_TOLERANCE = 1e-4

# The version of an empty-context request's token ids (see :func:`request_fingerprint`).
EMPTY_CONTEXT_VERSION = 2


def request_fingerprint(context: str, continuation: str) -> str:
    """Stable hash of one request's text (part of the cache key).

    An empty-context request's hash also names :data:`EMPTY_CONTEXT_VERSION`, because its
    score changed without its text changing: before version 2 the local engine encoded such a
    continuation with the tokenizer's default special tokens, so under a tokenizer that adds a
    start token (Gemma-3, Llama) the cached score included ``log p(<bos> | <bos>)``; since then
    it is encoded as lm-evaluation-harness 0.4.13 does (no special tokens,
    :func:`csbench.lm.plan.empty_context_pair`). The old rows keep their old hash, so they are
    never read again (their requests are scored anew), while every other cached score, whose
    encoding did not change, stays valid. (The served backend shares this hash: its
    empty-context answers, which did not change, are asked once more.) The versioned text
    holds a 0xff byte, which no UTF-8 text holds, so it equals no other request's."""
    if context == "":
        return hashlib.sha1(b"empty-context-v%d\xff" % EMPTY_CONTEXT_VERSION
                            + continuation.encode("utf-8")).hexdigest()
    return hashlib.sha1(f"{context}\x1f{continuation}".encode("utf-8")).hexdigest()


def model_fingerprint(model_dir: str | Path) -> str:
    """Hash identifying a model: its config, tokenizer and the names/sizes of its weight files."""
    p = Path(str(model_dir))
    h = hashlib.sha256()
    if not p.is_dir():
        h.update(str(model_dir).encode())
        return h.hexdigest()
    for name in sorted(os.listdir(p)):
        f = p / name
        if not f.is_file():
            continue
        if name.endswith((".json", ".txt", ".model")):
            h.update(name.encode() + b"\0" + f.read_bytes())
        else:
            h.update(f"{name}\0{f.stat().st_size}".encode())
    return h.hexdigest()


def logprob_problem(value) -> str | None:
    """Why ``value`` is not a log-probability (None when it is one): a real number (not a
    string, not a bool), finite, <= :data:`LOGPROB_TOLERANCE`."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"not a number ({type(value).__name__})"
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "infinite"
    if value > LOGPROB_TOLERANCE:
        return f"positive (more than {LOGPROB_TOLERANCE:g} above 0)"
    return None


def score_problem(logprob, n_tokens) -> str | None:
    """Why (logprob, n_tokens) is not a valid score (None when it is one)."""
    if logprob is None:
        return "the log-prob is NULL"
    why = logprob_problem(logprob)
    if why is not None:
        return f"the log-prob is {why}"
    if isinstance(n_tokens, bool) or not isinstance(n_tokens, int) or n_tokens < 1:
        return "the token count is not an integer >= 1"
    return None


def score_checksum(model: str, key: str, req: str, logprob: float, n_tokens: int) -> str:
    """Checksum of one ``scores`` row: its key and its values (the float's exact bits)."""
    text = f"{model}\x1f{key}\x1f{req}\x1f{float(logprob).hex()}\x1f{int(n_tokens)}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def samples_checksum(model: str, req: str, texts_json: str) -> str:
    """Checksum of one ``samples`` row (the stored JSON text of the samples)."""
    return hashlib.sha256(f"{model}\x1f{req}\x1f{texts_json}".encode("utf-8")).hexdigest()[:32]


def migrate(con, path) -> None:
    """Add the checksum column to a file written before it existed: valid rows are checksummed
    (trusted this once), invalid ones dropped; one transaction."""
    def missing():
        return [t for t in ("scores", "samples")
                if "checksum" not in [r[1] for r in con.execute(f"PRAGMA table_info({t})")]]

    if not missing():
        return
    con.execute("BEGIN IMMEDIATE")
    try:
        todo = missing()
        kept = dropped = 0
        if "scores" in todo:
            con.execute("ALTER TABLE scores ADD COLUMN checksum TEXT")
            rows = con.execute("SELECT rowid, model, key, req, logprob, n_tokens FROM scores"
                               ).fetchall()
            for rowid, model, key, req, lp, n in rows:
                if score_problem(lp, n) is None:
                    con.execute("UPDATE scores SET checksum=? WHERE rowid=?",
                                (score_checksum(model, key, req, lp, n), rowid))
                    kept += 1
                else:
                    con.execute("DELETE FROM scores WHERE rowid=?", (rowid,))
                    dropped += 1
        if "samples" in todo:
            con.execute("ALTER TABLE samples ADD COLUMN checksum TEXT")
            rows = con.execute("SELECT rowid, model, req, texts FROM samples").fetchall()
            for rowid, model, req, texts in rows:
                if _texts_problem(texts) is None:
                    con.execute("UPDATE samples SET checksum=? WHERE rowid=?",
                                (samples_checksum(model, req, texts), rowid))
                    kept += 1
                else:
                    con.execute("DELETE FROM samples WHERE rowid=?", (rowid,))
                    dropped += 1
        con.commit()
    except BaseException:
        con.rollback()
        raise
    log.warning("LM cache %s was written before entries carried checksums: %d entries "
                "checksummed as they are (trusted once), %d invalid ones dropped",
                path, kept, dropped)


_SCORE_SQL = "SELECT logprob, n_tokens, checksum FROM scores WHERE model=? AND key=? AND req=?"
_SAMPLES_SQL = "SELECT texts, checksum FROM samples WHERE model=? AND req=?"


def _close(writer: Writer, readers: dict) -> None:
    writer.finish()
    for r in readers.values():
        if r is not None:
            r.close()
    readers.clear()


class ScoreCache:
    """Scores (and sampled texts) of one model key: written to this process's own file, read
    from every file of the model (:mod:`csbench.lm.cache_files`); safe to share between the
    threads of one process (a lock). See the module docstring for integrity."""

    def __init__(self, cache_dir: str | Path | CacheDir, model_key: str, refresh: bool = False):
        base = Path(cache_dir)
        self.root = base / f"lm-{model_key[:24]}"
        self.root.mkdir(parents=True, exist_ok=True)
        self.model_key = model_key
        self.refresh = bool(refresh)
        self.rejected = 0        # rows read back that failed their checksum or held invalid values
        self.moved_aside: list[Path] = []   # damaged files moved aside by this cache
        self.skipped: dict[Path, str] = {}  # other writers' files not read, and why
        self._lock = threading.Lock()
        adopt_legacy(base, self.root, model_key, migrate)
        self.writer = Writer(self.root, getattr(cache_dir, "job", None))
        # writer id -> Reader of another writer's file (None: skipped), newest first once sorted
        self._readers: dict[str, Reader | None] = {}
        self._finalizer = weakref.finalize(self, _close, self.writer, self._readers)
        if self.refresh:
            log.warning("LM cache %s: lm.refresh_cache is set: no entry is read; every request "
                        "is recomputed and stored anew", self.root)

    @property
    def path(self) -> Path:
        """The file this process writes (created with the first entry)."""
        return self.writer.path

    def close(self) -> None:
        """Finish this process's file (also done when the cache is collected or at exit)."""
        self._finalizer()

    # ------------------------------------------------------------------ reading
    def _scan(self) -> list[Reader]:
        """The other writers' files, newest first (new ones opened; each once per job)."""
        try:
            names = os.listdir(self.root)
        except FileNotFoundError:
            names = []
        for name in names:
            wid = file_id(name)
            if wid is None or wid == self.writer.id or wid in self._readers:
                continue
            try:
                self._readers[wid] = Reader(self.root / name)
            except sqlite3.OperationalError:
                pass  # renamed (finished) or moved meanwhile: found under its new name later
        return [self._readers[w] for w in sorted(self._readers, reverse=True)
                if self._readers[w] is not None]

    def _drop(self, reader: Reader, exc: sqlite3.DatabaseError) -> None:
        """Stop reading a file that failed: a finished one that is damaged is moved aside; an
        unfinished one (its writer may be writing it, on another host) is only skipped."""
        self._readers[file_id(reader.path.name)] = None
        reader.close()
        if reader.finished and is_corrupt(exc):
            dest = move_aside(reader.path, exc)
            if dest is not None:
                self.moved_aside.append(dest)
            return
        self.skipped[reader.path] = f"sqlite3.{type(exc).__name__}: {exc}"
        log.warning("LM cache %s: not read by this job (sqlite3.%s: %s); its entries are "
                    "recomputed where needed, the file is left as it is", reader.path,
                    type(exc).__name__, exc)

    def _own(self, fn):
        """``fn(connection)`` on this process's file; a damaged file is moved aside and ``fn``
        run once more on a fresh one."""
        try:
            return fn(self.writer.connect())
        except sqlite3.DatabaseError as exc:
            if not is_corrupt(exc):
                raise
            dest = move_aside(self.writer.path, exc)
            if dest is not None:
                self.moved_aside.append(dest)
            self.writer.restart()
            return fn(self.writer.connect())

    def _lookup(self, table: str, items: list, args) -> dict:
        """The newest row of each item of ``table`` (``args(item)``: the query's arguments)
        over this process's file, then the others newest first (a finished file is asked only
        for the items its index holds)."""
        sql = _SCORE_SQL if table == "scores" else _SAMPLES_SQL
        found: dict = {}
        todo = list(dict.fromkeys(items))

        def ask(con_query, index=None):
            nonlocal todo
            left = []
            for it in todo:
                rows = con_query(sql, args(it)) if index is None or hash(it) in index else None
                if rows:
                    found[it] = rows[0]
                else:
                    left.append(it)
            todo = left

        if self.writer.con is not None:
            self._own(lambda con: ask(lambda q, a: con.execute(q, a).fetchall()))
        for reader in self._scan():
            if not todo:
                break
            try:
                ask(reader.query, reader.index(table, self.model_key, len(todo)))
            except sqlite3.DatabaseError as exc:
                self._drop(reader, exc)
                todo = [it for it in todo if it not in found]  # what it answered before failing
        return found

    def _reject(self, what: list[tuple[str, str]]) -> None:
        if not what:
            return
        self.rejected += len(what)
        reasons: dict[str, int] = {}
        for _, why in what:
            reasons[why] = reasons.get(why, 0) + 1
        log.warning("LM cache %s: %d entries not used (%s; e.g. %s): recomputed and stored anew",
                    self.root, len(what), ", ".join(f"{k}: {v}" for k, v in reasons.items()),
                    what[0][0])

    # ------------------------------------------------------------------ scores
    def get(self, pairs: list[tuple[str, str]]) -> dict[tuple[str, str], tuple[float, int]]:
        """The valid cached scores of (key, request hash) pairs (nothing with ``refresh``): the
        newest entry of each pair decides."""
        if self.refresh:
            return {}
        with self._lock:
            rows = self._lookup("scores", pairs, lambda p: (self.model_key, *p))
        out, bad = {}, []
        for (key, req), (lp, n, checksum) in rows.items():
            why = score_problem(lp, n)
            if why is None and checksum != score_checksum(self.model_key, key, req, lp, n):
                why = "checksum mismatch" if checksum else "no checksum"
            if why is not None:
                bad.append((f"key {key!r}", why))
                continue
            out[(key, req)] = (min(float(lp), 0.0), int(n))
        self._reject(bad)
        return out

    def put(self, items: list[tuple[str, str, float, int]]) -> None:
        """Store (key, request hash, log-prob, token count) rows; refuses (ValueError, nothing
        written) a value that is not a finite log-probability or a count >= 1."""
        rows = []
        for key, req, lp, n in items:
            why = score_problem(lp, n)
            if why is not None:
                raise ValueError(f"LM cache {self.path}: refusing to store key {key!r} "
                                 f"(log-prob {lp!r}, {n!r} tokens): {why}")
            lp = min(float(lp), 0.0)
            rows.append((self.model_key, key, req, lp, int(n),
                         score_checksum(self.model_key, key, req, lp, n)))

        def write(con):
            with con:
                con.executemany("INSERT OR REPLACE INTO scores (model, key, req, logprob, "
                                "n_tokens, checksum) VALUES (?,?,?,?,?,?)", rows)

        with self._lock:
            self._own(write)

    # ------------------------------------------------------------------ samples
    def get_samples(self, req: str, with_cut: bool = False):
        """The stored texts of request ``req`` (None: a miss); ``with_cut``: ``(texts, cut)``,
        ``cut`` None for a row stored without the flags."""
        if self.refresh:
            return None
        with self._lock:
            row = self._lookup("samples", [req], lambda r: (self.model_key, r)).get(req)
        if row is None:
            return None
        texts, checksum = row
        why = _texts_problem(texts)
        if why is None and checksum != samples_checksum(self.model_key, req, texts):
            why = "checksum mismatch" if checksum else "no checksum"
        if why is not None:
            self._reject([(f"samples {req[:12]}", why)])
            return None
        got = json.loads(texts)
        texts, cut = (got["texts"], got["cut"]) if isinstance(got, dict) else (got, None)
        return (list(texts), cut) if with_cut else list(texts)

    def put_samples(self, req: str, texts: list[str], cut: list[bool] | None = None) -> None:
        """Store the texts of request ``req`` (with ``cut``: per text, whether
        ``max_new_tokens`` ended it)."""
        blob = json.dumps(list(texts) if cut is None else {"texts": list(texts),
                                                           "cut": [bool(c) for c in cut]})
        why = _texts_problem(blob)
        if why is not None:
            raise ValueError(f"LM cache {self.path}: refusing to store samples {req[:12]}: {why}")
        checksum = samples_checksum(self.model_key, req, blob)

        def write(con):
            with con:
                con.execute("INSERT OR REPLACE INTO samples (model, req, texts, checksum) "
                            "VALUES (?,?,?,?)", (self.model_key, req, blob, checksum))

        with self._lock:
            self._own(write)


def _texts_problem(texts) -> str | None:
    if not isinstance(texts, str):
        return "NULL texts" if texts is None else "texts not a JSON string"
    try:
        got = json.loads(texts)
    except ValueError:
        return "texts not valid JSON"
    if isinstance(got, dict):                  # texts with their cut flags
        if set(got) != {"texts", "cut"} or not isinstance(got["cut"], list) \
                or not all(isinstance(c, bool) for c in got["cut"]) \
                or not isinstance(got["texts"], list) or len(got["cut"]) != len(got["texts"]):
            return "texts with malformed cut flags"
        got = got["texts"]
    if not isinstance(got, list) or not all(isinstance(t, str) for t in got):
        return "texts not a list of strings"
    return None
