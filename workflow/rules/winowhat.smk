# WinoWhat: WinoGrande, WSC and any winograd data set scored by partial evaluation, original vs
# paraphrased, per common-sense category, with the shared LM scoring engine (csbench.lm). One scoring job per
# model and shard (config lm.shards): a SLURM profile spreads a model over several GPUs.
import csbench.winowhat.workflow as _ww

WINOWHAT = "results/winowhat"
WW = config["winowhat"]  # defaults filled by the config validation in the Snakefile
WW_SHARDS = int(config["lm"]["shards"])
WW_MODELS = _ww.models(config, WW)
WW_SETS = _ww.sets(WW, DATASETS)  # parse time: every name a winograd data set


rule winowhat_items:
    input:
        unpack(lambda wc: _ww.inputs(WW, WW_SETS, data_table, dataset_input)),
    output:
        table=f"{WINOWHAT}/items.parquet",
        flagged=report(f"{WINOWHAT}/flagged_paraphrases.tsv",
                       caption="../report/winowhat_flagged.rst", category="WinoWhat"),
        templates=directory(f"{WINOWHAT}/samples"),
    params:
        samples=WW["samples"],
        # each set read with what its table depends on besides its file (read_params)
        datasets={n: dataset_params(n) for n in WW_SETS},
    log:
        "logs/winowhat/items.log",
    threads: 1
    resources:
        mem_mb=2000,
        gpu=0,
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/winowhat_items.py"


rule winowhat_score:
    input:
        table=f"{WINOWHAT}/items.parquet",
        model=lambda wc: model_dir(wc.model),
    output:
        f"{WINOWHAT}/{{model}}/shards/{{shard}}-of-{WW_SHARDS}.parquet",
    params:
        shards=WW_SHARDS,
        lm=lambda wc: lm_result(wc.model),
    log:
        f"logs/winowhat/{{model}}/score-{{shard}}-of-{WW_SHARDS}.log",
    benchmark:
        f"benchmarks/winowhat/{{model}}/score-{{shard}}-of-{WW_SHARDS}.tsv"
    threads: 2
    resources:
        mem_mb=WW["mem_mb"],
        gpu=LM_GPU,
    conda:
        "../../envs/lm.yaml"
    script:
        "../scripts/winowhat_score.py"


rule winowhat_gather:
    input:
        expand(f"{WINOWHAT}/{{{{model}}}}/shards/{{shard}}-of-{WW_SHARDS}.parquet",
               shard=range(WW_SHARDS)),
    output:
        f"{WINOWHAT}/{{model}}/items.parquet",
    log:
        "logs/winowhat/{model}/gather.log",
    threads: 1
    resources:
        mem_mb=2000,
        gpu=0,
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/winowhat_gather.py"


rule winowhat_stats:
    input:
        expand(f"{WINOWHAT}/{{model}}/items.parquet", model=WW_MODELS),
    output:
        accuracy=report(f"{WINOWHAT}/accuracy.tsv", caption="../report/winowhat_accuracy.rst",
                        category="WinoWhat"),
        mcnemar=report(f"{WINOWHAT}/mcnemar.tsv", caption="../report/winowhat_mcnemar.rst",
                       category="WinoWhat"),
    params:
        models=WW_MODELS,
        bootstrap=WW["bootstrap"],
    log:
        "logs/winowhat/stats.log",
    threads: 1
    resources:
        mem_mb=4000,
        gpu=0,
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/winowhat_stats.py"


rule winowhat_figure:
    input:
        f"{WINOWHAT}/accuracy.tsv",
    output:
        report(f"{WINOWHAT}/accuracy.png", caption="../report/winowhat_figure.rst",
               category="WinoWhat"),
    params:
        subset=WW["subset"],
    log:
        "logs/winowhat/figure.log",
    threads: 1
    resources:
        mem_mb=2000,
        gpu=0,
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/winowhat_figure.py"


register_targets(
    "winowhat",
    lambda: [f"{WINOWHAT}/{x}" for x in ("accuracy.tsv", "mcnemar.tsv", "accuracy.png",
                                         "flagged_paraphrases.tsv")],
)
