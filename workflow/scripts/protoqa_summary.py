"""Collect the per-file evaluations into the paper-style table (metrics x similarity x system),
with the provenance and prompt columns of each sampling baseline's model as rows below the
metrics, then its sampling rows: samples drawn, the share that max_new_tokens cut, the cut policy,
the recipe."""
import json

import pandas as pd

from csbench.io import write_tsv
from csbench.logs import snakemake_logger
from csbench.provenance import LM_COLUMNS
from csbench.protoqa import SAMPLING_ROWS
from csbench.protoqa.scoring import summary_table
from csbench.provenance import columns_of

log = snakemake_logger(snakemake)
results = {tuple(k): pd.read_csv(path, sep="\t", dtype={"question_id": str})
           for k, path in zip(snakemake.params.eval_keys, snakemake.input.evals)}
random_systems, columns, sampling = set(), {}, {}
for model, meta in zip(snakemake.params.gen_models, snakemake.input.meta):
    with open(meta) as fh:
        m = json.load(fh)
    # what sampled, in which prompt format (a meta.json without: named)
    columns[f"gen-{model}"] = columns_of(m, meta, LM_COLUMNS)
    n, n_cut = m.get("samples"), m.get("samples_cut")
    sampling[f"gen-{model}"] = {"samples": "" if n is None else str(n),  # older meta.json: empty
                                "samples_cut_share": "" if n_cut is None else f"{n_cut / n:.4f}",
                                "cut_policy": snakemake.params.cut_policy,
                                "recipe": snakemake.params.recipe}
    if n_cut is not None:
        log.info("gen-%s: %d of %d samples (%.1f%%) cut by max_new_tokens", model, n_cut, n,
                 100 * n_cut / n)
    if m.get("random_model"):
        random_systems.add(f"gen-{model}")
table = summary_table(results, random_systems)
log.info("summary:\n%s", table.to_string())
# the metric rows as the table always had them (4 decimals), then one row per provenance column
# and the sampling rows (empty for the release's prediction files)
out = table.copy()
for col in out.columns[1:]:
    out[col] = [f"{v:.4f}" if pd.notna(v) else "" for v in out[col]]
prov = {"metric": list(LM_COLUMNS) + list(SAMPLING_ROWS)}
for col in out.columns[1:]:
    system = col.partition("/")[2].removesuffix(" (random weights)")
    prov[col] = ([str(columns[system][c]) if system in columns else "" for c in LM_COLUMNS]
                 + [sampling[system][r] if system in sampling else "" for r in SAMPLING_ROWS])
write_tsv(pd.concat([out, pd.DataFrame(prov)], ignore_index=True), snakemake.output[0])
