"""Materialise one configured model into resources/models/<name>/ (copy, download or build)."""
from csbench.logs import snakemake_logger
from csbench.models import materialise

log = snakemake_logger(snakemake)
log.info("materialising %s from %s", snakemake.wildcards.model, snakemake.params.spec)
materialise(snakemake.params.spec, snakemake.output[0])
log.info("done: %s", snakemake.output[0])
