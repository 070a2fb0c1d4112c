"""Concatenate the scoring shards of one model into results/winowhat/<model>/items.parquet."""
import pandas as pd

from csbench.io import write_parquet
from csbench.logs import snakemake_logger
from csbench.provenance import LM_COLUMNS
from csbench.provenance import read_model_table

log = snakemake_logger(snakemake)
df = pd.concat([read_model_table(p, snakemake.wildcards.model, columns=LM_COLUMNS)
                for p in snakemake.input], ignore_index=True)
df = df.sort_values(["dataset", "variant", "item_id"], kind="stable").reset_index(drop=True)
log.info("%s: %d scored items from %d shards", snakemake.wildcards.model, len(df),
         len(snakemake.input))
write_parquet(df, snakemake.output[0])
