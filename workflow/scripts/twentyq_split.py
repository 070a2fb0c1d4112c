"""Overlap-free 20Q split: training questions sampled, test items admitted by the three rules."""
import pandas as pd

from csbench.embed import Embedder, embed_cache_dir
from csbench.io import write_parquet, write_tsv
from csbench.logs import snakemake_logger
from csbench.twentyq.split import build_split, statistics

log = snakemake_logger(snakemake)
cfg = snakemake.params.split
df = pd.read_parquet(snakemake.input[0])
embedder = Embedder(snakemake.params.encoder, cache_dir=embed_cache_dir(snakemake.config))
train, test, admission = build_split(
    df, embedder.encode, n_train_questions=cfg["n_train_questions"], n_test=cfg["n_test"],
    max_similarity=cfg["max_similarity"], seed=cfg["seed"], rules=cfg["rules"],
    test_pool=cfg["test_pool"])
stats = statistics({"train": train, "test": test})
log.info("admission:\n%s\nstatistics:\n%s", admission.to_string(index=False), stats.to_string(index=False))
write_parquet(train, snakemake.output.train)
write_parquet(test, snakemake.output.test)
write_tsv(stats, snakemake.output.stats, float_format="%.2f")
write_tsv(admission, snakemake.output.admission, float_format="%.2f")
