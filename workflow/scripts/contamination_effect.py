"""Accuracy on contaminated vs clean items per model, with a one-sided Mann-Whitney U test."""
import pandas as pd

from csbench.contamination.effect import EFFECT_COLUMNS, effect
from csbench.io import write_tsv
from csbench.logs import snakemake_logger
from csbench.provenance import COMPUTE_COLUMNS, LM_COLUMNS, PROMPT_COLUMNS
from csbench.provenance import read_model_table

log = snakemake_logger(snakemake)
frames, compute = [], {}
inputs = dict(snakemake.input.items())
for key, rpath in inputs.items():
    if not key.startswith("results__"):
        continue
    model = key.split("__", 1)[1]
    # one provenance: its first row's compute and prompt columns
    results = read_model_table(rpath, model, columns=LM_COLUMNS)
    compute[model] = (results[[*COMPUTE_COLUMNS, *PROMPT_COLUMNS]].iloc[0].to_dict()
                      if len(results) else {})
    for fkey, fpath in inputs.items():
        if fkey.startswith("flags__"):
            _, bench, corpus = fkey.split("__", 2)
            frames.append(effect(model, results, pd.read_parquet(fpath), bench, corpus, rpath))
out = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=EFFECT_COLUMNS)
# scores of randomly initialised (demo) models are meaningless: say so in the table
out["random_model"] = out["model"].isin(snakemake.params.random_models)
for col in (*COMPUTE_COLUMNS, *PROMPT_COLUMNS):  # what computed the per-item results (the
    out[col] = [compute[m].get(col, "") for m in out["model"]]  # WinoWhat scoring), and how
log.info("\n%s", out.to_string(index=False))
write_tsv(out, snakemake.output[0], float_format="%.4g")
