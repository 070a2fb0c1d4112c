"""Score one shard of the WinoWhat items with one model (shared engine, per-item cache)."""
import pandas as pd

from csbench.io import write_parquet
from csbench.lm import open_scorer
from csbench.lm.backend import job_lm_cache
from csbench.lm.prompt import PromptFormat, model_lm
from csbench.logs import snakemake_logger
from csbench.provenance import stamp
from csbench.winowhat.scoring import score_items, shard

log = snakemake_logger(snakemake)
p = snakemake.params
items = shard(pd.read_parquet(snakemake.input.table), int(snakemake.wildcards.shard), p.shards)
# params.lm holds the lm settings the scores depend on (the rerun trigger); the others (batch
# sizes, served timeouts) and the cache location cannot change a number: read from the config
# (model_lm: the lm section with this model's prompt format, models.lm.<model>, over it)
lm = model_lm(snakemake.config, snakemake.wildcards.model)
scorer = open_scorer(snakemake.input.model, lm, job_lm_cache(snakemake))
log.info("model %s, %s, prompt %s: %d items", snakemake.wildcards.model, scorer.describe(),
         PromptFormat.of(lm).columns(), len(items))
out = score_items(items, scorer)
out.insert(0, "model", snakemake.wildcards.model)
# where the weights came from, what computed, in which prompt format
stamp(out, snakemake.input.model, scorer.compute(), PromptFormat.of(lm).columns())
if out["random_model"].any():
    log.warning("randomly initialised model: its scores are meaningless")
log.info("engine stats: %s", scorer.stats)
write_parquet(out, snakemake.output[0])
