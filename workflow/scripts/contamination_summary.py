"""Summary table: items, contaminated items and rate per benchmark, corpus and method."""
import pandas as pd

from csbench.contamination.gather import summary
from csbench.io import write_tsv
from csbench.logs import snakemake_logger

log = snakemake_logger(snakemake)
tables = {tuple(k.split("__", 1)): pd.read_parquet(v) for k, v in snakemake.input.items()}
out = summary(tables)
log.info("\n%s", out.to_string(index=False))
write_tsv(out, snakemake.output[0], float_format="%.4f")
