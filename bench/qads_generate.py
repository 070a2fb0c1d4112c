"""Generate QADS over SQuAD 2.0 dev (all 11,873 questions by default) and report wall time,
candidate counts, questions per mode and 50 seeded random substitutions.

    .venv/bin/python bench/qads_generate.py /work/shared/mirror/squad_v2/dev-v2.0.json.gz \
        results/cache/embeddings OUTDIR [method] [limit]
"""
import json
import sys
import time
from pathlib import Path

from csbench.data.squad_v2 import read_squad
from csbench.embed import Embedder
from csbench.qads import wsd
from csbench.qads.generate import generate

src, cache, outdir = sys.argv[1], sys.argv[2], Path(sys.argv[3])
method = sys.argv[4] if len(sys.argv) > 4 else "enhanced_lesk"
questions = read_squad(src)
if len(sys.argv) > 5:
    questions = questions.sample(n=int(sys.argv[5]), random_state=0).reset_index(drop=True)
outdir.mkdir(parents=True, exist_ok=True)
t0 = time.time()
d = wsd.Disambiguator(method, Embedder("sentence-transformers/all-MiniLM-L6-v2", cache_dir=cache)
                      if method == "enhanced_lesk" else None)
subs, out = generate(questions, d)
wall = time.time() - t0
subs.to_parquet(outdir / f"substitutions.{method}.parquet", index=False)
stats = {"method": method, "questions": len(questions), "wall_s": round(wall, 1),
         "candidates": len(subs), "with_synonym": int(subs["synonym"].notna().sum()),
         "questions_with_candidate": int(subs["id"].nunique()),
         "generated": {m: len(df) for m, df in out.items()}}
print(json.dumps(stats), flush=True)
sample = subs.dropna(subset=["synonym"]).sample(n=50, random_state=0)
q = dict(zip(questions["id"], questions["question"]))
with open(outdir / f"sample50.{method}.tsv", "w") as fh:
    for r in sample.itertuples():
        fh.write(f"{r.id}\t{r.token}\t{r.synset}\t{r.synonym}\t{q[r.id]}\n")
json.dump(stats, open(outdir / f"stats.{method}.json", "w"))
