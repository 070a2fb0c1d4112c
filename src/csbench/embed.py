"""Sentence embeddings with a persistent per-(encoder, text) cache.

All tasks embed through :class:`Embedder`, so an audit, a ProtoQA matcher and a WSD run that meet
the same text under the same encoder compute its vector once. The cache is one SQLite file per
encoder under ``cache_dir`` (default ``results/cache/embeddings``); vectors are stored
L2-normalised as float32, so an inner product is a cosine.
"""
from __future__ import annotations

import hashlib
import logging
import os
import re
import sqlite3
from pathlib import Path

import numpy as np

from .embed_plain import PlainEncoder, plain_stack
from .models.offline import resolve
from .provenance import provenance

log = logging.getLogger(__name__)

# The fewest tokens (texts x token length) encoded in one batch (Embedder._encode_run)
MIN_TOKENS = 64
# How vectors are computed, in the cache files' names (cache_file); 2: small batches filled up
VECTORS = 2


def embed_cache_dir(config: dict) -> str:
    """The embedding cache directory under the config's ``cache_dir`` (where the workflow's jobs
    share vectors; a cache location cannot change a vector, so it is no rule's param)."""
    return os.path.join(config["cache_dir"], "embeddings")


def text_key(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def encoder_key(spec: str) -> str:
    """A file-system safe name for an encoder spec. A directory materialised by csbench is named
    by its provenance (spec and weights hash), so a changed ``models.embedder`` never reuses the
    vectors of the previous encoder."""
    p = Path(str(spec)) / "provenance.json"
    if p.exists():
        prov = provenance(p.parent)
        spec = f"{prov['spec'].get('label', spec)}-{(prov.get('file_sha256') or '')[:12]}"
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", str(spec)).strip("_")
    return name[-80:] or "encoder"


def cache_file(cache_dir: str | Path, spec: str) -> Path:
    """The cache file of an encoder. Its name carries ``VECTORS``, the version of how vectors are
    computed: a change there (say, how texts are batched) starts new files, so no run mixes
    vectors of both ways."""
    return Path(cache_dir) / f"{encoder_key(spec)}.v{VECTORS}.sqlite"


class EmbeddingCache:
    """SQLite store of ``sha1(text) -> float32 vector`` for one encoder."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.con = sqlite3.connect(str(self.path), timeout=600)
        self.con.execute("PRAGMA journal_mode=WAL")
        self.con.execute("CREATE TABLE IF NOT EXISTS emb (k TEXT PRIMARY KEY, v BLOB)")

    def get(self, keys: list[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for i in range(0, len(keys), 900):
            chunk = keys[i:i + 900]
            q = "SELECT k, v FROM emb WHERE k IN (%s)" % ",".join("?" * len(chunk))
            for k, v in self.con.execute(q, chunk):
                out[k] = np.frombuffer(v, dtype=np.float32)
        return out

    def put(self, keys: list[str], vecs: np.ndarray) -> None:
        rows = [(k, np.ascontiguousarray(v, dtype=np.float32).tobytes()) for k, v in zip(keys, vecs)]
        with self.con:
            self.con.executemany("INSERT OR REPLACE INTO emb VALUES (?, ?)", rows)

    def __len__(self) -> int:
        return self.con.execute("SELECT COUNT(*) FROM emb").fetchone()[0]


class Embedder:
    """Encode texts with a sentence-transformers model, reusing cached vectors.

    ``spec`` is an HF id, a local directory, or the MiniLM id (resolved to the PyPI package).
    ``cache_dir=None`` disables the cache.
    """

    def __init__(self, spec: str, cache_dir: str | Path | None = None, device: str | None = None,
                 batch_size: int = 128):
        self.spec = spec
        self.batch_size = batch_size
        self.device = device
        self._model = None
        self.cache = EmbeddingCache(cache_file(cache_dir, spec)) if cache_dir else None
        self.n_encoded = 0

    @property
    def model(self):
        """The encoder: a :class:`~csbench.embed_plain.PlainEncoder` for a local directory holding
        the standard Transformer -> Pooling -> Normalize stack (same vectors, bit for bit, without
        importing sentence-transformers), else a ``SentenceTransformer``."""
        if self._model is None:
            path = resolve(self.spec)
            stack = plain_stack(path)
            if stack is not None:
                self._model = PlainEncoder(path, stack, device=self.device)
            else:
                from sentence_transformers import SentenceTransformer

                self._model = SentenceTransformer(path, device=self.device)
        return self._model

    @property
    def dim(self) -> int:
        m = self.model
        get = getattr(m, "get_embedding_dimension", None) or m.get_sentence_embedding_dimension
        return int(get())

    def _token_lengths(self, texts: list[str]) -> list[int]:
        """Tokens per text as the model will see it (special tokens, truncation at its maximum)."""
        m = self.model
        limit = getattr(m, "max_seq_length", None)
        enc = m.tokenizer(texts, add_special_tokens=True, truncation=limit is not None,
                          max_length=limit)
        return [len(ids) for ids in enc["input_ids"]]

    def _encode(self, texts: list[str], batch_size: int | None = None) -> np.ndarray:
        vecs = self.model.encode(texts, batch_size=batch_size or self.batch_size,
                                 convert_to_numpy=True, normalize_embeddings=True,
                                 show_progress_bar=False)
        return vecs.astype(np.float32, copy=False)

    def _encode_run(self, texts: list[str], length: int) -> np.ndarray:
        """Texts of one token length, ``batch_size`` at a time; a batch of fewer than
        ``MIN_TOKENS`` tokens in all is filled up with copies of its first text (their vectors
        dropped). The CPU's matrix products take another code path for a handful of rows, which
        moved a vector in its last bit (seen with MiniLM: a 5-token text alone, in a pair or
        with more mates gave three different vectors), so a short text's vector depended on how
        many texts of its length were missing from the cache at that moment."""
        least = -(-MIN_TOKENS // max(length, 1))   # texts of this length in a batch, at least
        out = []
        for start in range(0, len(texts), self.batch_size):
            batch = texts[start:start + self.batch_size]
            n = len(batch)
            batch += batch[:1] * (least - n)
            out.append(self._encode(batch, batch_size=len(batch))[:n])
        self.n_encoded += len(texts)
        return np.concatenate(out)

    def encode(self, texts) -> np.ndarray:
        """Return an ``(n, d)`` float32 array of L2-normalised embeddings, in input order."""
        texts = [str(t) for t in texts]
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        uniq = list(dict.fromkeys(texts))
        keys = [text_key(t) for t in uniq]
        found = self.cache.get(keys) if self.cache is not None else {}
        missing = [i for i, k in enumerate(keys) if k not in found]
        if missing:
            log.info("encoding %d new texts (%d cached)", len(missing), len(uniq) - len(missing))
            # Texts are encoded in batches of one token length, so no text is ever padded: padding
            # moves a vector by ~1e-7, which made a text's vector depend on its batch mates, and
            # so on which job filled the shared cache first. Batches are filled up to MIN_TOKENS
            # (_encode_run). A vector is thus a function of its text alone (cold or warm cache,
            # any caller order, any job order).
            lengths = self._token_lengths([uniq[i] for i in missing])
            order = sorted(range(len(missing)), key=lambda j: (lengths[j], uniq[missing[j]]))
            for start in range(0, len(order), 8192):
                part = [missing[j] for j in order[start:start + 8192]]
                plen = [lengths[j] for j in order[start:start + 8192]]
                vecs = np.concatenate([self._encode_run([uniq[i] for i in part[a:b]], plen[a])
                                       for a, b in _runs(plen)])
                for i, v in zip(part, vecs):
                    found[keys[i]] = v
                if self.cache is not None:
                    self.cache.put([keys[i] for i in part], vecs)
        index = {t: found[k] for t, k in zip(uniq, keys)}
        return np.stack([index[t] for t in texts])


def _runs(values: list[int]) -> list[tuple[int, int]]:
    """``[(start, end), ...]`` of the runs of equal consecutive values."""
    out, start = [], 0
    for i in range(1, len(values) + 1):
        if i == len(values) or values[i] != values[start]:
            out.append((start, i))
            start = i
    return out
