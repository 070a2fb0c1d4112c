"""Generic train/test overlap audits.

* :mod:`csbench.nearest` (shared with 20Q's split) — nearest training item per test item under
  an encoder (FAISS exact inner product streamed in blocks, or an approximate IVF index for
  millions of items);
* :mod:`.lexical` — exact/normalised duplicates, character-trigram and BM25 best matches;
* :mod:`.wordnet_sim` — WordNet path similarity between short texts (topics);
* :mod:`.engine` — one audit end to end (tables in, the ``results/audit/<name>/`` files out);
* :mod:`.report` — the top-1 similarity figure (the summary table renders in 20Q's section).
"""
