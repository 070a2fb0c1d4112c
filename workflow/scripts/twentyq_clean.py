"""Clean the Twenty Questions tables step by step; write kept rows and the count table."""
import pandas as pd

from csbench.io import write_parquet, write_tsv
from csbench.logs import snakemake_logger
from csbench.twentyq.clean import clean

log = snakemake_logger(snakemake)
cfg = snakemake.params.clean
raw = pd.concat([pd.read_parquet(p) for p in snakemake.input], ignore_index=True)
kept, counts = clean(raw, steps=cfg["steps"], min_score=cfg["min_score"])
log.info("cleaning counts:\n%s", counts.to_string(index=False))
write_parquet(kept, snakemake.output.clean)
write_tsv(counts, snakemake.output.counts, float_format="%.2f")
