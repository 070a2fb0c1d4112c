"""Score the configured WSD methods on the unified evaluation framework."""
import pandas as pd

from csbench.embed import Embedder, embed_cache_dir
from csbench.io import write_tsv
from csbench.logs import snakemake_logger
from csbench.qads.workflow import disambiguator
from csbench.qads.wsd_eval import evaluate

log = snakemake_logger(snakemake)
p = snakemake.params
ev = p.wsd_eval
tables = {name: pd.read_parquet(path) for name, path in zip(ev["datasets"], snakemake.input.tables)}
embedder = Embedder(p.encoder, cache_dir=embed_cache_dir(snakemake.config)) if p.encoder else None
methods = {m: disambiguator(m, p.lesk, embedder) for m in ev["methods"]}
res = evaluate(tables, methods, window=ev["window"])
for r in res.itertuples():
    log.info("%s %s: P=%.4f R=%.4f F1=%.4f (n=%d)", r.method, r.dataset, r.precision, r.recall, r.f1, r.n)
write_tsv(res, snakemake.output[0], float_format="%.4f")
