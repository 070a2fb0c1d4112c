# Raw-data layer: one download rule per source (local, verified, atomic), then
# normalisation of each source into Parquet tables under results/data/<source>/.
# No `retries:` here: csbench.fetch retries transient network errors itself; a hash mismatch,
# a missing or empty file fails once, with one message.


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
        log:
            f"logs/raw/{_src}.log",
        localrule: True
        conda:
            "../../envs/core.yaml"
        script:
            "../scripts/download.py"


rule normalise:
    input:
        unpack(normalise_inputs),
    output:
        f"{DATA}/{{source}}/{{table}}.parquet",
    log:
        "logs/data/{source}/{table}.log",
    threads: 1
    resources:
        mem_mb=4000,
        gpu=0,
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/normalise.py"


rule data:
    input:
        all_data_tables(),
