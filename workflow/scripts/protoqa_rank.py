"""Sampling baseline: the ranked list per question from the sampled texts (most frequent answers
under the recipe: normalised, stop words removed for the paper's), with the cut policy for
samples that max_new_tokens ended."""
from csbench.io import write_json
from csbench.logs import snakemake_logger
from csbench.provenance import LM_COLUMNS
from csbench.protoqa.baseline import ranked_lists, sample_answer
from csbench.provenance import read_model_table

log = snakemake_logger(snakemake)
p = snakemake.params
samples = read_model_table(snakemake.input.samples, snakemake.wildcards.model, columns=LM_COLUMNS)
ranked = ranked_lists(samples, p.top, p.cut_policy, p.recipe)
cut = samples[samples["cut"]]
kept = sum(bool(sample_answer(t, True, p.cut_policy, p.recipe)) for t in cut["text"])
empty = sum(not sample_answer(t, False, "keep", p.recipe) for t in samples[~samples["cut"]]["text"])
log.info("recipe %s: %d questions, %d samples, %d cut by max_new_tokens: %d of them give an "
         "answer under cut_policy %s; %d of the others give none (no word left)", p.recipe,
         len(ranked), len(samples), len(cut), kept, p.cut_policy, empty)
for q in list(ranked)[:3]:
    log.info("%s: %s", q, ranked[q][:5])
write_json(ranked, snakemake.output.ranked, indent=1)
