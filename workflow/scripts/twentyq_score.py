"""Score one LM on the 20Q test set: p(" yes") vs p(" no") per prompt variant; metrics table."""
import pandas as pd

from csbench.io import write_parquet, write_tsv
from csbench.lm import open_scorer
from csbench.lm.backend import job_lm_cache
from csbench.lm.prompt import PromptFormat, model_lm
from csbench.logs import snakemake_logger
from csbench.provenance import stamp
from csbench.twentyq.scoring import metrics, nll_by_quartile, score_items

log = snakemake_logger(snakemake)
cfg = snakemake.params.scoring
train, test = pd.read_parquet(snakemake.input.train), pd.read_parquet(snakemake.input.test)
# params.lm: the lm settings the scores depend on; the rest cannot change a number (config;
# model_lm: with this model's prompt format)
lm = model_lm(snakemake.config, snakemake.wildcards.model)
scorer = open_scorer(snakemake.input.model, lm, job_lm_cache(snakemake))  # local or served
items = score_items(scorer.loglikelihood, test, train, variants=cfg["variants"], seed=cfg["seed"])
log.info("engine stats: %s", scorer.stats)  # truncated contexts, cache entries rejected
items = nll_by_quartile(items, pd.read_parquet(snakemake.input.freq))
table = metrics(items)
table.insert(0, "model", snakemake.wildcards.model)
items.insert(0, "model", snakemake.wildcards.model)
for df in (table, items):  # per-item scores carry the provenance too
    # where the weights came from, what computed, in which prompt format
    stamp(df, snakemake.input.model, scorer.compute(), PromptFormat.of(lm).columns())
log.info("metrics:\n%s", table.to_string(index=False))
write_parquet(items, snakemake.output.scored)
write_tsv(table, snakemake.output.metrics, float_format="%.4f")
