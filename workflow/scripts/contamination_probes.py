"""Probe table: the texts to look for, for every configured benchmark (a data set, searched by
its kind, or a task table)."""
import pandas as pd

from csbench.contamination.items import dataset_probes, extract
from csbench.datasets import read_entry
from csbench.io import write_parquet
from csbench.logs import snakemake_logger

log = snakemake_logger(snakemake)
frames = []
for bench, path in snakemake.input.items():
    read = snakemake.params.datasets.get(bench)
    if read is not None:
        df = read_entry(read, path, bench)
        probes = dataset_probes(bench, read["kind"], df, path)
    else:
        df = pd.read_parquet(path)
        probes = extract(bench, df, path)
    log.info("%s: %d items, %d probes", bench, df.shape[0], len(probes))
    frames.append(probes)
write_parquet(pd.concat(frames, ignore_index=True), snakemake.output[0])
