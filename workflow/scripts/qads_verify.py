"""Validate the returned annotation blocks and build the verified QADS sets, the per-substitution
decisions and the inter-annotator agreement. The returned blocks are checked against the
annotation rows rebuilt from the generated data, not against the current export (whose block
size may have changed since the blocks were handed out)."""
import pandas as pd

from csbench.io import read_json, write_json, write_parquet, write_tsv
from csbench.logs import snakemake_logger
from csbench.qads import verify as V
from csbench.qads.workflow import read_questions, select_questions, squad_json

log = snakemake_logger(snakemake)
p = snakemake.params
subs = pd.read_parquet(snakemake.input.subs)
expected = V.annotation_rows(subs, read_json(snakemake.input.one)["data"],
                             read_json(snakemake.input.original)["data"])
questions = select_questions(read_questions(snakemake.input.questions, p.dataset), p.questions)
out = V.verify(expected, snakemake.input.annotations, subs, questions, p.modes)
log.info("%s", out["summary"])
for name in ("original", "one", "all"):
    write_json({**squad_json(out["sets"].get(name, questions.iloc[:0])), "verified": True},
               snakemake.output[name])
write_parquet(out["decisions"], snakemake.output.decisions)
write_tsv(out["agreement"], snakemake.output.agreement, float_format="%.4f")
write_json(out["summary"], snakemake.output.summary, indent=1)
