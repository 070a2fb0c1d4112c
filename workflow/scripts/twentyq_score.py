"""Score one LM on the 20Q test set: p(" yes") vs p(" no") per prompt variant; metrics table."""
import pandas as pd

from csbench.io import write_parquet, write_tsv
from csbench.lm.route import LMJob
from csbench.logs import snakemake_logger
from csbench.twentyq.scoring import metrics, nll_by_quartile, score_items

log = snakemake_logger(snakemake)
cfg = snakemake.params.scoring
train, test = pd.read_parquet(snakemake.input.train), pd.read_parquet(snakemake.input.test)
job = LMJob.of(snakemake)  # params.lm: what the scores depend on and compute with
scorer = job.scorer()  # local or served
items = score_items(scorer.loglikelihood, test, train, variants=cfg["variants"], seed=cfg["seed"])
log.info("engine stats: %s", scorer.stats)  # truncated contexts, cache entries rejected
items = nll_by_quartile(items, pd.read_parquet(snakemake.input.freq))
table = metrics(items)
table.insert(0, "model", snakemake.wildcards.model)
items.insert(0, "model", snakemake.wildcards.model)
for df in (table, items):  # per-item scores carry the provenance too
    job.stamp(df)  # where the weights came from, what computed, in which prompt format
log.info("metrics:\n%s", table.to_string(index=False))
write_parquet(items, snakemake.output.scored)
write_tsv(table, snakemake.output.metrics, float_format="%.4f")
