"""Sampling baseline: prompts from questions, N nucleus samples each, kept with whether the token
budget cut them (protoqa_rank builds the ranked lists from them)."""
import time

from csbench.io import write_json, write_parquet
from csbench.lm.route import LMJob
from csbench.logs import snakemake_logger
from csbench.provenance import provenance
from csbench.protoqa.baseline import question_to_prompt, samples_table
from csbench.protoqa.data import load_questions

log = snakemake_logger(snakemake)
g = snakemake.params.gen
model = snakemake.wildcards.model
questions = load_questions(snakemake.input.questions, snakemake.params.targets)
qids = list(questions)
prompts = [question_to_prompt(questions[q].question) for q in qids]
start = time.time()
cut = []  # per question, per sample: whether max_new_tokens ended it
# the job's route: params.lm is what it samples with, through the scorer's model (local) or
# endpoint (served); the compute and prompt columns come from that same scorer
job = LMJob.of(snakemake)
samples = job.sample(prompts, g["num_samples"],
                     names=[f"question {q}" for q in qids],  # named if its prompt is too long
                     max_new_tokens=g["max_new_tokens"], temperature=g["temperature"],
                     top_p=g["top_p"], seed=g["seed"], chunk=g["chunk"],
                     stop=g["stop"], cut=cut)  # each sample stops at the recipe's first stop string
table = job.stamp(samples_table(model, qids, samples, cut))
columns = job.columns()
n, n_cut = len(table), int(table["cut"].sum())
log.info("%d questions x %d samples in %.1fs; %d samples (%.1f%%) cut by max_new_tokens %d%s",
         len(qids), g["num_samples"], time.time() - start, n_cut, 100 * n_cut / max(n, 1),
         g["max_new_tokens"],
         " (RANDOM MODEL: outputs are meaningless)" if columns["random_model"] else "")
for q, p, s in list(zip(qids, prompts, samples))[:3]:
    log.info("%s: %r -> %s", q, p, s[:5])
write_parquet(table, snakemake.output.samples)
write_json({"model": model, **columns,  # the provenance and prompt columns
            "provenance": provenance(snakemake.input.model),
            "prompts": dict(zip(qids, prompts)), "settings": g,
            "samples": n, "samples_cut": n_cut}, snakemake.output.meta, indent=1)
