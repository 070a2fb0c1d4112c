# Model materialisation: every configured model becomes a local directory under
# resources/models/<name>/ so GPU jobs on offline nodes need nothing else.


rule materialise_model:
    output:
        directory(f"{MODELS}/{{model}}"),
    params:
        spec=lambda wc: model_spec(wc.model),
        where=lambda wc: model_where(wc.model),
    log:
        "logs/models/{model}.log",
    localrule: True
    # network trouble is retried inside csbench.retry; a wrong hash, version or file fails once,
    # also under a profile that retries jobs (profiles/slurm: retries: 1)
    retries: 0
    resources:
        # GGUF conversion holds the fp32 model and the mapped GGUF file: Qwen2.5-Coder-1.5B
        # (1.1 GB Q4_K_M -> 7.1 GB fp32) peaked at 9.1 GB resident (docs/models.md)
        mem_mb=12000,
    conda:
        "../../envs/lm.yaml"
    script:
        "../scripts/materialise_model.py"


# Fine-tuned causal LMs (`{finetune: {base, data, ...}}` specs, csbench.finetune): trained once
# from the base entry's directory and a normalised data table into resources/models/<name>/, read
# by every task like any other model. Its params are exactly the training settings and the
# device; its inputs the base model and the tables, so it reruns only when one of them changes.
ruleorder: finetune_model > materialise_model


rule finetune_model:
    input:
        base=lambda wc: model_dir(MODEL_SPECS[wc.model].ref),
        data=lambda wc: finetune_table(wc.model, "data"),
        dev=lambda wc: finetune_table(wc.model, "dev"),
    output:
        directory(f"{MODELS}/{{model}}"),
    wildcard_constraints:
        model=FINETUNED or "(?!)",  # no fine-tuned model configured: matches nothing
    params:
        train=lambda wc: finetune_settings(config, wc.model),
        device=config["lm"]["device"],
    log:
        "logs/models/{model}.log",
    benchmark:
        "benchmarks/models/{model}.tsv"
    retries: 0
    threads: config["finetune"]["threads"]
    resources:
        mem_mb=config["finetune"]["mem_mb"],
        gpu=LM_GPU,
    conda:
        "../../envs/lm.yaml"
    script:
        "../scripts/finetune_model.py"


rule models:
    input:
        sorted({model_dir(m) for m in config["models"]["lm"]}),  # weights specs share one
        [model_dir(m) for m in config["models"]["qa"]],
        embedder_input(),
