"""Collect the per-file evaluations into the paper-style table (metrics x similarity x system)."""
import json

import pandas as pd

from csbench.io import write_tsv
from csbench.logs import snakemake_logger
from csbench.protoqa.scoring import summary_table

log = snakemake_logger(snakemake)
results = {tuple(k): pd.read_csv(path, sep="\t", dtype={"question_id": str})
           for k, path in zip(snakemake.params.eval_keys, snakemake.input.evals)}
random_systems = set()
for model, meta in zip(snakemake.params.gen_models, snakemake.input.meta):
    with open(meta) as fh:
        if json.load(fh).get("random_model"):
            random_systems.add(f"gen-{model}")
table = summary_table(results, random_systems)
log.info("summary:\n%s", table.to_string())
write_tsv(table, snakemake.output[0], float_format="%.4f")
