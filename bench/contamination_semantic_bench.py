"""Semantic scan throughput on CPU: corpus sentences embedded (MiniLM) and searched with FAISS.

    .venv/bin/python bench/contamination_semantic_bench.py --corpus /tmp/c7_corpus/corpus-000.jsonl --docs 20

Prints documents, MB of text, sentences encoded and the rates; compare with the lexical scan's
MB/s (bench/contamination_bench.py) to see why the semantic method is for samples or GPU nodes.
"""
import argparse
import json
import time
from pathlib import Path

from csbench.contamination import corpus as C
from csbench.contamination.items import extract
from csbench.contamination.semantic import semantic_scan
from csbench.data import winogrande as wgmod
from csbench.embed import Embedder

ap = argparse.ArgumentParser()
ap.add_argument("--corpus", default="/tmp/c7_corpus/corpus-000.jsonl")
ap.add_argument("--docs", type=int, default=20)
ap.add_argument("--skip", type=int, default=0, help="documents to skip first")
ap.add_argument("--winogrande", default="../shared/mirror/winogrande/dev.jsonl")
a = ap.parse_args()
wg = wgmod.normalise("dev", {"dev.jsonl": Path(a.winogrande)})
probes = extract("winogrande_dev", wg)
import tempfile

# probe vectors are computed (and cached) before the clock starts: only corpus sentences count
emb = Embedder("sentence-transformers/all-MiniLM-L6-v2", cache_dir=tempfile.mkdtemp())
emb.encode(probes[probes.kind == "full"].text.astype(str).tolist())
docs = []
for i, d in enumerate(C.iter_documents((a.corpus, 0, -1), "jsonl", "text", "id")):
    if i < a.skip:
        continue
    docs.append(d)
    if len(docs) >= a.docs:
        break
mb = sum(len(t) for _, t in docs) / 1e6
n0 = emb.n_encoded
t = time.time()
hits = semantic_scan(probes, docs, emb)
dt = time.time() - t
sent = emb.n_encoded - n0
print(json.dumps({"documents": len(docs), "text_MB": round(mb, 2), "sentences": sent,
                  "seconds": round(dt, 1), "sentences_per_s": round(sent / dt, 1),
                  "MB_per_s": round(mb / dt, 3), "best_cosine_max": float(hits.score.max())}))
