"""Score one predictions file with one similarity function (see csbench.protoqa.scoring)."""
from csbench.io import write_tsv
from csbench.logs import snakemake_logger
from csbench.protoqa.data import load_predictions, load_questions
from csbench.protoqa.scoring import Scorer, evaluate

log = snakemake_logger(snakemake)
p = snakemake.params
name, sim = snakemake.wildcards.predictions, snakemake.wildcards.similarity
embedder = None
if sim == "embedding":
    from csbench.embed import Embedder, embed_cache_dir

    embedder = Embedder(p.encoder, cache_dir=embed_cache_dir(snakemake.config))
questions = load_questions(snakemake.input.questions, snakemake.params.targets)
scorer = Scorer(sim, embedder=embedder, threshold=p.threshold,
                stopword_only_match=p.stopword_only_match)
preds = load_predictions(snakemake.input.predictions)
df = evaluate(preds, questions, scorer, missing=p.missing)
for issue in preds.issues:
    log.warning("%s: %s", preds.path, issue)
means = df[df.question_id == "mean"].set_index("metric")["score"].round(4).to_dict()
log.info("%s / %s: %d questions scored; means %s", name, sim, df.question_id.nunique() - 1, means)
write_tsv(df, snakemake.output[0])
