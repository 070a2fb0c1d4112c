"""Probe table: the texts to look for, for every configured benchmark."""
import pandas as pd

from csbench.contamination.items import extract
from csbench.io import write_parquet
from csbench.logs import snakemake_logger

log = snakemake_logger(snakemake)
frames = []
for bench, path in snakemake.input.items():
    df = pd.read_parquet(path)
    probes = extract(bench, df, path)
    log.info("%s: %d items, %d probes", bench, df.shape[0], len(probes))
    frames.append(probes)
write_parquet(pd.concat(frames, ignore_index=True), snakemake.output[0])
