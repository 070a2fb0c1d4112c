"""Gather the folds of the optional QADS fine-tuning of one model: per-fold rows, a mean row per
split and scored set, and a pooled row (the official metric over every fold's held-out
predictions together), with each question's pooled scores; and the pooled fine-tuned predictions
scored per article topic domain."""
import pandas as pd

from csbench.io import read_json, write_tsv
from csbench.logs import snakemake_logger
from csbench.provenance import read_model_table
from csbench.provenance import PROVENANCE_COLUMNS
from csbench.qads.domains import top_domain_by_article
from csbench.qads.finetune import by_domain, pooled, pooled_items, with_means
from csbench.qads.workflow import finetune_inputs

log = snakemake_logger(snakemake)
p = snakemake.params
# the fold tables have no model column: each is checked for its provenance columns
folds = pd.concat([read_model_table(f, None) for f in snakemake.input.scores], ignore_index=True)
prov_cols = list(PROVENANCE_COLUMNS)
prov = folds[prov_cols].iloc[0].to_dict()  # one model: the same provenance in every fold
prov["random_model"] = bool(folds["random_model"].any())
rows = with_means(folds.drop(columns=prov_cols).to_dict("records"))
sets = finetune_inputs(p.set_names, snakemake.input.sets, snakemake.input.squad, p.select,
                       p.dataset)
fold_predictions = [read_json(f) for f in snakemake.input.predictions]
rows += pooled(sets, fold_predictions)


def stamped(df: pd.DataFrame) -> pd.DataFrame:
    """The model's name first, its provenance and ``verified`` last."""
    df.insert(0, "model", snakemake.wildcards.model)
    df.insert(1, "trained_on", p.trained_on)  # "squad", or "squad + one": the QADS arm
    for col, value in prov.items():
        df[col] = value
    df["verified"] = p.verified  # False: the QADS questions were not checked by annotators
    return df


out = stamped(pd.DataFrame(rows))
if "questions" not in out:
    out.insert(2, "questions", p.questions)
log.info("\n%s", out.to_string(index=False))
domains = top_domain_by_article(pd.read_csv(snakemake.input.domains, sep="\t", keep_default_na=False))
dom = stamped(pd.DataFrame(by_domain(sets, fold_predictions, domains)))
log.info("by domain:\n%s", dom.drop(columns="titles", errors="ignore").to_string(index=False))
items = pd.DataFrame(pooled_items(sets, fold_predictions),
                     columns=["split", "questions", "id", "has_answer", "exact", "f1"])
items.insert(0, "model", snakemake.wildcards.model)
items.insert(1, "trained_on", p.trained_on)
write_tsv(out, snakemake.output[0], float_format="%.2f")
write_tsv(items, snakemake.output.per_question, float_format="%.4f")
write_tsv(dom, snakemake.output.by_domain, float_format="%.2f")
