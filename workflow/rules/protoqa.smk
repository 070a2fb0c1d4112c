# ProtoQA: score ranked answer lists against crowd answer clusters (exact, WordNet, embedding
# matching; Max Answers@k / Max Incorrect@k) and the sampling-based generation baseline.
import csbench.protoqa
import csbench.protoqa.baseline as _pqb

PROTOQA = "results/protoqa"
PQ = config["protoqa"]  # defaults filled by the config validation in the Snakefile
# the question sets scored (protoqa.targets, in order; each a protoqa data set of the registry,
# csbench.datasets): each under results/protoqa/<set>/ ({qset}), read from its file with its
# entry's settings
PQ_SETS = csbench.protoqa.check_targets(config)
PQ_SET_WC = "|".join(re.escape(n) for n in PQ_SETS)


# a set's file (input) and the settings it is read with (params), by the {qset} wildcard
pq_questions = lambda wc: dataset_input(wc.qset)
pq_read = lambda wc: dataset_params(wc.qset)


PQ_GEN_MODELS = csbench.protoqa.generation_models(PQ, config["models"]["lm"])
# the generation settings with the recipe's values for those left null, and its stop strings
PQ_GEN = _pqb.generation_settings(PQ["generation"])
# set -> predictions name -> file (the configured files are the first set's)
PQ_PREDICTIONS = csbench.protoqa.predictions_files(
    PQ, PQ_SETS, config.get("mirror"), config["models"]["lm"], PROTOQA, warn=logger.warning
)
PQ_EVAL = {
    q: {(p, s): f"{PROTOQA}/{q}/eval/{p}/{s}.tsv" for p in PQ_PREDICTIONS[q] for s in PQ["similarities"]}
    for q in PQ_SETS
}

rule protoqa_generate:
    input:
        questions=pq_questions,
        model=lambda wc: model_dir(wc.model),
    output:
        samples=f"{PROTOQA}/{{qset}}/generated/{{model}}/samples.parquet",
        meta=f"{PROTOQA}/{{qset}}/generated/{{model}}/meta.json",
    wildcard_constraints:
        qset=PQ_SET_WC,
    params:
        # not `enabled` / `models` (which jobs exist), not `top` / `cut_policy` (protoqa_rank's);
        # `chunk` is part of the random stream; `stop`: the recipe's stop strings
        gen=pick(PQ_GEN, "num_samples", "temperature", "top_p", "max_new_tokens", "seed", "chunk",
                 "stop"),
        lm=lambda wc: lm_result(wc.model),
        targets=pq_read,
    log:
        "logs/protoqa/{qset}/generated/{model}.log",
    benchmark:
        "benchmarks/protoqa/{qset}/generated/{model}.tsv"
    threads: 2
    resources:
        mem_mb=16000,
        gpu=LM_GPU,
    conda:
        "../../envs/lm.yaml"
    script:
        "../scripts/protoqa_generate.py"


# The ranked list from the samples: what an answer is (the recipe's normalisation and stop words)
# and what to do with samples cut by the token budget are decided here, so changing either (or
# the list length) never samples again.
rule protoqa_rank:
    input:
        samples=f"{PROTOQA}/{{qset}}/generated/{{model}}/samples.parquet",
    output:
        ranked=f"{PROTOQA}/{{qset}}/generated/{{model}}/ranked.json",
    wildcard_constraints:
        qset=PQ_SET_WC,
    params:
        top=PQ_GEN["top"],
        cut_policy=PQ_GEN["cut_policy"],
        recipe=PQ_GEN["recipe"],
    log:
        "logs/protoqa/{qset}/generated/{model}.rank.log",
    threads: 1
    resources:
        mem_mb=2000,
        gpu=0,
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/protoqa_rank.py"


