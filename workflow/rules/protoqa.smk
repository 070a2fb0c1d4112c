# ProtoQA: score ranked answer lists against crowd answer clusters (exact, WordNet, embedding
# matching; Max Answers@k / Max Incorrect@k) and the sampling-based generation baseline.
import csbench.protoqa
import csbench.protoqa.baseline as _pqb

PROTOQA = "results/protoqa"
PQ = config["protoqa"]  # defaults filled by the config validation in the Snakefile
# the questions scored against: the protoqa data set protoqa.targets names, its file and the
# settings it is read with (csbench.datasets)
csbench.protoqa.check_targets(config)
PQ_QUESTIONS = dataset_input(PQ["targets"])
PQ_TARGETS_READ = csbench.datasets.read_params(DATASETS[PQ["targets"]])


PQ_GEN_MODELS = csbench.protoqa.generation_models(PQ, config["models"]["lm"])
# the generation settings with the recipe's values for those left null, and its stop strings
PQ_GEN = _pqb.generation_settings(PQ["generation"])
PQ_PREDICTIONS = csbench.protoqa.predictions_files(
    PQ, config.get("mirror"), config["models"]["lm"], PROTOQA, warn=logger.warning
)
PQ_EVAL = {
    (p, s): f"{PROTOQA}/eval/{p}/{s}.tsv" for p in PQ_PREDICTIONS for s in PQ["similarities"]
}


rule protoqa_generate:
    input:
        questions=PQ_QUESTIONS,
        model=lambda wc: model_dir(wc.model),
    output:
        samples=f"{PROTOQA}/generated/{{model}}/samples.parquet",
        meta=f"{PROTOQA}/generated/{{model}}/meta.json",
    params:
        # not `enabled` / `models` (which jobs exist), not `top` / `cut_policy` (protoqa_rank's);
        # `chunk` is part of the random stream; `stop`: the recipe's stop strings
        gen=pick(PQ_GEN, "num_samples", "temperature", "top_p", "max_new_tokens", "seed", "chunk",
                 "stop"),
        lm=lambda wc: lm_result(wc.model),
        targets=PQ_TARGETS_READ,
    log:
        "logs/protoqa/generated/{model}.log",
    benchmark:
        "benchmarks/protoqa/generated/{model}.tsv"
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
        samples=f"{PROTOQA}/generated/{{model}}/samples.parquet",
    output:
        ranked=f"{PROTOQA}/generated/{{model}}/ranked.json",
    params:
        top=PQ_GEN["top"],
        cut_policy=PQ_GEN["cut_policy"],
        recipe=PQ_GEN["recipe"],
    log:
        "logs/protoqa/generated/{model}.rank.log",
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
        questions=PQ_QUESTIONS,
    output:
        ranked=f"{PROTOQA}/trivial/ranked.json",
    params:
        top=PQ_GEN["top"],
        targets=PQ_TARGETS_READ,
    log:
        "logs/protoqa/trivial.log",
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
        questions=PQ_QUESTIONS,
        predictions=lambda wc: PQ_PREDICTIONS[wc.predictions],
        encoder_model=lambda wc: embedder_input() if wc.similarity == "embedding" else [],
    output:
        f"{PROTOQA}/eval/{{predictions}}/{{similarity}}.tsv",
    wildcard_constraints:
        similarity="exact|wordnet|embedding",
        predictions=PLAIN_NAME,
    params:
        encoder=lambda wc: embedder_spec() if wc.similarity == "embedding" else None,
        threshold=lambda wc: PQ["embedding_threshold"] if wc.similarity == "embedding" else None,
        missing=PQ["missing_questions"],
        stopword_only_match=lambda wc: (PQ["stopword_only_match"] if wc.similarity == "wordnet"
                                        else None),
        targets=PQ_TARGETS_READ,
    log:
        "logs/protoqa/eval/{predictions}/{similarity}.log",
    benchmark:
        "benchmarks/protoqa/eval/{predictions}/{similarity}.tsv"
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
        questions=PQ_QUESTIONS,
        predictions=lambda wc: PQ_PREDICTIONS[wc.predictions],
    output:
        f"{PROTOQA}/eval/{{predictions}}/issues.tsv",
    wildcard_constraints:
        predictions=PLAIN_NAME,
    params:
        targets=PQ_TARGETS_READ,
    log:
        "logs/protoqa/eval/{predictions}/issues.log",
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
        evals=list(PQ_EVAL.values()),
        meta=[f"{PROTOQA}/generated/{m}/meta.json" for m in PQ_GEN_MODELS],
    output:
        report(f"{PROTOQA}/summary.tsv", caption="../report/protoqa_summary.rst", category="ProtoQA"),
    params:
        eval_keys=list(PQ_EVAL),
        gen_models=PQ_GEN_MODELS,
        cut_policy=PQ_GEN["cut_policy"],
        recipe=PQ_GEN["recipe"],
    log:
        "logs/protoqa/summary.log",
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
    lambda: [f"{PROTOQA}/summary.tsv"]
    + [f"{PROTOQA}/eval/{p}/issues.tsv" for p in PQ_PREDICTIONS]
    + list(PQ_EVAL.values()),  # per question: the findings' intervals in RESULTS.md
)
