# RESULTS.md (and results.json, its numbers machine-readable): the headline numbers of every task
# in `tasks`, read from the result tables those tasks register (register_targets), next to the
# published anchors of resources/published_anchors.tsv.
# Included last: it reads the other tasks' registered targets at parse time.
import csbench.results as _res

RESULTS_DIR = "results"
RESULTS_SUMMARY = f"{RESULTS_DIR}/summary"
RESULTS_ANCHORS = config["results"]["anchors"] or os.path.join(
    workflow.basedir, "resources", "published_anchors.tsv")
RESULTS_TASKS = [t for t in config["tasks"] if t in TARGETS and t != "results"]
RESULTS_TARGETS = {t: TARGETS[t]() for t in RESULTS_TASKS}
RESULTS_PLANNED = _res.planned(RESULTS_TARGETS)


rule results:
    input:
        # every table a task registered, and whatever else its report reads (e.g. gold labels)
        unpack(lambda wc: {t: sorted({p for p in ts if p.endswith(".tsv")}
                                     | {p for ps in _res.inputs_of(t, ts).values() for p in ps})
                           for t, ts in RESULTS_TARGETS.items()}),
        anchors=RESULTS_ANCHORS,
    output:
        markdown=report(f"{RESULTS_DIR}/RESULTS.md", caption="../report/results.rst", category="Results"),
        json=f"{RESULTS_DIR}/results.json",
        summary=[report(f"{RESULTS_SUMMARY}/{name}", caption=f"../report/results_{key}.rst",
                        category="Results") for key, name in RESULTS_PLANNED.items()],
    params:
        configured=config["tasks"],
        summary_keys=list(RESULTS_PLANNED),
        tables={t: _res.inputs_of(t, ts) for t, ts in RESULTS_TARGETS.items()},
        settings={"winowhat": {"subset": config["winowhat"]["subset"]},  # section settings
                  "protoqa": {"bootstrap": config["protoqa"]["bootstrap"]},
                  "qads": {"bootstrap": config["qads"]["bootstrap"]}},
    log:
        "logs/results.log",
    threads: 1
    resources:
        mem_mb=2000,
        gpu=0,
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/results.py"


register_targets("results", lambda: [f"{RESULTS_DIR}/RESULTS.md", f"{RESULTS_DIR}/results.json"])
