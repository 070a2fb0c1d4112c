"""CSQA2 dev (test items) and train (few-shot pool) in the 20Q item schema."""
import pandas as pd

from csbench.io import write_parquet
from csbench.logs import snakemake_logger
from csbench.twentyq.csqa2 import sample, yesno_items

log = snakemake_logger(snakemake)
cfg = snakemake.params.csqa2
train, no_topic_train = yesno_items(pd.read_parquet(snakemake.input.train), "train")
test, no_topic_test = yesno_items(pd.read_parquet(snakemake.input.dev), "dev")
test = sample(test, cfg["limit"], cfg["seed"])
log.info("CSQA2: %d test items from dev (%s), %d few-shot pool items from train; left out without "
         "a topic word: dev %d, train %d", len(test), "all" if cfg["limit"] is None else
         f"seeded sample, limit {cfg['limit']}", len(train), no_topic_test, no_topic_train)
log.info("%% yes: test %.1f, train %.1f", 100 * (test["label"] == "yes").mean(),
         100 * (train["label"] == "yes").mean())
write_parquet(train, snakemake.output.train)
write_parquet(test, snakemake.output.test)
