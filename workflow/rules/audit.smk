# Train/test overlap audits (config `audits:`): nearest training item per test item under the
# encoder (FAISS), exact/normalised duplicates, top pairs under trigram/BM25/embedding/WordNet,
# and a figure of the top-1 similarity distributions. Targets are built by the twentyq task.
import os as _os

from csbench.config import validate as _validate_section

AUDIT = "results/audit"


def _audit_config():
    """Built-in audits with the user's keys laid over them, then every entry's defaults filled."""
    import yaml

    path = _os.path.join(workflow.basedir, "workflow", "schemas", "audits.schema.yaml")
    schema = yaml.safe_load(open(path))
    generic = {k: v["default"] for k, v in schema["additionalProperties"]["properties"].items()}
    user = config.setdefault("audits", {})
    for name, sub in schema["properties"].items():
        given = user.get(name) or {}
        merged = dict(sub["default"])
        # keys left at the generic default (filled by an earlier validation) keep the built-in value
        merged.update({k: v for k, v in given.items() if not (k in merged and v == generic.get(k))})
        user[name] = merged
    audits = _validate_section(user, path)
    for name, a in audits.items():
        if a["enabled"] and not (a["train"] and a["test"]):
            raise WorkflowError(f"audits.{name}: train and test must be set")
    return audits


AUDITS = _audit_config()
AUDIT_METHODS = ("trigram", "bm25", "embedding", "wordnet")


def enabled_audits():
    return [n for n, a in AUDITS.items() if a["enabled"]]


def audit_table(ref, where):
    """`<source>:<table>` -> the normalised table's path; anything else is a file path."""
    if ":" in ref and ref.split(":", 1)[0] in csbench.data.SOURCES:
        source, table = ref.split(":", 1)
        return data_table(source, table)
    if not ref:
        raise WorkflowError(f"{where} is empty")
    return ref


def audit_inputs(wildcards):
    if wildcards.name not in AUDITS:
        raise WorkflowError(f"no audit {wildcards.name!r} under audits:")
    a = AUDITS[wildcards.name]
    return {"train": audit_table(a["train"], f"audits.{wildcards.name}.train"),
            "test": audit_table(a["test"], f"audits.{wildcards.name}.test")}


rule audit_run:
    input:
        unpack(audit_inputs),
    output:
        top1=f"{AUDIT}/{{name}}/top1.parquet",
        duplicates=report(f"{AUDIT}/{{name}}/duplicates.tsv", caption="../report/audit_duplicates.rst",
                          category="Audit", subcategory="{name}"),
        summary=f"{AUDIT}/{{name}}/summary.tsv",
        pairs=[report(f"{AUDIT}/{{name}}/top_pairs.{m}.tsv", caption=f"../report/audit_pairs.rst",
                      category="Audit", subcategory="{name}") for m in AUDIT_METHODS],
    params:
        audit=lambda wc: AUDITS[wc.name],
        encoder=lambda wc: AUDITS[wc.name]["encoder"] or config["models"]["embedder"],
        cache=EMBED_CACHE,
        methods=AUDIT_METHODS,
    log:
        f"logs/audit/{{name}}.log",
    benchmark:
        f"benchmarks/audit/{{name}}.tsv"
    threads: 2
    resources:
        mem_mb=12000,
        gpu=0,
    conda:
        "../../envs/lm.yaml"
    script:
        "../scripts/audit_run.py"


rule audit_summary:
    input:
        top1=expand(f"{AUDIT}/{{name}}/top1.parquet", name=enabled_audits()),
        summaries=expand(f"{AUDIT}/{{name}}/summary.tsv", name=enabled_audits()),
    output:
        summary=report(f"{AUDIT}/summary.tsv", caption="../report/audit_summary.rst", category="Audit"),
        figure=report(f"{AUDIT}/top1_similarity.png", caption="../report/audit_top1.rst", category="Audit"),
    params:
        names=enabled_audits(),
    log:
        "logs/audit/summary.log",
    threads: 1
    resources:
        mem_mb=2000,
        gpu=0,
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/audit_summary.py"


def audit_targets():
    if not enabled_audits():
        return []
    per = [f"{AUDIT}/{n}/{f}" for n in enabled_audits()
           for f in ["top1.parquet", "duplicates.tsv"] + [f"top_pairs.{m}.tsv" for m in AUDIT_METHODS]]
    return per + [f"{AUDIT}/summary.tsv", f"{AUDIT}/top1_similarity.png"]
