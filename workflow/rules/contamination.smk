# Contamination scans: benchmark items searched in pretraining corpora (exact, n-gram, semantic).
# Scatter/gather: every corpus is cut into shards (files, or byte ranges of large jsonl files) at
# DAG-build time; each shard is one job whose output survives the failure of another shard.
import csbench.config as _cont_config
import csbench.contamination.items as _cont_items
from csbench.contamination.corpus import expand_paths as _cont_expand, plan_shards as _cont_plan

CONT = "results/contamination"
# Fill the section's nested defaults here too: the top-level validator does not descend into a
# $ref'd schema with its own class (jsonschema picks the plain validator for a "$schema" resource).
_CONT_CFG = _cont_config.validate(
    config["contamination"],
    os.path.join(str(workflow.current_basedir), "..", "schemas", "contamination.schema.yaml"),
)
_CONT_LEXICAL = [m for m in _CONT_CFG["methods"] if m in ("exact", "ngram")]


def _cont_shards(corpus, kind):
    """Shard plan of a corpus (kind: lexical or semantic): list of [path, start, end] pieces."""
    cfg = _CONT_CFG["corpora"][corpus]
    mb = _CONT_CFG["shard_mb"] if kind == "lexical" else _CONT_CFG["semantic"]["shard_mb"]
    files = _cont_expand(corpus, cfg["paths"])
    return _cont_plan(files, cfg["format"], int(mb * 1e6))


_CONT_PLAN = {
    (c, k): _cont_shards(c, k) for c in _CONT_CFG["corpora"] for k in ("lexical", "semantic")
}


def _cont_tables(wildcards):
    return {
        b: data_table(*_cont_items.BENCHMARKS[b][:2]) for b in _CONT_CFG["benchmarks"]
    }


def _cont_semantic(corpus):
    wanted = _CONT_CFG["semantic"]["corpora"]
    return "semantic" in _CONT_CFG["methods"] and (wanted is None or corpus in wanted)


def _cont_shard_outputs(corpus):
    out = []
    if _CONT_LEXICAL:
        n = len(_CONT_PLAN[(corpus, "lexical")])
        out += [f"{CONT}/scan/{corpus}/lexical/{i}.parquet" for i in range(n)]
    if _cont_semantic(corpus):
        n = len(_CONT_PLAN[(corpus, "semantic")])
        out += [f"{CONT}/scan/{corpus}/semantic/{i}.parquet" for i in range(n)]
    return out


def _cont_piece_files(kind):
    def inner(wildcards):
        shard = _CONT_PLAN[(wildcards.corpus, kind)][int(wildcards.shard)]
        return sorted({p for p, _, _ in shard})

    return inner


rule contamination_probes:
    input:
        unpack(_cont_tables),
    output:
        f"{CONT}/probes.parquet",
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
        files=_cont_piece_files("lexical"),
    output:
        hits=f"{CONT}/scan/{{corpus}}/lexical/{{shard}}.parquet",
        stats=f"{CONT}/scan/{{corpus}}/lexical/{{shard}}.json",
    params:
        shard=lambda wc: _CONT_PLAN[(wc.corpus, "lexical")][int(wc.shard)],
        corpus=lambda wc: _CONT_CFG["corpora"][wc.corpus],
        methods=_CONT_LEXICAL,
        ngram=_CONT_CFG["ngram"],
        batch_bytes=_CONT_CFG["batch_kb"] * 1024,
    log:
        "logs/contamination/scan/{corpus}/lexical/{shard}.log",
    benchmark:
        "benchmarks/contamination/scan/{corpus}/lexical/{shard}.tsv"
    wildcard_constraints:
        corpus=r"[A-Za-z0-9_-]+",
    threads: 1
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
        files=_cont_piece_files("semantic"),
    output:
        f"{CONT}/scan/{{corpus}}/semantic/{{shard}}.parquet",
    params:
        shard=lambda wc: _CONT_PLAN[(wc.corpus, "semantic")][int(wc.shard)],
        corpus=lambda wc: _CONT_CFG["corpora"][wc.corpus],
        semantic=_CONT_CFG["semantic"],
        encoder=config["models"]["embedder"],
    log:
        "logs/contamination/scan/{corpus}/semantic/{shard}.log",
    benchmark:
        "benchmarks/contamination/scan/{corpus}/semantic/{shard}.tsv"
    wildcard_constraints:
        corpus=r"[A-Za-z0-9_-]+",
    threads: 2
    resources:
        mem_mb=8000,
        gpu=_CONT_CFG["semantic"]["gpu"],
    conda:
        "../../envs/lm.yaml"
    script:
        "../scripts/contamination_semantic.py"


rule contamination_gather:
    input:
        probes=f"{CONT}/probes.parquet",
        shards=lambda wc: _cont_shard_outputs(wc.corpus),
    output:
        f"{CONT}/{{benchmark}}/{{corpus}}/items.parquet",
    params:
        methods=lambda wc: [
            m for m in _CONT_CFG["methods"] if m != "semantic" or _cont_semantic(wc.corpus)
        ],
        ngram_threshold=_CONT_CFG["ngram"]["threshold"],
        semantic_threshold=_CONT_CFG["semantic"]["threshold"],
    log:
        "logs/contamination/{benchmark}/{corpus}/gather.log",
    wildcard_constraints:
        corpus=r"[A-Za-z0-9_-]+",
        benchmark="|".join(_cont_items.BENCHMARKS),
    threads: 1
    resources:
        mem_mb=2000,
        gpu=0,
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/contamination_gather.py"


def _cont_items_tables():
    return {
        f"{b}__{c}": f"{CONT}/{b}/{c}/items.parquet"
        for b in _CONT_CFG["benchmarks"]
        for c in _CONT_CFG["corpora"]
    }


rule contamination_summary:
    input:
        unpack(lambda wc: _cont_items_tables()),
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


_CONT_EFFECT_BENCH = [
    b for b in _CONT_CFG["effect"]["benchmarks"] if b in _CONT_CFG["benchmarks"]
]


def _cont_effect_inputs(wildcards):
    flags = {
        f"flags__{b}__{c}": f"{CONT}/{b}/{c}/items.parquet"
        for b in _CONT_EFFECT_BENCH
        for c in _CONT_CFG["corpora"]
    }
    results = {f"results__{m}": f"results/winowhat/{m}/items.parquet" for m in config["models"]["lm"]}
    return {**flags, **results}


rule contamination_effect:
    input:
        unpack(_cont_effect_inputs),
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


def contamination_targets():
    if not _CONT_CFG["corpora"]:
        return []
    out = list(_cont_items_tables().values()) + [f"{CONT}/summary.tsv"]
    if (
        _CONT_CFG["effect"]["enabled"]
        and _CONT_EFFECT_BENCH
        and "winowhat" in config["tasks"]
        and config["models"]["lm"]
    ):
        out.append(f"{CONT}/effect.tsv")
    return out


register_targets("contamination", contamination_targets)
