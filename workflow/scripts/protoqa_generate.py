"""Sampling baseline: prompts from questions, N nucleus samples each, kept with whether the token
budget cut them (protoqa_rank builds the ranked lists from them)."""
import time

from csbench.io import write_json, write_parquet
from csbench.lm.backend import job_lm_cache, sample, served_spec
from csbench.lm.prompt import PromptFormat, model_lm
from csbench.logs import snakemake_logger
from csbench.compute import compute_columns
from csbench.provenance import SERVED_COMPUTE, provenance, stamp
from csbench.protoqa.baseline import question_to_prompt, samples_table
from csbench.protoqa.data import load_questions

log = snakemake_logger(snakemake)
g = snakemake.params.gen
model = snakemake.wildcards.model
questions = load_questions(snakemake.input.questions)
qids = list(questions)
prompts = [question_to_prompt(questions[q].question) for q in qids]
start = time.time()
cut = []  # per question, per sample: whether max_new_tokens ended it
# params.lm: the lm settings the samples depend on (the rerun trigger); the rest of lm and the
# cache location cannot change a sample: read from the config (model_lm: with this model's
# prompt format)
lm = model_lm(snakemake.config, snakemake.wildcards.model)
samples = sample(snakemake.input.model, prompts, g["num_samples"],  # local or served model
                 lm=lm, cache_dir=job_lm_cache(snakemake),
                 names=[f"question {q}" for q in qids],  # named if its prompt is too long
                 max_new_tokens=g["max_new_tokens"], temperature=g["temperature"],
                 top_p=g["top_p"], seed=g["seed"], chunk=g["chunk"],
                 stop=g["stop"], cut=cut)  # each sample stops at the recipe's first stop string
# what sampled: the device and dtype sample() loaded the model with, in which prompt format
compute = (SERVED_COMPUTE if served_spec(snakemake.input.model)
           else compute_columns(lm["device"], lm["dtype"]))
prompt_columns = PromptFormat.of(lm).columns()
table = stamp(samples_table(model, qids, samples, cut), snakemake.input.model, compute,
              prompt_columns)
columns = stamp({}, snakemake.input.model, compute, prompt_columns)
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
