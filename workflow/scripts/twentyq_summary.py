"""All models' 20Q metrics in one table, with the calibrated ones (AUROC, cross-fitted accuracy and
F1, bootstrap intervals) computed from each model's scored items; the NLL-by-topic-frequency plot."""
import pandas as pd

from csbench.io import write_tsv
from csbench.logs import snakemake_logger
from csbench.provenance import LM_COLUMNS
from csbench.provenance import read_model_table
from csbench.twentyq.calibration import with_calibrated
from csbench.twentyq.scoring import plot_nll_by_quartile

log = snakemake_logger(snakemake)
models, cal = snakemake.params.models, snakemake.params.calibrated
table = pd.concat([read_model_table(p, m, columns=LM_COLUMNS)  # with the prompt format
                   for m, p in zip(models, snakemake.input.metrics)], ignore_index=True)
items = {m: read_model_table(p, m, columns=LM_COLUMNS)
         for m, p in zip(models, snakemake.input.scored)}
table = with_calibrated(table, items, cal["calibration"], cal["bootstrap"])
log.info("metrics:\n%s", table.to_string(index=False))
write_tsv(table, snakemake.output.metrics, float_format="%.4f")
plot_nll_by_quartile(items, snakemake.output.figure, variant=snakemake.params.variant)
