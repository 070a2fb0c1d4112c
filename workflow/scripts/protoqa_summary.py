"""Collect the per-file evaluations into the paper-style table (metrics x similarity x system),
with the provenance and prompt columns of each sampling baseline's model as rows below the
metrics."""
import json

import pandas as pd

from csbench.io import write_tsv
from csbench.logs import snakemake_logger
from csbench.modelspec import LM_COLUMNS
from csbench.protoqa.scoring import summary_table
from csbench.provenance import columns_of

log = snakemake_logger(snakemake)
results = {tuple(k): pd.read_csv(path, sep="\t", dtype={"question_id": str})
           for k, path in zip(snakemake.params.eval_keys, snakemake.input.evals)}
random_systems, columns = set(), {}
for model, meta in zip(snakemake.params.gen_models, snakemake.input.meta):
    with open(meta) as fh:
        m = json.load(fh)
    # what sampled, in which prompt format (a meta.json without: named)
    columns[f"gen-{model}"] = columns_of(m, meta, LM_COLUMNS)
    if m.get("random_model"):
        random_systems.add(f"gen-{model}")
table = summary_table(results, random_systems)
log.info("summary:\n%s", table.to_string())
# the metric rows as the table always had them (4 decimals), then one row per provenance column
# (empty for the release's prediction files)
out = table.copy()
for col in out.columns[1:]:
    out[col] = [f"{v:.4f}" if pd.notna(v) else "" for v in out[col]]
prov = {"metric": list(LM_COLUMNS)}
for col in out.columns[1:]:
    system = col.partition("/")[2].removesuffix(" (random weights)")
    prov[col] = [str(columns[system][c]) if system in columns else "" for c in LM_COLUMNS]
write_tsv(pd.concat([out, pd.DataFrame(prov)], ignore_index=True), snakemake.output[0])
