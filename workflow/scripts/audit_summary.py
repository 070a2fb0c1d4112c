"""Summary table of all audits and the figure of their top-1 similarity distributions."""
import pandas as pd

from csbench.audit.report import plot_top1
from csbench.io import write_tsv
from csbench.logs import snakemake_logger

log = snakemake_logger(snakemake)
table = pd.concat([pd.read_csv(p, sep="\t") for p in snakemake.input.summaries], ignore_index=True)
log.info("audits:\n%s", table.T.to_string())
write_tsv(table, snakemake.output.summary, float_format="%.4f")
plot_top1({n: pd.read_parquet(p) for n, p in zip(snakemake.params.names, snakemake.input.top1)},
          snakemake.output.figure)
