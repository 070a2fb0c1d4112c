"""Nearest-neighbour search of test vectors against training vectors (inner product).

Vectors are L2-normalised float32, so inner product = cosine. The exact search builds a FAISS
``IndexFlatIP`` over the training vectors and streams the queries in blocks, so memory stays
at one block of scores; ``method="ivf"`` builds an ``IndexIVFFlat`` (approximate) for millions
of items.
"""
from __future__ import annotations

import logging
import math

import numpy as np

log = logging.getLogger(__name__)


def _as_f32(x) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(x, dtype=np.float32))


def build_index(base: np.ndarray, method: str = "exact", nlist: int | None = None,
                nprobe: int = 16, threads: int | None = None):
    import faiss

    if threads:
        faiss.omp_set_num_threads(int(threads))
    base = _as_f32(base)
    d = base.shape[1]
    if method == "exact":
        index = faiss.IndexFlatIP(d)
    elif method == "ivf":
        nlist = nlist or max(1, int(4 * math.sqrt(len(base))))
        nlist = min(nlist, max(1, len(base) // 39))
        quant = faiss.IndexFlatIP(d)
        index = faiss.IndexIVFFlat(quant, d, nlist, faiss.METRIC_INNER_PRODUCT)
        index.train(base)
        index.nprobe = min(nprobe, nlist)
    else:
        raise ValueError(f"unknown search method {method!r} (exact or ivf)")
    index.add(base)
    return index


def search(queries: np.ndarray, base: np.ndarray, k: int = 1, method: str = "exact",
           block: int = 16384, threads: int | None = None, **index_kw) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(scores, ids)`` of shape ``(n_queries, k)``: the ``k`` best training items.

    Queries are searched ``block`` at a time. With an empty base, ids are -1 and scores -inf.
    """
    queries = _as_f32(queries)
    n = len(queries)
    if len(base) == 0 or n == 0:
        return np.full((n, k), -np.inf, np.float32), np.full((n, k), -1, np.int64)
    k_eff = min(k, len(base))
    index = build_index(base, method, threads=threads, **index_kw)
    scores = np.full((n, k), -np.inf, np.float32)
    ids = np.full((n, k), -1, np.int64)
    for start in range(0, n, block):
        s, i = index.search(queries[start:start + block], k_eff)
        scores[start:start + block, :k_eff] = s
        ids[start:start + block, :k_eff] = i
    log.info("searched %d queries against %d items (%s, k=%d)", n, len(base), method, k)
    return scores, ids


def top1(queries: np.ndarray, base: np.ndarray, **kw) -> tuple[np.ndarray, np.ndarray]:
    """Best score and index per query (1-D arrays)."""
    s, i = search(queries, base, k=1, **kw)
    return s[:, 0], i[:, 0]


def numpy_top1(queries: np.ndarray, base: np.ndarray, block: int = 4096):
    """Straightforward reference: blocked numpy all-pairs matrix product (for tests and benches)."""
    queries, base = _as_f32(queries), _as_f32(base)
    best = np.empty(len(queries), np.float32)
    arg = np.empty(len(queries), np.int64)
    for start in range(0, len(queries), block):
        sims = queries[start:start + block] @ base.T
        arg[start:start + block] = sims.argmax(1)
        best[start:start + block] = sims.max(1)
    return best, arg
