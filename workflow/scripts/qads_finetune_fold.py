"""One fold of the optional QADS fine-tuning: the un-fine-tuned model (optional) and a copy
fine-tuned on the other folds, scored on this fold's held-out questions of each scored set
(official SQuAD 2.0 metric); held-out predictions are kept so the gather can pool the folds."""
import pandas as pd

from csbench.io import write_json, write_tsv
from csbench.logs import snakemake_logger
from csbench.provenance import provenance_columns, stamp
from csbench.qads.finetune import run_fold
from csbench.qads.route import QAJob
from csbench.qads.workflow import finetune_inputs

log = snakemake_logger(snakemake)
p = snakemake.params
prov = provenance_columns(snakemake.input.model)
if prov["random_model"]:
    log.warning("%s is a RANDOM model: its fine-tuning scores are meaningless", snakemake.input.model)
sets = finetune_inputs(p.set_names, snakemake.input.sets, snakemake.input.squad, p.questions,
                       p.dataset)
predictions = {}
# the job's route: params.qa and params.ft as computed with (qa.batch_size, speed only, from the
# config); run_fold trains and predicts the float32 model on qa.device in ft.dtype (autocast)
job = QAJob.of(snakemake)
rows = run_fold(snakemake.input.model, sets, int(p.fold), p.ft, job.qa, predictions=predictions)
for r in rows:
    log.info("%s", r)
out = stamp(pd.DataFrame(rows), snakemake.input.model, job.compute())
write_json(predictions, snakemake.output.predictions)
write_tsv(out, snakemake.output.scores)
