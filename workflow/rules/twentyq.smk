# 20Q: clean the Twenty Questions data, build the overlap-free split, score LMs on yes/no
# questions (zero-shot, few-shot, without the topic) and relate NLL to topic frequency.
# The same scoring runs on any yes/no data set (twentyq.benchmarks: csqa2 or a `datasets` entry of
# kind yesno): the scoring rules take the test set's directory under results/twentyq as the {yesno}
# wildcard ("" = 20Q, "csqa2/" = CSQA2, "<name>/" = data set <name>).
import csbench.audit.workflow as _auw
import csbench.twentyq.workflow as _tqw

TWENTYQ = _tqw.ROOT
TQ = config["twentyq"]  # defaults filled by the config validation in the Snakefile
TQ_MODELS = _tqw.scoring_models(TQ, config["models"]["lm"])
TQ_REFERENCE = _tqw.reference_lm(TQ, config["models"]["lm"])
TQ_BENCHMARKS = _tqw.benchmarks(TQ, DATASETS)
TQ_NAMES = _tqw.yesno_names(DATASETS)  # twentyq and every yes/no data set
TQ_FT_TABLES = _tqw.finetune_tables(MODEL_SPECS, TQ_NAMES)  # benchmarks a finetune spec trains on


rule twentyq_clean:
    input:
        [data_table("twentyq", s) for s in TQ["splits"]],
    output:
        clean=f"{TWENTYQ}/clean.parquet",
        counts=report(f"{TWENTYQ}/cleaning_counts.tsv", caption="../report/twentyq_cleaning.rst",
                      category="20Q"),
    params:
        clean=TQ["clean"],
    log:
        "logs/twentyq/clean.log",
    threads: 1
    resources:
        mem_mb=4000,
        gpu=0,
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/twentyq_clean.py"


rule twentyq_split:
    input:
        f"{TWENTYQ}/clean.parquet",
        encoder_model=embedder_input(),
    output:
        train=f"{TWENTYQ}/split/train.parquet",
        test=f"{TWENTYQ}/split/test.parquet",
        stats=report(f"{TWENTYQ}/split/statistics.tsv", caption="../report/twentyq_statistics.rst",
                     category="20Q"),
        admission=report(f"{TWENTYQ}/split/admission_counts.tsv",
                         caption="../report/twentyq_admission.rst", category="20Q"),
    params:
        split=TQ["split"],
        encoder=embedder_spec(),
    log:
        "logs/twentyq/split.log",
    benchmark:
        "benchmarks/twentyq/split.tsv"
    threads: 2
    resources:
        mem_mb=8000,
        gpu=0,
    conda:
        "../../envs/lm.yaml"
    script:
        "../scripts/twentyq_split.py"


# A yes/no data set's test items and few-shot pool in the 20Q item schema (csbench.twentyq.yesno).
rule twentyq_dataset:
    input:
        table=lambda wc: dataset_input(wc.dataset),
        fewshot=lambda wc: _tqw.fewshot(DATASETS, wc.dataset, dataset_input),
    output:
        train=f"{TWENTYQ}/{{dataset}}/split/train.parquet",
        test=f"{TWENTYQ}/{{dataset}}/split/test.parquet",
    wildcard_constraints:
        dataset=_tqw.dataset_wildcard(TQ_NAMES),
    params:
        dataset=lambda wc: dataset_params(wc.dataset),
        fewshot=lambda wc: _tqw.fewshot(DATASETS, wc.dataset, dataset_params),
    log:
        "logs/twentyq/{dataset}/split.log",
    threads: 1
    resources:
        mem_mb=2000,
        gpu=0,
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/twentyq_dataset.py"


# The fine-tuned arm (the paper's §6.3): a benchmark's training items kept by the split rules
# against its scored test items, as a prompt/completion table that a `finetune` model spec names as
# `data: twentyq_ft/<benchmark>` (csbench.twentyq.finetune; trained by finetune_model, models.smk).
rule twentyq_finetune_data:
    input:
        train=lambda wc: f"{_tqw.bench_dir(wc.bench)}/split/train.parquet",
        test=lambda wc: f"{_tqw.bench_dir(wc.bench)}/split/test.parquet",
        encoder_model=embedder_input(),
    output:
        table=_tqw.finetune_data("{bench}"),
        admission=report(_tqw.finetune_admission("{bench}"),
                         caption="../report/twentyq_finetune_admission.rst", category="20Q"),
    wildcard_constraints:
        bench="|".join(TQ_NAMES),
    params:
        admission=TQ["finetune"],
        encoder=embedder_spec(),
    log:
        "logs/twentyq/finetune/{bench}.data.log",
    benchmark:
        "benchmarks/twentyq/finetune/{bench}.data.tsv"
    threads: 2
    resources:
        mem_mb=4000,
        gpu=0,
    conda:
        "../../envs/lm.yaml"
    script:
        "../scripts/twentyq_finetune_data.py"


