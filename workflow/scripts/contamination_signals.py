"""Membership signals (loss, zlib, Min-K%, Min-K%++) of every WinoWhat item text with one model
(shared engine: batching, prefix sharing, the LM cache)."""
import pandas as pd

from csbench.contamination.signals import item_texts, signals_table
from csbench.io import write_parquet
from csbench.lm.route import LMJob
from csbench.logs import snakemake_logger

log = snakemake_logger(snakemake)
p = snakemake.params
texts = item_texts(pd.read_parquet(snakemake.input.table), where=snakemake.input.table)
job = LMJob.of(snakemake, prompt=False)  # raw texts: no prompt format applies
log.info("model %s: %d texts", job.describe(), len(texts))
out = signals_table(texts, job.scorer(), k=p.signals["k"], minkpp=p.signals["minkpp"])
out.insert(0, "model", snakemake.wildcards.model)
job.stamp(out)
if out["random_model"].any():
    log.warning("randomly initialised model: its signals are meaningless")
log.info("engine stats: %s", job.scorer().stats)
write_parquet(out, snakemake.output[0])
