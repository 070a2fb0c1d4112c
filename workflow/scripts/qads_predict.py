"""Extractive QA predictions of one model on every question set (official format: id -> answer,
"" = no answer, and the compute device and dtype under csbench.provenance.COMPUTE_KEY, which the
official evaluation ignores), plus the no-answer scores (null - best span) for the
best-threshold metric."""
from csbench.io import read_json, write_json
from csbench.logs import snakemake_logger
from csbench.provenance import is_random_model_dir, with_compute
from csbench.qads.qa import predict
from csbench.qads.route import QAJob

log = snakemake_logger(snakemake)
job = QAJob.of(snakemake)  # params.qa: what the predictions depend on and compute with
c = job.qa
if is_random_model_dir(snakemake.input.model):
    log.warning("%s is a RANDOM model: its predictions are meaningless", snakemake.input.model)
model, tok = job.load()
compute = job.compute()  # as job.load() resolved the settings
log.info("computing on %s in %s", compute["compute_device"], compute["compute_dtype"])
for src, out_preds, out_na in zip(snakemake.input.questions, snakemake.output.preds,
                                  snakemake.output.na_probs):
    rows = [(qa["id"], qa["question"], p["context"]) for a in read_json(src)["data"]
            for p in a["paragraphs"] for qa in p["qas"]]
    answers, na = predict(model, tok, [r[1] for r in rows], [r[2] for r in rows],
                          max_length=c["max_length"], stride=c["stride"], batch_size=c["batch_size"],
                          max_answer_len=c["max_answer_len"], null_threshold=c["null_threshold"])
    log.info("%s: %d questions, %d answered", src, len(rows), sum(bool(a) for a in answers))
    write_json(with_compute({r[0]: a for r, a in zip(rows, answers)}, compute), out_preds)
    write_json({r[0]: s for r, s in zip(rows, na)}, out_na)
