"""Generate QADS over SQuAD 2.0 dev (all 11,873 questions by default) and report wall time,
candidate counts, questions per mode, the share of rare synonyms (wordfreq Zipf < 3 / < 2.5, against
the replaced words) and 50 seeded random substitutions, for one or more synonym-choice policies
(WSD runs once; each policy is ``<order>:<min_zipf>``, e.g. ``wordnet:none`` = the earlier policy,
``wordnet:2.85`` = the default).

    .venv/bin/python bench/qads_generate.py ../shared/mirror/squad_v2/dev-v2.0.json.gz \
        results/cache/embeddings OUTDIR [method] [limit|all] [policy ...]
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
if len(sys.argv) > 5 and sys.argv[5] != "all":
    questions = questions.sample(n=int(sys.argv[5]), random_state=0).reset_index(drop=True)
policies = sys.argv[6:] or ["wordnet:2.85"]
outdir.mkdir(parents=True, exist_ok=True)


class Memo:
    """Disambiguates once; later policies reuse the choices."""

    def __init__(self, d):
        self.d, self.method, self.choices = d, d.method, None

    def disambiguate(self, targets):
        if self.choices is None:
            self.choices = self.d.disambiguate(targets)
        return self.choices


t0 = time.time()
d = Memo(wsd.Disambiguator(method, Embedder("sentence-transformers/all-MiniLM-L6-v2", cache_dir=cache)
                           if method == "enhanced_lesk" else None))
q = dict(zip(questions["id"], questions["question"]))
for policy in policies:
    order, mz = policy.split(":")
    min_zipf = None if mz == "none" else float(mz)
    t1 = time.time()
    subs, out = generate(questions, d, order=order, min_zipf=min_zipf)
    tag = f"{method}.{order}-{mz}"
    subs.to_parquet(outdir / f"substitutions.{tag}.parquet", index=False)
    chosen = subs.dropna(subset=["synonym"])
    stats = {"method": method, "policy": policy, "questions": len(questions),
             "wall_s": round(time.time() - (t0 if policy == policies[0] else t1), 1),
             "candidates": len(subs), "with_synonym": len(chosen),
             "questions_with_candidate": int(subs["id"].nunique()),
             "generated": {m: len(df) for m, df in out.items()},
             "synonym_zipf_below_3": round(float((chosen["synonym_zipf"] < 3).mean()), 4),
             "synonym_zipf_below_2.5": round(float((chosen["synonym_zipf"] < 2.5).mean()), 4),
             "replaced_zipf_below_3": round(float((chosen["token_zipf"] < 3).mean()), 4),
             "replaced_zipf_below_2.5": round(float((chosen["token_zipf"] < 2.5).mean()), 4)}
    print(json.dumps(stats), flush=True)
    sample = chosen.sample(n=min(50, len(chosen)), random_state=0)
    with open(outdir / f"sample50.{tag}.tsv", "w") as fh:
        for r in sample.itertuples():
            fh.write(f"{r.id}\t{r.token}\t{r.synset}\t{r.synonym}\t{r.synonym_zipf:.2f}\t{q[r.id]}\n")
    json.dump(stats, open(outdir / f"stats.{tag}.json", "w"))
