"""Fetch one source's raw files (official URL or local mirror), sha256-verified and atomic."""
from csbench.fetch import fetch_source, wanted_files
from csbench.logs import snakemake_logger

log = snakemake_logger(snakemake)
source = snakemake.params.source
cfg = snakemake.config["sources"][source]  # params: the parts of it the files depend on
first = next(iter(wanted_files(cfg)))
outdir = str(snakemake.output[0])[: -len(first)]  # results/raw/<source>/
hashes = fetch_source(source, cfg, outdir, mirror=snakemake.config["mirror"])
for name, sha in hashes.items():
    log.info("%s/%s sha256=%s", source, name, sha)
