"""One fold of the optional QADS fine-tuning: the un-fine-tuned model and a copy fine-tuned on
the other folds, both scored on this fold's held-out questions (official SQuAD 2.0 metric)."""
import pandas as pd

from csbench.io import read_json, write_tsv
from csbench.logs import snakemake_logger
from csbench.models import is_random_model_dir
from csbench.qads.finetune import run_fold

log = snakemake_logger(snakemake)
p = snakemake.params
random_model = is_random_model_dir(snakemake.input.model)
if random_model:
    log.warning("%s is a RANDOM model: its fine-tuning scores are meaningless", snakemake.input.model)
rows = run_fold(snakemake.input.model, read_json(snakemake.input.questions)["data"], int(p.fold),
                p.ft, p.qa)
for r in rows:
    log.info("%s", r)
out = pd.DataFrame(rows)
out["random_model"] = random_model
write_tsv(out, snakemake.output[0])
