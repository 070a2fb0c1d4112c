"""Topic-frequency proxy: summed token cross-entropy of each test topic under the reference LM."""
import pandas as pd

from csbench.io import write_parquet
from csbench.lm import open_scorer
from csbench.lm.backend import job_lm_cache
from csbench.logs import snakemake_logger
from csbench.provenance import stamp
from csbench.twentyq.scoring import topic_frequency

log = snakemake_logger(snakemake)
test = pd.read_parquet(snakemake.input.test)
# params.lm: the lm settings the scores depend on; the rest cannot change a number (config).
# The requests have empty contexts, which no prompt format changes: scored raw (so a reference
# LM without a chat template serves under lm.chat_template: on too)
lm = {**snakemake.config["lm"], "chat_template": False, "system_instruction": None}
scorer = open_scorer(snakemake.input.model, lm, job_lm_cache(snakemake))  # local or served
freq = topic_frequency(scorer.loglikelihood, test["subject"])
stamp(freq, snakemake.input.model, scorer.compute())  # where the weights came from, what computed
log.info("%d topics; cross-entropy quartiles %s", len(freq),
         freq["topic_xent"].quantile([0.25, 0.5, 0.75]).round(2).tolist())
write_parquet(freq, snakemake.output[0])
