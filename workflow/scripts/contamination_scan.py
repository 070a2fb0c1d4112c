"""Lexical scan (exact + ngram) of one corpus shard; writes hits and throughput figures."""
import pandas as pd

from csbench.contamination.corpus import shard_size
from csbench.contamination.scan import ProbeIndex, Scanner
from csbench.io import write_json, write_parquet
from csbench.logs import progress, snakemake_logger

log = snakemake_logger(snakemake)
p = snakemake.params
ng, corpus = p.ngram, p.corpus
index = ProbeIndex(pd.read_parquet(snakemake.input.probes), n=ng["n"], min_words=ng["min_words"],
                   methods=p.methods, max_gap=ng["max_gap"])
log.info("shard %s: %d pieces, %d bytes on disk", snakemake.wildcards.shard, len(p.shard),
         shard_size(p.shard))
with progress(shard_size(p.shard), f"scan of shard {snakemake.wildcards.shard}", unit="B") as prog:
    # batch size and read-ahead: speed only, so read from the config (no rerun when they change)
    cfg = snakemake.config["contamination"]
    read_ahead = cfg["read_ahead"] and snakemake.threads > 1  # threads > 1: a compressed piece
    scanner = Scanner(index, batch_bytes=cfg["batch_kb"] * 1024).scan_pieces(
        p.shard, corpus["format"], corpus["text_field"], corpus["id_field"],
        read_ahead=read_ahead, progress=prog)
stats = dict(scanner.stats(), disk_bytes=shard_size(p.shard), pieces=[list(x) for x in p.shard])
log.info("scan: %s", stats)
write_parquet(scanner.table(), snakemake.output.hits)
write_json(stats, snakemake.output.stats, indent=1)
