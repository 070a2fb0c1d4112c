"""Gather the shards of one corpus into per-item results for one benchmark."""
import pandas as pd

from csbench.contamination.gather import gather
from csbench.io import write_parquet
from csbench.logs import snakemake_logger

log = snakemake_logger(snakemake)
p = snakemake.params
probes = pd.read_parquet(snakemake.input.probes)
shards = [pd.read_parquet(s) for s in snakemake.input.shards]
out = gather(probes, shards, snakemake.wildcards.benchmark, p.methods,
             ngram_threshold=p.ngram_threshold, semantic_threshold=p.semantic_threshold)
for method, g in out.groupby("method"):
    log.info("%s: %d of %d items contaminated", method, int(g.contaminated.sum()), len(g))
write_parquet(out, snakemake.output[0])
