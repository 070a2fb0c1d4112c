"""WordNet path similarity between short texts (topics), best training match per test text.

Each text maps to its first noun synset (most frequent sense; else its first synset of any POS),
looked up with spaces as underscores. Path similarity is ``1 / (1 + d)`` with ``d`` the shortest
path through a common hypernym (NLTK's definition). The best match of every test text is found in
time linear in the number of texts: for each hypernym ``c`` the training text closest to ``c``
is precomputed, and ``d(t) = min_c d(t, c) + d(c, train)``.
"""
from __future__ import annotations

import numpy as np

from ..wordnet import synsets


def first_synset(text: str):
    key = str(text).strip().lower().replace(" ", "_")
    nouns = synsets(key, pos="n")
    if nouns:
        return nouns[0]
    anys = synsets(key)
    return anys[0] if anys else None


def _dists(syn) -> dict:
    # distance to every hypernym (inclusive); NLTK's own helper used by path_similarity
    return syn._shortest_hypernym_paths(simulate_root=syn.pos() == "v")


def wordnet_top1(test_texts, train_texts):
    """Return (similarity, train index) per test text; -1 / 0.0 where a text has no synset."""
    best_via: dict = {}
    for j, t in enumerate(train_texts):
        s = first_synset(t)
        if s is None:
            continue
        for c, d in _dists(s).items():
            if c not in best_via or d < best_via[c][0]:
                best_via[c] = (d, j)
    sims = np.zeros(len(test_texts), np.float32)
    arg = np.full(len(test_texts), -1, np.int64)
    cache: dict = {}
    for i, t in enumerate(test_texts):
        if t not in cache:
            s = first_synset(t)
            best = (None, -1)
            if s is not None:
                for c, d in _dists(s).items():
                    hit = best_via.get(c)
                    if hit is not None and (best[0] is None or d + hit[0] < best[0]):
                        best = (d + hit[0], hit[1])
            cache[t] = best
        d, j = cache[t]
        if d is not None:
            sims[i], arg[i] = 1.0 / (1.0 + d), j
    return sims, arg
