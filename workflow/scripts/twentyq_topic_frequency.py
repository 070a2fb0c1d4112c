"""Topic-frequency proxy: summed token cross-entropy of each test topic under the reference LM."""
import pandas as pd

from csbench.io import write_parquet
from csbench.lm import LMScorer
from csbench.logs import snakemake_logger
from csbench.models import is_random_model_dir
from csbench.twentyq.scoring import topic_frequency

log = snakemake_logger(snakemake)
test = pd.read_parquet(snakemake.input.test)
cfg = {"lm": snakemake.params.lm, "cache_dir": snakemake.params.cache_dir}
scorer = LMScorer.from_config(snakemake.input.model, cfg)
freq = topic_frequency(scorer.loglikelihood, test["subject"])
freq["random_model"] = is_random_model_dir(snakemake.input.model)
log.info("%d topics; cross-entropy quartiles %s", len(freq),
         freq["topic_xent"].quantile([0.25, 0.5, 0.75]).round(2).tolist())
write_parquet(freq, snakemake.output[0])
