"""Generate QADS questions (modes one/all) and the substitutions table."""
import pandas as pd

from csbench.io import write_json, write_parquet
from csbench.logs import snakemake_logger
from csbench.qads.candidates import load_nlp
from csbench.qads.generate import generate
from csbench.qads.workflow import disambiguator, original_subset, select_questions, squad_json

log = snakemake_logger(snakemake)
q = snakemake.params.qads
questions = select_questions(pd.read_parquet(snakemake.input[0]), q["questions"])
wsd = disambiguator(q["wsd"]["method"], q, snakemake.params.encoder, snakemake.params.cache)
subs, out = generate(questions, wsd, modes=q["generation"]["modes"], pos=q["candidates"]["pos"],
                     mwes=q["candidates"]["mwes"], context=q["wsd"]["context"],
                     hypernyms=q["generation"]["hypernyms"], multiword=q["generation"]["multiword"],
                     min_score=q["generation"]["min_score"],
                     min_count=q["generation"]["min_synonym_count"],
                     order=q["generation"]["synonym_order"], min_zipf=q["generation"]["min_zipf"],
                     nlp=load_nlp(q["candidates"]["spacy_model"]))
log.info("%d questions, %d candidates, %d with a synonym; generated %s", len(questions), len(subs),
         subs["synonym"].notna().sum(), {m: len(d) for m, d in out.items()})
write_parquet(subs, snakemake.output.subs)
# "verified": false -- not checked by annotators (rule qads_verify writes the verified sets)
write_json({**squad_json(original_subset(questions, out)), "verified": False},
           snakemake.output.original)
for mode in ("one", "all"):
    write_json({**squad_json(out.get(mode, questions.iloc[:0])), "verified": False},
               snakemake.output[mode])
