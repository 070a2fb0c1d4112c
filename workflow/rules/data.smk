# Raw-data layer: one download rule per source (local, verified, atomic), then
# normalisation of each source into Parquet tables under results/data/<source>/.
# No `retries:` here: csbench.fetch retries transient network errors itself; a hash mismatch,
# a missing or empty file fails once, with one message.
# With a mirror, its files are the rule's inputs: editing one reruns the download (and what reads
# it); a file the mirror lacks is left out here and named by the job. The params are what the
# output depends on: the files and their hashes, and where they come from only without a mirror.


for _src in [s for s in csbench.data.SOURCES if wanted_files(config["sources"][s])]:

    rule:
        name:
            f"download_{_src}"
        input:
            mirror_inputs(_src),
        output:
            [f"{RAW}/{_src}/{f}" for f in wanted_files(config["sources"][_src])],
        params:
            source=_src,
            files=config["sources"][_src]["files"],
            remote=None if config["mirror"] else pick(config["sources"][_src], "url", "archive", "urls"),
        log:
            f"logs/raw/{_src}.log",
        localrule: True
        retries: 0  # network trouble is retried inside csbench.retry, nothing else
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
