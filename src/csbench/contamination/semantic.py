"""Semantic scan: corpus sentences embedded and searched against benchmark probes with FAISS.

Catches paraphrases that string matching misses, at the price of running a sentence encoder over
the corpus: meant for a sample of a corpus (``max_docs``) on CPU, or for whole shards on GPU
nodes. Per full probe it keeps the most similar corpus sentence (cosine of L2-normalised
embeddings, an inner product); the gather step flags an item when that cosine reaches the
threshold.
"""
from __future__ import annotations

import logging
import re

import numpy as np
import pandas as pd

from .gather import SHARD_COLUMNS
from .scan import EVIDENCE_CHARS

log = logging.getLogger(__name__)
_SENT = re.compile(r"[^.!?\n]+(?:[.!?]+|\n|$)")


def sentences(text: str, min_words: int = 5, max_chars: int = 1000):
    """(char offset, sentence) pairs of a document: split at . ! ? and line breaks."""
    for m in _SENT.finditer(text):
        s = m.group().strip()
        if len(s.split()) >= min_words and len(s) <= max_chars:
            yield m.start() + (len(m.group()) - len(m.group().lstrip())), s


def semantic_scan(probes: pd.DataFrame, documents, embedder, max_docs: int = 0,
                  batch_sentences: int = 4096, min_words: int = 5) -> pd.DataFrame:
    """Best-matching corpus sentence per full probe (rows in the shard-table layout)."""
    import faiss

    full = probes[probes["kind"] == "full"].reset_index(drop=True)
    if len(full) == 0:
        return pd.DataFrame(columns=SHARD_COLUMNS)
    q = np.ascontiguousarray(embedder.encode(full["text"].astype(str).tolist()), dtype=np.float32)
    best = np.full(len(full), -np.inf, dtype=np.float32)
    ev: list[tuple | None] = [None] * len(full)
    buf: list[tuple[str, int, str]] = []

    def flush():
        if not buf:
            return
        v = np.ascontiguousarray(embedder.encode([s for _, _, s in buf]), dtype=np.float32)
        index = faiss.IndexFlatIP(v.shape[1])
        index.add(v)
        score, where = index.search(q, 1)
        better = score[:, 0] > best
        for i in np.flatnonzero(better):
            best[i] = score[i, 0]
            ev[i] = buf[int(where[i, 0])]
        buf.clear()

    for n, (doc_id, text) in enumerate(documents):
        if max_docs and n >= max_docs:
            break
        for off, s in sentences(text.decode("utf-8", errors="replace"), min_words):
            buf.append((doc_id, off, s))
        if len(buf) >= batch_sentences:
            flush()
    flush()
    rows = []
    for i, r in full.iterrows():
        if ev[i] is None:
            continue
        doc_id, off, s = ev[i]
        rows.append(dict(benchmark=r["benchmark"], item_id=str(r["item_id"]), probe=r["probe"],
                         method="semantic", positions=[], n_positions=1, span=len(s.split()),
                         count=1, score=float(best[i]), doc_id=doc_id, offset=off,
                         text=s[:EVIDENCE_CHARS]))
    return pd.DataFrame(rows, columns=SHARD_COLUMNS)
