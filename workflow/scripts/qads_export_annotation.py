"""Export the generated mode-one questions as annotation blocks (block-NNN.csv) for human checks."""
from pathlib import Path

import pandas as pd

from csbench.io import atomic_dir, read_json
from csbench.logs import snakemake_logger
from csbench.qads.verify import annotation_rows, export

log = snakemake_logger(snakemake)
rows = annotation_rows(pd.read_parquet(snakemake.input.subs), read_json(snakemake.input.one)["data"],
                       read_json(snakemake.input.original)["data"])
with atomic_dir(snakemake.output[0]) as tmp:
    paths = export(rows, Path(tmp), snakemake.params.block_size)
log.info("%d substitutions in %d blocks of <= %d", len(rows), len(paths), snakemake.params.block_size)
