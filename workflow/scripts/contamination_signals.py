"""Membership signals (loss, zlib, Min-K%, Min-K%++) of every WinoWhat item text with one model
(shared engine: batching, prefix sharing, the LM cache)."""
import pandas as pd

from csbench.contamination.signals import item_texts, signals_table
from csbench.io import write_parquet
from csbench.lm import open_scorer
from csbench.lm.backend import lm_cache_dir
from csbench.lm.prompt import model_lm
from csbench.logs import snakemake_logger
from csbench.provenance import stamp

log = snakemake_logger(snakemake)
p = snakemake.params
texts = item_texts(pd.read_parquet(snakemake.input.table), where=snakemake.input.table)
# raw texts: no prompt format applies; batch sizes and the cache location come from the config
lm = model_lm(snakemake.config, snakemake.wildcards.model)
scorer = open_scorer(snakemake.input.model, lm, lm_cache_dir(snakemake.config))
log.info("model %s, %s: %d texts", snakemake.wildcards.model, scorer.describe(), len(texts))
out = signals_table(texts, scorer, k=p.signals["k"], minkpp=p.signals["minkpp"])
out.insert(0, "model", snakemake.wildcards.model)
stamp(out, snakemake.input.model, scorer.compute())
if out["random_model"].any():
    log.warning("randomly initialised model: its signals are meaningless")
log.info("engine stats: %s", scorer.stats)
write_parquet(out, snakemake.output[0])
