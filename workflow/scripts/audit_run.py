"""Run one train/test overlap audit and write its tables under results/audit/<name>/."""
from csbench.audit.engine import run_audit
from csbench.audit.items import read_items
from csbench.embed import Embedder, embed_cache_dir
from csbench.io import write_parquet, write_tsv
from csbench.logs import snakemake_logger

log = snakemake_logger(snakemake)
a = snakemake.params.audit
speed = snakemake.config["audits"][snakemake.wildcards.name]  # block sizes: speed, not results
ds = snakemake.params.datasets  # a side that is a data set: its text by kind (audit.items)
train, test = (read_items(snakemake.input[s], ds[s]) for s in ("train", "test"))
embedder = Embedder(snakemake.params.encoder, cache_dir=embed_cache_dir(snakemake.config))
out = run_audit(train, test, embedder.encode, a["text_fields"], id_field=a["id_field"],
                short_field=a["short_field"], methods=a["methods"], top_k=a["top_k"],
                search_method=a["search"], block=speed["block"], lexical_block=speed["lexical_block"],
                trigram_max_df=a["trigram_max_df"], threads=snakemake.threads,
                name=snakemake.wildcards.name, train_path=snakemake.input.train,
                test_path=snakemake.input.test)
log.info("summary:\n%s", out["summary"].T.to_string())
write_parquet(out["top1"], snakemake.output.top1)
write_tsv(out["duplicates"], snakemake.output.duplicates)
write_tsv(out["summary"], snakemake.output.summary, float_format="%.4f")
for method, path in zip(snakemake.params.methods, snakemake.output.pairs):
    write_tsv(out[f"top_pairs.{method}"], path, float_format="%.4f")
