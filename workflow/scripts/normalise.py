"""Normalise one table of one source into Parquet (see docs/data.md for the columns)."""
from pathlib import Path

from csbench.data import normalise
from csbench.io import write_parquet
from csbench.logs import snakemake_logger

log = snakemake_logger(snakemake)
paths = {name: Path(path) for name, path in snakemake.input.items()}
df = normalise(snakemake.wildcards.source, snakemake.wildcards.table, paths)
log.info("%s/%s: %d rows, columns %s", snakemake.wildcards.source, snakemake.wildcards.table,
         len(df), list(df.columns))
write_parquet(df, snakemake.output[0])
