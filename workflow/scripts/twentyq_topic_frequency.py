"""Topic-frequency proxy: summed token cross-entropy of each test topic under the reference LM."""
import pandas as pd

from csbench.io import write_parquet
from csbench.lm.route import LMJob
from csbench.logs import snakemake_logger
from csbench.twentyq.scoring import topic_frequency

log = snakemake_logger(snakemake)
test = pd.read_parquet(snakemake.input.test)
# params.lm (lm_result(..., prompt=False)): the requests have empty contexts, which no prompt
# format changes: scored raw (so a reference LM without a chat template serves under
# lm.chat_template: on too), and the outputs carry no prompt columns
job = LMJob.of(snakemake, prompt=False)
freq = topic_frequency(job.scorer().loglikelihood, test["subject"])
job.stamp(freq)  # where the weights came from, what computed
log.info("%d topics; cross-entropy quartiles %s", len(freq),
         freq["topic_xent"].quantile([0.25, 0.5, 0.75]).round(2).tolist())
write_parquet(freq, snakemake.output[0])
