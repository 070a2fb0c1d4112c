"""Fetch one source's raw files (official URL or local mirror), sha256-verified and atomic."""
from csbench.fetch import fetch_source, wanted_files
from csbench.logs import snakemake_logger

log = snakemake_logger(snakemake)
p = snakemake.params
first = next(iter(wanted_files(p.cfg)))
outdir = str(snakemake.output[0])[: -len(first)]  # results/raw/<source>/
hashes = fetch_source(p.source, p.cfg, outdir, mirror=p.mirror)
for name, sha in hashes.items():
    log.info("%s/%s sha256=%s", p.source, name, sha)
