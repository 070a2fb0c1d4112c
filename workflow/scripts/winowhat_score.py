"""Score one shard of the WinoWhat items with one model (shared engine, per-item cache)."""
import pandas as pd

from csbench.io import write_parquet
from csbench.lm.route import LMJob
from csbench.logs import snakemake_logger
from csbench.winowhat.scoring import score_items, shard

log = snakemake_logger(snakemake)
p = snakemake.params
items = shard(pd.read_parquet(snakemake.input.table), int(snakemake.wildcards.shard), p.shards)
# the job's route: params.lm (the rerun trigger) is what it computes with; the config's lm
# section adds only what cannot change a number (batch sizes, served timeouts)
job = LMJob.of(snakemake)
log.info("model %s, prompt %s: %d items", job.describe(), job.format.columns(), len(items))
out = score_items(items, job.scorer())
out.insert(0, "model", snakemake.wildcards.model)
job.stamp(out)  # where the weights came from, what computed, in which prompt format
if out["random_model"].any():
    log.warning("randomly initialised model: its scores are meaningless")
log.info("engine stats: %s", job.scorer().stats)
write_parquet(out, snakemake.output[0])
