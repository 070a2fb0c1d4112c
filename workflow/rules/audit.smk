# Train/test overlap audits (config `audits:`): nearest training item per test item under the
# encoder (FAISS), exact/normalised duplicates, top pairs under trigram/BM25/embedding/WordNet,
# and a figure of the top-1 similarity distributions. Targets are built by the twentyq task.
import csbench.audit.workflow as _auw

AUDIT = _auw.ROOT
AUDITS = _auw.audit_config(config)
AUDIT_NAMES = _auw.enabled(AUDITS)
AUDIT_INPUTS = _auw.inputs(AUDITS, csbench.data.SOURCES, data_table, config["datasets"])
AUDIT_READS = _auw.dataset_reads(AUDITS, config["datasets"])  # sides that are data sets
AUDIT_METHODS = _auw.METHODS


rule audit_run:
    input:
        unpack(lambda wc: AUDIT_INPUTS[wc.name]),
        encoder_model=embedder_input(),
    output:
        top1=f"{AUDIT}/{{name}}/top1.parquet",
        duplicates=report(f"{AUDIT}/{{name}}/duplicates.tsv", caption="../report/audit_duplicates.rst",
                          category="Audit", subcategory="{name}"),
        summary=f"{AUDIT}/{{name}}/summary.tsv",
        pairs=[report(f"{AUDIT}/{{name}}/top_pairs.{m}.tsv", caption=f"../report/audit_pairs.rst",
                      category="Audit", subcategory="{name}") for m in AUDIT_METHODS],
    params:
        # not `enabled` (which audits exist) nor the search block sizes (speed only)
        audit=lambda wc: pick(AUDITS[wc.name], "train", "test", "id_field", "text_fields",
                              "short_field", "methods", "top_k", "search", "trigram_max_df"),
        encoder=lambda wc: AUDITS[wc.name]["encoder"] or embedder_spec(),
        methods=AUDIT_METHODS,
        datasets=lambda wc: AUDIT_READS[wc.name],
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
        top1=expand(f"{AUDIT}/{{name}}/top1.parquet", name=AUDIT_NAMES),
        summaries=expand(f"{AUDIT}/{{name}}/summary.tsv", name=AUDIT_NAMES),
    output:
        summary=report(f"{AUDIT}/summary.tsv", caption="../report/audit_summary.rst", category="Audit"),
        figure=report(f"{AUDIT}/top1_similarity.png", caption="../report/audit_top1.rst", category="Audit"),
    params:
        names=AUDIT_NAMES,
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
