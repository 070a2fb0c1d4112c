"""Lexical overlap: exact and normalised duplicates, character-trigram and BM25 best matches.

Best matches are exact: the test-by-train score matrix is computed as sparse products, ``block``
test rows at a time, keeping only each test row's best training item.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..text import fold, stem, stop_words, words


def duplicates(test_ids, test_texts, train_ids, train_texts) -> pd.DataFrame:
    """All (test, train) pairs with identical texts (``exact``) or identical folded texts
    (lower-case, punctuation and whitespace folded) that are not exact (``normalised``)."""
    exact: dict[str, list] = {}
    folded: dict[str, list] = {}
    for i, t in zip(train_ids, train_texts):
        exact.setdefault(t, []).append(i)
        folded.setdefault(fold(t), []).append((i, t))
    rows = []
    for tid, t in zip(test_ids, test_texts):
        for j in exact.get(t, ()):
            rows.append((tid, j, "exact"))
        for j, jt in folded.get(fold(t), ()):
            if jt != t:
                rows.append((tid, j, "normalised"))
    return pd.DataFrame(rows, columns=["test_id", "train_id", "kind"])


def _best_per_row(q: sp.csr_matrix, base_t: sp.csc_matrix, block: int):
    n = q.shape[0]
    best = np.zeros(n, np.float32)
    arg = np.full(n, -1, np.int64)
    for start in range(0, n, block):
        s = (q[start:start + block] @ base_t).tocsr()
        if s.nnz == 0:
            continue
        m = s.max(axis=1).toarray().ravel()
        a = np.asarray(s.argmax(axis=1)).ravel()
        has = m > 0
        idx = np.arange(start, start + s.shape[0])[has]
        best[idx] = m[has]
        arg[idx] = a[has]
    return best, arg


def trigram_top1(test_texts, train_texts, block: int = 2000, max_df: float = 1.0):
    """Cosine of character-trigram TF-IDF vectors (within word boundaries, on folded text)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    vec = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 3), preprocessor=fold,
                          max_df=max_df, dtype=np.float32)
    vec.fit(list(train_texts) + list(test_texts))
    base = vec.transform(train_texts).T.tocsc()
    return _best_per_row(vec.transform(test_texts).tocsr(), base, block)


def bm25_terms(text: str) -> list[str]:
    sw = stop_words()
    return [stem(w) for w in words(text) if w not in sw]


def bm25_top1(test_texts, train_texts, k1: float = 1.5, b: float = 0.75, block: int = 2000):
    """Okapi BM25 of each test text (as the query) against the training texts (as documents)."""
    vocab: dict[str, int] = {}
    rows, cols, vals = [], [], []
    lengths = []
    for r, t in enumerate(train_texts):
        terms = bm25_terms(t)
        lengths.append(len(terms))
        counts: dict[int, int] = {}
        for w in terms:
            c = vocab.setdefault(w, len(vocab))
            counts[c] = counts.get(c, 0) + 1
        for c, v in counts.items():
            rows.append(r); cols.append(c); vals.append(v)
    n_docs = len(lengths)
    tf = sp.csr_matrix((np.asarray(vals, np.float32), (rows, cols)), shape=(n_docs, max(len(vocab), 1)))
    dl = np.asarray(lengths, np.float32)
    avgdl = float(dl.mean()) if n_docs and dl.mean() > 0 else 1.0
    df = np.bincount(tf.indices, minlength=tf.shape[1]).astype(np.float32)
    idf = np.log(1.0 + (n_docs - df + 0.5) / (df + 0.5)).astype(np.float32)
    tf = tf.tocoo()
    denom = tf.data + k1 * (1 - b + b * dl[tf.row] / avgdl)
    w = sp.csr_matrix((idf[tf.col] * tf.data * (k1 + 1) / denom, (tf.row, tf.col)), shape=tf.shape)
    qr, qc = [], []
    for r, t in enumerate(test_texts):
        for w_ in set(bm25_terms(t)):
            if w_ in vocab:
                qr.append(r); qc.append(vocab[w_])
    q = sp.csr_matrix((np.ones(len(qr), np.float32), (qr, qc)), shape=(len(test_texts), tf.shape[1]))
    return _best_per_row(q, w.T.tocsc(), block)
