"""One fold of the optional QADS fine-tuning: the un-fine-tuned model (optional) and a copy
fine-tuned on the other folds, scored on this fold's held-out questions of each scored set
(official SQuAD 2.0 metric); held-out predictions are kept so the gather can pool the folds."""
import pandas as pd

from csbench.io import write_json, write_tsv
from csbench.logs import snakemake_logger
from csbench.compute import compute_columns
from csbench.provenance import provenance_columns, stamp
from csbench.qads.finetune import run_fold
from csbench.qads.workflow import finetune_inputs

log = snakemake_logger(snakemake)
p = snakemake.params
prov = provenance_columns(snakemake.input.model)
if prov["random_model"]:
    log.warning("%s is a RANDOM model: its fine-tuning scores are meaningless", snakemake.input.model)
sets = finetune_inputs(p.set_names, snakemake.input.sets, snakemake.input.squad, p.questions)
predictions = {}
# qa.batch_size (the held-out prediction batch) is speed only: from the config, not a param
qa = {**p.qa, "batch_size": snakemake.config["qads"]["qa"]["batch_size"]}
rows = run_fold(snakemake.input.model, sets, int(p.fold), p.ft, qa, predictions=predictions)
for r in rows:
    log.info("%s", r)
# where the weights came from, and what computed: run_fold trains and predicts the float32 model
# on qads.qa.device in qads.finetune.dtype (bfloat16: under autocast, csbench.training.autocast)
out = stamp(pd.DataFrame(rows), snakemake.input.model,
            compute_columns(p.qa["device"], p.ft["dtype"]))
write_json(predictions, snakemake.output.predictions)
write_tsv(out, snakemake.output.scores)
