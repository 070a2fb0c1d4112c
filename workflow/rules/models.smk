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


rule models:
    input:
        sorted({model_dir(m) for m in config["models"]["lm"]}),  # weights specs share one
        [model_dir(m) for m in config["models"]["qa"]],
        embedder_input(),
