"""Score one shard of the WinoWhat items with one model (shared engine, per-item cache)."""
import pandas as pd

from csbench.io import write_parquet
from csbench.lm import open_scorer
from csbench.lm.backend import lm_cache_dir
from csbench.logs import snakemake_logger
from csbench.provenance import stamp
from csbench.winowhat.scoring import score_items, shard

log = snakemake_logger(snakemake)
p = snakemake.params
items = shard(pd.read_parquet(snakemake.input.table), int(snakemake.wildcards.shard), p.shards)
# params.lm holds the lm settings the scores depend on (the rerun trigger); the others (batch
# sizes, served timeouts) and the cache location cannot change a number: read from the config
scorer = open_scorer(snakemake.input.model, snakemake.config["lm"], lm_cache_dir(snakemake.config))
log.info("model %s, %s: %d items", snakemake.wildcards.model, scorer.describe(), len(items))
out = score_items(items, scorer)
out.insert(0, "model", snakemake.wildcards.model)
stamp(out, snakemake.input.model, scorer.compute())  # where the weights came from, what computed
if out["random_model"].any():
    log.warning("randomly initialised model: its scores are meaningless")
log.info("engine stats: %s", scorer.stats)
write_parquet(out, snakemake.output[0])
