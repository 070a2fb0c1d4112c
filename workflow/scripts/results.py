"""results/RESULTS.md and the summary tables/figure from the result tables of the configured tasks."""
from csbench.logs import snakemake_logger
from csbench.results import build

log = snakemake_logger(snakemake)
p = snakemake.params
outputs = dict(zip(p.summary_keys, snakemake.output.summary))
build(p.tables, p.configured, snakemake.input.anchors, snakemake.output.markdown, outputs, log=log,
      settings=p.settings)
