"""Sampling baseline: prompts from questions, N nucleus samples each, top answers by frequency."""
import time

from csbench.io import write_json
from csbench.lm.backend import lm_cache_dir, sample, served_spec
from csbench.lm.prompt import PromptFormat, model_lm
from csbench.logs import snakemake_logger
from csbench.models import compute_columns
from csbench.provenance import SERVED_COMPUTE, provenance, stamp
from csbench.protoqa.baseline import SENTENCE_ENDS, question_to_prompt, rank_answers
from csbench.protoqa.data import load_questions

log = snakemake_logger(snakemake)
g = snakemake.params.gen
questions = load_questions(snakemake.input.questions)
qids = list(questions)
prompts = [question_to_prompt(questions[q].question) for q in qids]
start = time.time()
# params.lm: the lm settings the samples depend on (the rerun trigger); the rest of lm and the
# cache location cannot change a sample: read from the config (model_lm: with this model's
# prompt format)
lm = model_lm(snakemake.config, snakemake.wildcards.model)
samples = sample(snakemake.input.model, prompts, g["num_samples"],  # local or served model
                 lm=lm, cache_dir=lm_cache_dir(snakemake.config),
                 names=[f"question {q}" for q in qids],  # named if its prompt is too long
                 max_new_tokens=g["max_new_tokens"], temperature=g["temperature"],
                 top_p=g["top_p"], seed=g["seed"], chunk=g["chunk"],
                 stop=SENTENCE_ENDS)  # each sample stops at its first sentence end
ranked = {q: rank_answers(s, g["top"]) for q, s in zip(qids, samples)}
# what sampled: the device and dtype sample() loaded the model with, in which prompt format
columns = stamp({}, snakemake.input.model, SERVED_COMPUTE if served_spec(snakemake.input.model)
                else compute_columns(lm["device"], lm["dtype"]), PromptFormat.of(lm).columns())
random_model = columns["random_model"]
log.info("%d questions x %d samples in %.1fs%s", len(qids), g["num_samples"], time.time() - start,
         " (RANDOM MODEL: outputs are meaningless)" if random_model else "")
for q, p in list(zip(qids, prompts))[:3]:
    log.info("%s: %r -> %s", q, p, ranked[q][:5])
write_json(ranked, snakemake.output.ranked, indent=1)
write_json({"model": snakemake.wildcards.model, **columns,  # the provenance columns
            "provenance": provenance(snakemake.input.model),
            "prompts": dict(zip(qids, prompts)), "settings": g}, snakemake.output.meta, indent=1)
