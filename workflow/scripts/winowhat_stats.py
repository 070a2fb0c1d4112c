"""Accuracy per model x dataset x variant x subset x method x category (bootstrap CIs) and the
paired comparison (difference with a paired bootstrap CI, McNemar's exact test)."""
import pandas as pd

from csbench.io import write_tsv
from csbench.logs import snakemake_logger
from csbench.provenance import read_model_table
from csbench.provenance import LM_COLUMNS
from csbench.winowhat.stats import accuracy_table, mcnemar_table

log = snakemake_logger(snakemake)
b = snakemake.params.bootstrap
# each model's table, checked to be that model's (params.models is in the order of the inputs)
scored = pd.concat([read_model_table(path, model, columns=LM_COLUMNS)
                    for model, path in zip(snakemake.params.models, snakemake.input)],
                   ignore_index=True)
random_models = set(scored.loc[scored["random_model"], "model"])
acc = accuracy_table(scored, n_boot=b["n"], seed=b["seed"], level=b["level"])
mc = mcnemar_table(scored, n_boot=b["n"], seed=b["seed"], level=b["level"])
# every row says where its model's weights came from, what computed and in which prompt format
# (provenance and prompt columns of the scored shards)
prov = scored[["model", *LM_COLUMNS]].drop_duplicates("model")
acc, mc = (t.merge(prov, on="model", how="left") for t in (acc, mc))
if random_models:
    log.warning("randomly initialised models (meaningless scores): %s", sorted(random_models))
log.info("%d accuracy rows, %d paired tests", len(acc), len(mc))
write_tsv(acc, snakemake.output.accuracy, float_format="%.4f")
write_tsv(mc, snakemake.output.mcnemar, float_format="%.6g")
