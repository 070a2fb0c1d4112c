# ProtoQA: score ranked answer lists against crowd answer clusters (exact, WordNet, embedding
# matching; Max Answers@k / Max Incorrect@k) and the sampling-based generation baseline.
import os

import yaml

import csbench.protoqa

PROTOQA = "results/protoqa"
PQ = csbench.protoqa.fill_defaults(
    config["protoqa"],
    yaml.safe_load(open(os.path.join(workflow.current_basedir, "..", "schemas", "protoqa.schema.yaml"))),
)


def protoqa_gen_models():
    g = PQ["generation"]
    if not g["enabled"]:
        return []
    names = g["models"] if g["models"] is not None else list(config["models"]["lm"])
    for n in names:
        if n not in config["models"]["lm"]:
            raise WorkflowError(f"protoqa.generation.models: {n!r} is not under models.lm")
    return names


def protoqa_predictions():
    """Predictions name -> file: the configured files plus one generated file per model."""
    out = {}
    for name, path in PQ["predictions"].items():
        if "{mirror}" in path:
            if not config.get("mirror"):
                logger.warning(f"protoqa.predictions.{name}: no mirror set, skipped ({path})")
                continue
            path = path.replace("{mirror}", str(config["mirror"]))
        out[name] = path
    for m in protoqa_gen_models():
        if f"gen-{m}" in out:
            raise WorkflowError(f"protoqa.predictions: name gen-{m} is reserved for generation")
        out[f"gen-{m}"] = f"{PROTOQA}/generated/{m}/ranked.json"
    return out


def protoqa_eval_files():
    return {(p, s): f"{PROTOQA}/eval/{p}/{s}.tsv"
            for p in protoqa_predictions() for s in PQ["similarities"]}


rule protoqa_generate:
    input:
        questions=data_table("protoqa", PQ["targets"]),
        model=lambda wc: model_dir(wc.model),
    output:
        ranked=f"{PROTOQA}/generated/{{model}}/ranked.json",
        meta=f"{PROTOQA}/generated/{{model}}/meta.json",
    params:
        gen=PQ["generation"],
        device=config["lm"]["device"],
        dtype=config["lm"]["dtype"],
    log:
        "logs/protoqa/generated/{model}.log",
    benchmark:
        "benchmarks/protoqa/generated/{model}.tsv"
    threads: 2
    resources:
        mem_mb=16000,
        gpu=1,
    conda:
        "../../envs/lm.yaml"
    script:
        "../scripts/protoqa_generate.py"


rule protoqa_eval:
    input:
        questions=data_table("protoqa", PQ["targets"]),
        predictions=lambda wc: protoqa_predictions()[wc.predictions],
    output:
        f"{PROTOQA}/eval/{{predictions}}/{{similarity}}.tsv",
    wildcard_constraints:
        predictions=r"[A-Za-z0-9._-]+",
        similarity="exact|wordnet|embedding",
    params:
        encoder=config["models"]["embedder"],
        cache_dir=EMBED_CACHE,
        threshold=PQ["embedding_threshold"],
        missing=PQ["missing_questions"],
        stopword_only_match=PQ["stopword_only_match"],
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
        questions=data_table("protoqa", PQ["targets"]),
        predictions=lambda wc: protoqa_predictions()[wc.predictions],
    output:
        f"{PROTOQA}/eval/{{predictions}}/issues.tsv",
    wildcard_constraints:
        predictions=r"[A-Za-z0-9._-]+",
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
        evals=list(protoqa_eval_files().values()),
        meta=[f"{PROTOQA}/generated/{m}/meta.json" for m in protoqa_gen_models()],
    output:
        report(f"{PROTOQA}/summary.tsv", caption="../report/protoqa_summary.rst", category="ProtoQA"),
    params:
        eval_keys=list(protoqa_eval_files()),
        gen_models=protoqa_gen_models(),
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


def protoqa_targets():
    return [f"{PROTOQA}/summary.tsv"] + [
        f"{PROTOQA}/eval/{p}/issues.tsv" for p in protoqa_predictions()
    ]


register_targets("protoqa", protoqa_targets)
