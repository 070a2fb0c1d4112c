"""The trivial ranked list (csbench.protoqa.trivial): per question, the answers given most often to
the other questions, scored like any predictions file."""
from csbench.io import write_json
from csbench.logs import snakemake_logger
from csbench.protoqa.data import load_questions
from csbench.protoqa.trivial import frequent_answers

log = snakemake_logger(snakemake)
ranked = frequent_answers(load_questions(snakemake.input.questions, snakemake.params.targets), snakemake.params.top)
for q in list(ranked)[:3]:
    log.info("%s: %s", q, ranked[q][:10])
write_json(ranked, snakemake.output.ranked, indent=1)
