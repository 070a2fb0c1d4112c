"""A yes/no data set (csbench.datasets) as 20Q test items and their few-shot pool."""
from csbench.datasets import read_entry
from csbench.io import write_parquet
from csbench.logs import snakemake_logger
from csbench.twentyq.yesno import split_items

log = snakemake_logger(snakemake)
name, p = snakemake.wildcards.dataset, snakemake.params
pool_name = snakemake.config["datasets"][name]["settings"]["fewshot"]  # named in the log only
# each set read with the params the rule reruns on (csbench.datasets.read_params)
table = read_entry(p.dataset, snakemake.input.table, name)
pool = read_entry(p.fewshot, snakemake.input.fewshot, pool_name) if p.fewshot else None
train, test, no_topic = split_items(table, pool, name)
log.info("%s: %d test items, %d few-shot pool items (%s); left out without a topic: %s", name,
         len(test), len(train), f"data set {pool_name}" if pool_name else
         "its train split" if (table["split"] == "train").any() else "its own items", no_topic)
log.info("%% yes: test %.1f, pool %.1f", 100 * (test["label"] == "yes").mean(),
         100 * (train["label"] == "yes").mean())
write_parquet(train, snakemake.output.train)
write_parquet(test, snakemake.output.test)
