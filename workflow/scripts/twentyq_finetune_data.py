"""The 20Q fine-tuned arm's training table: the benchmark's training items kept by the 20Q split
rules against its scored test items, in the paper's fine-tuning prompt; admission counts."""
import pandas as pd

from csbench.embed import Embedder, embed_cache_dir
from csbench.io import write_parquet, write_tsv
from csbench.logs import snakemake_logger
from csbench.twentyq.finetune import training_table

log = snakemake_logger(snakemake)
cfg = snakemake.params.admission
train, test = pd.read_parquet(snakemake.input.train), pd.read_parquet(snakemake.input.test)
embedder = Embedder(snakemake.params.encoder, cache_dir=embed_cache_dir(snakemake.config))
table, counts = training_table(train, test, embedder.encode, cfg["rules"], cfg["max_similarity"])
counts.insert(0, "benchmark", snakemake.wildcards.bench)
log.info("%s: %d of %d training items kept against %d scored items:\n%s", snakemake.wildcards.bench,
         len(table), len(train), len(test), counts.to_string(index=False))
write_parquet(table, snakemake.output.table)
write_tsv(counts, snakemake.output.admission, float_format="%.2f")
