# Contamination scans: benchmark items searched in pretraining corpora (exact, n-gram, semantic).
# Scatter/gather: every corpus is cut into shards (files, or byte ranges of large jsonl files) at
# DAG-build time (csbench.contamination.workflow.Plan); each shard is one job whose output
# survives the failure of another shard.
from csbench.contamination.workflow import Plan as _ContPlan

CONT = "results/contamination"
CONT_PLAN = _ContPlan(config, WW_MODELS)  # WW_MODELS: winowhat.smk
CONT_CFG = CONT_PLAN.cfg


rule contamination_probes:
    input:
        unpack(
            lambda wc: {b: CONT_PLAN.table_path(b, data_table) for b in CONT_CFG["benchmarks"]}
        ),
    output:
        f"{CONT}/probes.parquet",
    params:
        datasets=CONT_PLAN.dataset_params(),  # how each data set's file is read
    log:
        "logs/contamination/probes.log",
    threads: 1
    resources:
        mem_mb=2000,
        gpu=0,
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/contamination_probes.py"


rule contamination_scan:
    input:
        probes=f"{CONT}/probes.parquet",
        files=lambda wc: CONT_PLAN.shard_files(wc.corpus, "lexical", wc.shard),
    output:
        hits=f"{CONT}/scan/{{corpus}}/lexical/{{shard}}.parquet",
        stats=f"{CONT}/scan/{{corpus}}/lexical/{{shard}}.json",
    params:
        shard=lambda wc: CONT_PLAN.shard(wc.corpus, "lexical", wc.shard),
        corpus=lambda wc: CONT_CFG["corpora"][wc.corpus],
        methods=CONT_PLAN.lexical,
        ngram=pick(CONT_CFG["ngram"], "n", "min_words", "max_gap"),  # threshold: gather
    log:
        "logs/contamination/scan/{corpus}/lexical/{shard}.log",
    benchmark:
        "benchmarks/contamination/scan/{corpus}/lexical/{shard}.tsv"
    wildcard_constraints:
        corpus=r"[A-Za-z0-9_-]+",
    threads: lambda wc: CONT_PLAN.scan_threads(wc.corpus, wc.shard)
    resources:
        mem_mb=3000,
        gpu=0,
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/contamination_scan.py"


rule contamination_semantic:
    input:
        probes=f"{CONT}/probes.parquet",
        files=lambda wc: CONT_PLAN.shard_files(wc.corpus, "semantic", wc.shard),
        encoder_model=embedder_input(),
    output:
        f"{CONT}/scan/{{corpus}}/semantic/{{shard}}.parquet",
    params:
        shard=lambda wc: CONT_PLAN.shard(wc.corpus, "semantic", wc.shard),
        corpus=lambda wc: CONT_CFG["corpora"][wc.corpus],
        semantic=pick(CONT_CFG["semantic"], "max_docs", "min_words"),
        encoder=embedder_spec(),
    log:
        "logs/contamination/scan/{corpus}/semantic/{shard}.log",
    benchmark:
        "benchmarks/contamination/scan/{corpus}/semantic/{shard}.tsv"
    wildcard_constraints:
        corpus=r"[A-Za-z0-9_-]+",
    threads: 2
    resources:
        mem_mb=8000,
        gpu=CONT_CFG["semantic"]["gpu"],
    conda:
        "../../envs/lm.yaml"
    script:
        "../scripts/contamination_semantic.py"


rule contamination_gather:
    input:
        probes=f"{CONT}/probes.parquet",
        shards=lambda wc: CONT_PLAN.shard_outputs(wc.corpus),
    output:
        f"{CONT}/{{benchmark}}/{{corpus}}/items.parquet",
    params:
        methods=lambda wc: CONT_PLAN.methods(wc.corpus),
        ngram_threshold=CONT_CFG["ngram"]["threshold"],
        semantic_threshold=CONT_CFG["semantic"]["threshold"],
    log:
        "logs/contamination/{benchmark}/{corpus}/gather.log",
    wildcard_constraints:
        corpus=r"[A-Za-z0-9_-]+",
        benchmark="|".join(CONT_CFG["benchmarks"]) or "(?!)",
    threads: 1
    resources:
        mem_mb=2000,
        gpu=0,
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/contamination_gather.py"


rule contamination_summary:
    input:
        unpack(lambda wc: CONT_PLAN.items_tables()),
    output:
        report(
            f"{CONT}/summary.tsv",
            caption="../report/contamination_summary.rst",
            category="Contamination",
        ),
    log:
        "logs/contamination/summary.log",
    threads: 1
    resources:
        mem_mb=1000,
        gpu=0,
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/contamination_summary.py"


rule contamination_effect:
    input:
        unpack(lambda wc: CONT_PLAN.effect_inputs()),
    params:
        random_models=[m for m in config["models"]["lm"] if MODEL_SPECS[m].random],
    output:
        report(
            f"{CONT}/effect.tsv",
            caption="../report/contamination_effect.rst",
            category="Contamination",
        ),
    log:
        "logs/contamination/effect.log",
    threads: 1
    resources:
        mem_mb=2000,
        gpu=0,
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/contamination_effect.py"


# Model-based membership signals per item text (csbench.contamination.signals), one job per
# model, then their AUROCs, the test against WinoWhat correctness and the figure.
rule contamination_signals:
    input:
        table="results/winowhat/items.parquet",
        model=lambda wc: model_dir(wc.model),
    output:
        f"{CONT}/signals/{{model}}.parquet",
    params:
        lm=lambda wc: lm_result(wc.model, prompt=False),
        signals=pick(CONT_CFG["signals"], "k", "minkpp"),
    log:
        "logs/contamination/signals/{model}.log",
    benchmark:
        "benchmarks/contamination/signals/{model}.tsv"
    wildcard_constraints:
        model=r"[A-Za-z0-9_.-]+",
    threads: 2
    resources:
        mem_mb=WW["mem_mb"],
        gpu=LM_GPU,
    conda:
        "../../envs/lm.yaml"
    script:
        "../scripts/contamination_signals.py"


rule contamination_signals_stats:
    input:
        unpack(lambda wc: CONT_PLAN.signals_stats_inputs()),
    output:
        auroc=report(f"{CONT}/signals/auroc.tsv", caption="../report/contamination_signals.rst",
                     category="Contamination"),
        mannwhitney=f"{CONT}/signals/mannwhitney.tsv",
        quartiles=f"{CONT}/signals/quartiles.tsv",
        figure=report(f"{CONT}/signals/signals.png",
                      caption="../report/contamination_signals.rst", category="Contamination"),
    params:
        models=CONT_PLAN.signals_models(),
        bootstrap=CONT_CFG["signals"]["bootstrap"],
    log:
        "logs/contamination/signals/stats.log",
    threads: 1
    resources:
        mem_mb=2000,
        gpu=0,
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/contamination_signals_stats.py"


register_targets("contamination", CONT_PLAN.targets)
