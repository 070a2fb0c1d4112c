"""Semantic scan of one corpus shard: best-matching corpus sentence per benchmark probe."""
import pandas as pd

from csbench.contamination.corpus import shard_documents
from csbench.contamination.semantic import semantic_scan
from csbench.embed import Embedder
from csbench.io import write_parquet
from csbench.logs import snakemake_logger

log = snakemake_logger(snakemake)
p = snakemake.params
cfg, corpus = p.semantic, p.corpus
embedder = Embedder(p.encoder, cache_dir=None)   # corpus sentences are not worth caching
docs = shard_documents(p.shard, corpus["format"], corpus["text_field"], corpus["id_field"])
hits = semantic_scan(pd.read_parquet(snakemake.input.probes), docs, embedder,
                     max_docs=cfg["max_docs"], min_words=cfg["min_words"])
log.info("semantic: %d probes with a nearest sentence; %d sentences encoded", len(hits),
         embedder.n_encoded)
write_parquet(hits, snakemake.output[0])
