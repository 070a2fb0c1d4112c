"""Measure WSD F1 of every method on the unified framework in the mirror (ALL + five data sets).

    .venv/bin/python bench/qads_wsd_eval.py ../shared/mirror/wsd_eval results/cache/embeddings out.tsv
"""
import sys
import time
from pathlib import Path

from csbench.data import wsd_eval as W
from csbench.embed import Embedder
from csbench.qads import wsd, wsd_eval

root, cache, out = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
tables = {n: W.normalise(n, {f: root / f for f in W.files_of(n)}) for n in W.DATASETS}
emb = Embedder("sentence-transformers/all-MiniLM-L6-v2", cache_dir=cache)
rows = []
for m in wsd.METHODS:
    t = time.time()
    res = wsd_eval.evaluate(tables, {m: wsd.Disambiguator(m, emb)})
    res["seconds"] = round(time.time() - t, 1)
    rows.append(res)
    print(res.to_string(index=False), flush=True)
import pandas as pd  # noqa: E402

pd.concat(rows).to_csv(out, sep="\t", index=False, float_format="%.4f")
