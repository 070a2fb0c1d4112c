"""The LM cache shared by every backend: one SQLite file per model key under ``cache_dir``.

``scores``: summed log-probability and token count per (model key, caller key, request hash);
``samples``: the sampled texts per (model key, request hash) of a generation request. The model
key says which model answered: the local weights' fingerprint and dtype
(:func:`model_fingerprint`), or a served endpoint and model name (:mod:`csbench.lm.served`). Rows
are written as results arrive, so an interrupted run resumes where it stopped and a rerun sends
or computes nothing twice.
"""
from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from pathlib import Path


def request_fingerprint(context: str, continuation: str) -> str:
    """Stable hash of one request's text (part of the cache key)."""
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


class ScoreCache:
    """SQLite cache of scores (and sampled texts) for one model key; safe to share between the
    threads of one process (one connection, a lock)."""

    def __init__(self, cache_dir: str | Path, model_key: str):
        Path(cache_dir).mkdir(parents=True, exist_ok=True)
        self.path = Path(cache_dir) / f"lm-{model_key[:24]}.sqlite"
        self.model_key = model_key
        self._lock = threading.Lock()
        self.con = sqlite3.connect(str(self.path), timeout=120, check_same_thread=False)
        self.con.execute("PRAGMA journal_mode=WAL")
        self.con.execute("CREATE TABLE IF NOT EXISTS scores (model TEXT, key TEXT, req TEXT, "
                         "logprob REAL, n_tokens INTEGER, PRIMARY KEY (model, key, req))")
        self.con.execute("CREATE TABLE IF NOT EXISTS samples (model TEXT, req TEXT, texts TEXT, "
                         "PRIMARY KEY (model, req))")
        self.con.commit()

    def get(self, pairs: list[tuple[str, str]]) -> dict[tuple[str, str], tuple[float, int]]:
        out = {}
        with self._lock:
            for key, req in pairs:
                row = self.con.execute("SELECT logprob, n_tokens FROM scores WHERE model=? AND "
                                       "key=? AND req=?", (self.model_key, key, req)).fetchone()
                if row is not None:
                    out[(key, req)] = (float(row[0]), int(row[1]))
        return out

    def put(self, items: list[tuple[str, str, float, int]]) -> None:
        with self._lock, self.con:
            self.con.executemany("INSERT OR REPLACE INTO scores VALUES (?,?,?,?,?)",
                                 [(self.model_key, k, r, lp, n) for k, r, lp, n in items])

    def get_samples(self, req: str) -> list[str] | None:
        with self._lock:
            row = self.con.execute("SELECT texts FROM samples WHERE model=? AND req=?",
                                   (self.model_key, req)).fetchone()
        return None if row is None else list(json.loads(row[0]))

    def put_samples(self, req: str, texts: list[str]) -> None:
        with self._lock, self.con:
            self.con.execute("INSERT OR REPLACE INTO samples VALUES (?,?,?)",
                             (self.model_key, req, json.dumps(list(texts))))
