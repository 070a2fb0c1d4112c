"""Re-run only the synonym choice of a QADS generation under other policies (no spaCy, no WSD):
reads a ``substitutions.*.parquet`` of bench/qads_generate.py (its synsets, lemmas, tokens, tags)
and reports, per policy ``<order>:<min_zipf>``, substitutions (mode one), questions with one
(mode all), the share of synonyms below Zipf 3 / 2.5 against the replaced words, and 50 seeded
random substitutions (``sample(50, random_state=0)`` of the rows with a synonym).

    .venv/bin/python bench/qads_rechoose.py SUBS.parquet DEV.json.gz OUTDIR zipf:3.0 wordnet:3.0 ...
"""
import json
import sys
from pathlib import Path

import pandas as pd

from csbench.data.squad_v2 import read_squad
from csbench.qads.generate import choose, zipf
from csbench.wordnet import wordnet

subs = pd.read_parquet(sys.argv[1])
q = dict(zip(*read_squad(sys.argv[2])[["id", "question"]].T.values))
outdir = Path(sys.argv[3])
outdir.mkdir(parents=True, exist_ok=True)
wn = wordnet()
for policy in sys.argv[4:]:
    order, mz = policy.split(":")
    min_zipf = None if mz == "none" else float(mz)
    got = [choose(wn.synset(r.synset), r.lemma, r.token, r.tag, order, min_zipf)[:2]
           if r.synset is not None else (None, None) for r in subs.itertuples()]
    df = subs.assign(synonym=[g[0] for g in got], synonym_zipf=[g[1] for g in got],
                     token_zipf=[zipf(t.lower()) for t in subs["token"]])
    chosen = df.dropna(subset=["synonym"])
    stats = {"policy": policy, "candidates": len(df), "mode_one": len(chosen),
             "mode_all": int(chosen["id"].nunique()),
             "synonym_zipf_below_3": round(float((chosen["synonym_zipf"] < 3).mean()), 4),
             "synonym_zipf_below_2.5": round(float((chosen["synonym_zipf"] < 2.5).mean()), 4),
             "replaced_zipf_below_3": round(float((chosen["token_zipf"] < 3).mean()), 4),
             "replaced_zipf_below_2.5": round(float((chosen["token_zipf"] < 2.5).mean()), 4)}
    print(json.dumps(stats), flush=True)
    tag = f"{order}-{mz}"
    json.dump(stats, open(outdir / f"rechoose.{tag}.json", "w"))
    with open(outdir / f"sample50.rechoose.{tag}.tsv", "w") as fh:
        for r in chosen.sample(n=min(50, len(chosen)), random_state=0).itertuples():
            fh.write(f"{r.id}\t{r.token}\t{r.synonym}\t{r.synset}\t{r.synonym_zipf:.2f}\t{q[r.id]}\n")
