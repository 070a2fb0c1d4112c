"""Validate the returned annotation blocks and build the verified QADS sets, the per-substitution
decisions and the inter-annotator agreement."""
import pandas as pd

from csbench.io import read_json, write_json, write_parquet, write_tsv
from csbench.logs import snakemake_logger
from csbench.qads import verify as V
from csbench.qads.workflow import select_questions, squad_json

log = snakemake_logger(snakemake)
p = snakemake.params
# interim: the exported layout rebuilt from the generated rows (replaced by row-id verification)
rows = V.annotation_rows(pd.read_parquet(snakemake.input.subs), read_json(snakemake.input.one)["data"],
                         read_json(snakemake.input.original)["data"])
expected = pd.concat(V.blocks(rows, snakemake.config["qads"]["verification"]["block_size"]),
                     ignore_index=True)
ann = V.read_returned(snakemake.input.annotations, expected)
decisions = V.decide(ann, expected)
questions = select_questions(pd.read_parquet(snakemake.input.questions), p.questions)
sets = V.verified_sets(decisions, pd.read_parquet(snakemake.input.subs), questions, p.modes)
summary = V.summary(expected, ann, decisions, sets, snakemake.input.annotations)
log.info("%s", summary)
for name in ("original", "one", "all"):
    write_json({**squad_json(sets.get(name, questions.iloc[:0])), "verified": True},
               snakemake.output[name])
write_parquet(decisions, snakemake.output.decisions)
write_tsv(V.agreement(ann), snakemake.output.agreement, float_format="%.4f")
write_json(summary, snakemake.output.summary, indent=1)
