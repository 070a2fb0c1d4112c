"""Top WordNet topic domains per article."""
import pandas as pd

from csbench.io import write_tsv
from csbench.logs import snakemake_logger
from csbench.qads.domains import article_domains
from csbench.qads.workflow import read_questions, select_questions

log = snakemake_logger(snakemake)
p = snakemake.params
questions = select_questions(read_questions(snakemake.input.questions, p.dataset), p.questions)
d = p.domains
table = article_domains(questions, pd.read_parquet(snakemake.input.subs), d["sample"], d["seed"], d["top"])
log.info("%d articles", len(table))
write_tsv(table, snakemake.output[0])