rule twentyq_topic_frequency:
    input:
        test=f"{TWENTYQ}/{{yesno}}split/test.parquet",
        model=lambda wc: model_dir(TQ_REFERENCE),
    output:
        f"{TWENTYQ}/{{yesno}}topic_frequency.parquet",
    wildcard_constraints:
        yesno=_tqw.yesno_wildcard(TQ_NAMES),
    params:
        lm=lambda wc: lm_result(TQ_REFERENCE, prompt=False),  # empty contexts: no format
    log:
        "logs/twentyq/{yesno}topic_frequency.log",
    benchmark:
        "benchmarks/twentyq/{yesno}topic_frequency.tsv"
    threads: 2
    resources:
        mem_mb=16000,
        gpu=LM_GPU,
    conda:
        "../../envs/lm.yaml"
    script:
        "../scripts/twentyq_topic_frequency.py"


rule twentyq_score:
    input:
        train=f"{TWENTYQ}/{{yesno}}split/train.parquet",
        test=f"{TWENTYQ}/{{yesno}}split/test.parquet",
        freq=f"{TWENTYQ}/{{yesno}}topic_frequency.parquet",
        model=lambda wc: model_dir(wc.model),
    output:
        scored=f"{TWENTYQ}/{{yesno}}scores/{{model}}/items.parquet",
        metrics=f"{TWENTYQ}/{{yesno}}scores/{{model}}/metrics.tsv",
    wildcard_constraints:
        yesno=_tqw.yesno_wildcard(TQ_NAMES),
    params:
        # a fine-tuned model is scored in its training prompt (fine_tuned_variants), others prompted
        scoring=lambda wc: {"variants": TQ["scoring"]["fine_tuned_variants"]
                            if _tqw.is_fine_tuned(MODEL_SPECS, wc.model)
                            else TQ["scoring"]["variants"], "seed": TQ["scoring"]["seed"]},
        lm=lambda wc: lm_result(wc.model),
    log:
        "logs/twentyq/{yesno}scores/{model}.log",
    benchmark:
        "benchmarks/twentyq/{yesno}scores/{model}.tsv"
    threads: 2
    resources:
        mem_mb=16000,
        gpu=LM_GPU,
    conda:
        "../../envs/lm.yaml"
    script:
        "../scripts/twentyq_score.py"


rule twentyq_summary:
    input:
        scored=expand(f"{TWENTYQ}/{{{{yesno}}}}scores/{{model}}/items.parquet", model=TQ_MODELS),
        metrics=expand(f"{TWENTYQ}/{{{{yesno}}}}scores/{{model}}/metrics.tsv", model=TQ_MODELS),
    output:
        metrics=report(f"{TWENTYQ}/{{yesno}}metrics.tsv", caption="../report/twentyq_metrics.rst",
                       category="20Q"),
        figure=report(f"{TWENTYQ}/{{yesno}}nll_by_topic_frequency.png",
                      caption="../report/twentyq_frequency.rst", category="20Q"),
    wildcard_constraints:
        yesno=_tqw.yesno_wildcard(TQ_NAMES),
    params:
        models=TQ_MODELS,
        variant=TQ["scoring"]["figure_variant"],
        calibrated=pick(TQ["scoring"], "calibration", "bootstrap"),
    log:
        "logs/twentyq/{yesno}summary.log",
    threads: 1
    resources:
        mem_mb=2000,
        gpu=0,
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/twentyq_summary.py"


# The overlap audits (audit.smk, included next) belong to this task: `tasks` has no audit entry.
register_targets("twentyq", lambda: _tqw.targets(TQ_MODELS, TQ_BENCHMARKS, TQ_FT_TABLES)
                 + _auw.targets(AUDITS))
