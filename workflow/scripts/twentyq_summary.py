"""All models' 20Q metrics in one table, and the NLL-by-topic-frequency box plot."""
import pandas as pd

from csbench.io import write_tsv
from csbench.logs import snakemake_logger
from csbench.modelspec import LM_COLUMNS
from csbench.provenance import read_model_table
from csbench.twentyq.scoring import plot_nll_by_quartile

log = snakemake_logger(snakemake)
models = snakemake.params.models
table = pd.concat([read_model_table(p, m, columns=LM_COLUMNS)  # with the prompt format
                   for m, p in zip(models, snakemake.input.metrics)], ignore_index=True)
log.info("metrics:\n%s", table.to_string(index=False))
write_tsv(table, snakemake.output.metrics, float_format="%.4f")
items = {m: read_model_table(p, m, columns=LM_COLUMNS)
         for m, p in zip(models, snakemake.input.scored)}
plot_nll_by_quartile(items, snakemake.output.figure, variant=snakemake.params.variant)
