# Raw-data layer: one download rule per source (local, retried, verified, atomic), then
# normalisation of each source into Parquet tables under results/data/<source>/.


for _src in [s for s in csbench.data.SOURCES if wanted_files(config["sources"][s])]:

    rule:
        name:
            f"download_{_src}"
        output:
            [f"{RAW}/{_src}/{f}" for f in wanted_files(config["sources"][_src])],
        params:
            source=_src,
            cfg=config["sources"][_src],
            mirror=config["mirror"],
            outdir=f"{RAW}/{_src}",
        log:
            f"logs/raw/{_src}.log",
        localrule: True
        retries: 3
        conda:
            "../../envs/core.yaml"
        script:
            "../scripts/download.py"


def _normalise_inputs(wildcards):
    files = source_tables(wildcards.source).get(wildcards.table)
    if files is None:
        raise WorkflowError(f"source {wildcards.source!r} has no table {wildcards.table!r}")
    return {f: f"{RAW}/{wildcards.source}/{f}" for f in files}


rule normalise:
    input:
        unpack(_normalise_inputs),
    output:
        f"{DATA}/{{source}}/{{table}}.parquet",
    log:
        "logs/data/{source}/{table}.log",
    resources:
        mem_mb=4000,
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/normalise.py"


def all_data_tables():
    return [
        f"{DATA}/{s}/{t}.parquet" for s in csbench.data.SOURCES for t in source_tables(s)
    ]


rule data:
    input:
        all_data_tables(),
