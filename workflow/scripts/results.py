"""results/RESULTS.md, results/results.json and the summary tables/figure from the result tables of
the configured tasks."""
from pathlib import Path

from csbench.logs import snakemake_logger
from csbench.record import git_commit
from csbench.results import build

log = snakemake_logger(snakemake)
p = snakemake.params
outputs = dict(zip(p.summary_keys, snakemake.output.summary))
# the config and commit are recorded, not params: they change no number (each setting that does
# reaches this rule through the tables it reads)
build(p.tables, p.configured, snakemake.input.anchors, snakemake.output.markdown, outputs, log=log,
      json_path=snakemake.output.json, config=dict(snakemake.config),
      commit=git_commit(Path(snakemake.scriptdir).parents[1]))
