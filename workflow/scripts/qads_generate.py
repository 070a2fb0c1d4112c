"""Generate QADS questions (modes one/all) and the substitutions table."""

from csbench.embed import Embedder, embed_cache_dir
from csbench.io import write_json, write_parquet
from csbench.logs import snakemake_logger
from csbench.qads.candidates import load_nlp
from csbench.qads.generate import generate
from csbench.qads.workflow import (disambiguator, original_subset, read_questions,
                                   select_questions, squad_json)

log = snakemake_logger(snakemake)
p = snakemake.params
questions = select_questions(read_questions(snakemake.input.questions, p.dataset), p.questions)
embedder = Embedder(p.encoder, cache_dir=embed_cache_dir(snakemake.config)) if p.encoder else None
wsd = disambiguator(p.wsd["method"], p.lesk, embedder)
g, c = p.generation, p.candidates
subs, out = generate(questions, wsd, modes=g["modes"], pos=c["pos"], mwes=c["mwes"],
                     context=p.wsd["context"], hypernyms=g["hypernyms"], multiword=g["multiword"],
                     min_score=g["min_score"], min_count=g["min_synonym_count"],
                     order=g["synonym_order"], min_zipf=g["min_zipf"],
                     nlp=load_nlp(c["spacy_model"]))
log.info("%d questions, %d candidates, %d with a synonym; generated %s", len(questions), len(subs),
         subs["synonym"].notna().sum(), {m: len(d) for m, d in out.items()})
write_parquet(subs, snakemake.output.subs)
# "verified": false -- not checked by annotators (rule qads_verify writes the verified sets)
write_json({**squad_json(original_subset(questions, out)), "verified": False},
           snakemake.output.original)
for mode in ("one", "all"):
    write_json({**squad_json(out.get(mode, questions.iloc[:0])), "verified": False},
               snakemake.output[mode])
