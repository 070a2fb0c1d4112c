"""Gather the folds of the optional QADS fine-tuning of one model (plus a mean row per split)."""
import pandas as pd

from csbench.io import write_tsv
from csbench.logs import snakemake_logger
from csbench.qads.finetune import with_means

log = snakemake_logger(snakemake)
folds = pd.concat([pd.read_csv(f, sep="\t") for f in snakemake.input], ignore_index=True)
random_model = bool(folds["random_model"].any())
out = pd.DataFrame(with_means(folds.drop(columns="random_model").to_dict("records")))
out.insert(0, "model", snakemake.wildcards.model)
out.insert(1, "questions", snakemake.params.questions)
out["random_model"] = random_model
log.info("\n%s", out.to_string(index=False))
write_tsv(out, snakemake.output[0], float_format="%.2f")