# The trivial ranked list (predictions `trivial`): the answers given most often to the other
# questions, as long as the sampling baselines' lists; ProtoQA's "majority class".
rule protoqa_trivial:
    input:
        questions=pq_questions,
    output:
        ranked=f"{PROTOQA}/{{qset}}/trivial/ranked.json",
    wildcard_constraints:
        qset=PQ_SET_WC,
    params:
        top=PQ_GEN["top"],
        targets=pq_read,
    log:
        "logs/protoqa/{qset}/trivial.log",
    threads: 1
    resources:
        mem_mb=1000,
        gpu=0,
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/protoqa_trivial.py"


# One job per (predictions file, similarity): scoring a file needs only that file (and, for the
# embedding similarity, the encoder), never the LM behind other, generated files.
rule protoqa_eval:
    input:
        questions=pq_questions,
        predictions=lambda wc: PQ_PREDICTIONS[wc.qset][wc.predictions],
        encoder_model=lambda wc: embedder_input() if wc.similarity == "embedding" else [],
    output:
        f"{PROTOQA}/{{qset}}/eval/{{predictions}}/{{similarity}}.tsv",
    wildcard_constraints:
        qset=PQ_SET_WC,
        similarity="exact|wordnet|embedding",
        predictions=PLAIN_NAME,
    params:
        encoder=lambda wc: embedder_spec() if wc.similarity == "embedding" else None,
        threshold=lambda wc: PQ["embedding_threshold"] if wc.similarity == "embedding" else None,
        missing=PQ["missing_questions"],
        stopword_only_match=lambda wc: (PQ["stopword_only_match"] if wc.similarity == "wordnet"
                                        else None),
        targets=pq_read,
    log:
        "logs/protoqa/{qset}/eval/{predictions}/{similarity}.log",
    benchmark:
        "benchmarks/protoqa/{qset}/eval/{predictions}/{similarity}.tsv"
    threads: 1
    resources:
        mem_mb=4000,
        gpu=0,
    conda:
        "../../envs/lm.yaml"
    script:
        "../scripts/protoqa_eval.py"


rule protoqa_issues:
    input:
        questions=pq_questions,
        predictions=lambda wc: PQ_PREDICTIONS[wc.qset][wc.predictions],
    output:
        f"{PROTOQA}/{{qset}}/eval/{{predictions}}/issues.tsv",
    wildcard_constraints:
        qset=PQ_SET_WC,
        predictions=PLAIN_NAME,
    params:
        targets=pq_read,
    log:
        "logs/protoqa/{qset}/eval/{predictions}/issues.log",
    threads: 1
    resources:
        mem_mb=1000,
        gpu=0,
    conda:
        "../../envs/lm.yaml"
    script:
        "../scripts/protoqa_issues.py"


rule protoqa_summary:
    input:
        evals=lambda wc: list(PQ_EVAL[wc.qset].values()),
        meta=lambda wc: [f"{PROTOQA}/{wc.qset}/generated/{m}/meta.json" for m in PQ_GEN_MODELS],
    output:
        report(f"{PROTOQA}/{{qset}}/summary.tsv", caption="../report/protoqa_summary.rst",
               category="ProtoQA"),
    wildcard_constraints:
        qset=PQ_SET_WC,
    params:
        eval_keys=lambda wc: list(PQ_EVAL[wc.qset]),
        gen_models=PQ_GEN_MODELS,
        cut_policy=PQ_GEN["cut_policy"],
        recipe=PQ_GEN["recipe"],
    log:
        "logs/protoqa/{qset}/summary.log",
    threads: 1
    resources:
        mem_mb=1000,
        gpu=0,
    conda:
        "../../envs/lm.yaml"
    script:
        "../scripts/protoqa_summary.py"


register_targets(
    "protoqa",
    lambda: [f"{PROTOQA}/{q}/summary.tsv" for q in PQ_SETS]
    + [f"{PROTOQA}/{q}/eval/{p}/issues.tsv" for q in PQ_SETS for p in PQ_PREDICTIONS[q]]
    + [f for q in PQ_SETS for f in PQ_EVAL[q].values()],  # per question: the findings' intervals
)
