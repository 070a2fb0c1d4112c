# QADS: SQuAD 2.0 questions rewritten with WordNet synonyms chosen by WSD, WSD evaluated on the
# unified framework, extractive QA models scored with the official SQuAD 2.0 metric.
import csbench.qads.route as _qdr
import csbench.qads.verify as _qdv
import csbench.qads.workflow as _qdw

QADS = "results/qads"
QD = config["qads"]  # defaults filled by the config validation in the Snakefile
# the questions rewritten: the squad data sets qads.questions.table names, their files and the
# settings they are read with (csbench.datasets). The first is rewritten, verified, fine-tuned on
# and split by domain (results/qads/); each other is rewritten and answered (results/qads/sets/
# <name>/): the {qdir} wildcard is the set's directory prefix ("" for the first, csbench.qads.workflow).
QADS_TABLES = _qdw.check_dataset(config)
QADS_DIRS = {_qdw.set_dir(list(QADS_TABLES), n): n for n in QADS_TABLES}
# a non-empty pattern that also matches "" (an empty constraint would fall back to `.+`)
QADS_DIR_WC = "(?:" + "|".join(re.escape(d) for d in QADS_DIRS) + ")"
QADS_QUESTIONS = dataset_input(next(iter(QADS_TABLES)))
QADS_READ = dataset_params(next(iter(QADS_TABLES)))


# a set's file (input) and the settings it is read with (params), by the {qdir} wildcard
qads_set_questions = lambda wc: dataset_input(QADS_DIRS[wc.qdir])
qads_set_read = lambda wc: dataset_params(QADS_DIRS[wc.qdir])


# the first set's question selection and the set it selects from (the rest of the
# qads.questions.table list: which further sets exist, reruns none of the first set's jobs)
QADS_SELECT = {**pick(QD["questions"], "limit", "ids", "seed"), "table": next(iter(QADS_TABLES))}

qads_selection = lambda wc: QADS_SELECT if wc.qdir == "" else _qdw.ALL_QUESTIONS
QADS_SETS = ["original"] + list(QD["generation"]["modes"])
# Each rule's params name the qads settings its output depends on (docs/ARCHITECTURE.md).
# The WSD settings a disambiguation method reads (enhanced Lesk's weights; none for the others).
QD_LESK = QD["wsd"]["enhanced_lesk"]
QADS_GPU = device_gpus(QD["qa"]["device"])  # common.smk


QADS_GENERATED = {s: f"{QADS}/original.json" if s == "original" else f"{QADS}/qads-{s}.json"
                  for s in QADS_SETS}
# Human verification: returned annotation blocks found at parse time (none = unverified sets).
QD_VER = QD["verification"]
QADS_ANNOTATIONS = [str(p) for p in _qdv.returned_files(QD_VER["annotations"])]
QADS_VERIFIED = bool(QADS_ANNOTATIONS)
QADS_BLOCKS = f"{QADS}/annotation/blocks"
# The question sets QA scoring and fine-tuning read: the verified ones once blocks came back.
QADS_JSON = ({s: f"{QADS}/verified/{os.path.basename(p)}" for s, p in QADS_GENERATED.items()}
             if QADS_VERIFIED else QADS_GENERATED)
# The question sets (original, one, all) QA scores, by set directory: the first set's as
# QADS_JSON (verified once blocks came back), another set's as generated.
QADS_JSON_BY_DIR = {
    d: [QADS_JSON[s] if d == "" else f"{QADS}/{d}{os.path.basename(QADS_GENERATED[s])}"
        for s in QADS_SETS]
    for d in QADS_DIRS
}


rule qads_wsd_eval:
    input:
        tables=[data_table("wsd_eval", d) for d in QD["wsd_eval"]["datasets"]],
        encoder_model=embedder_input(),
    output:
        report(f"{QADS}/wsd_eval.tsv", caption="../report/qads_wsd_eval.rst", category="QADS"),
    params:
        wsd_eval=QD["wsd_eval"],
        lesk=QD_LESK if "enhanced_lesk" in QD["wsd_eval"]["methods"] else None,
        encoder=embedder_spec() if "enhanced_lesk" in QD["wsd_eval"]["methods"] else None,
    log:
        "logs/qads/wsd_eval.log",
    benchmark:
        "benchmarks/qads/wsd_eval.tsv"
    threads: 2
    resources:
        mem_mb=6000,
        gpu=0,
    conda:
        "../../envs/nlp.yaml"
    script:
        "../scripts/qads_wsd_eval.py"


rule qads_generate:
    input:
        questions=qads_set_questions,
        encoder_model=embedder_input(),
    output:
        subs=f"{QADS}/{{qdir}}substitutions.parquet",
        original=f"{QADS}/{{qdir}}original.json",
        one=f"{QADS}/{{qdir}}qads-one.json",
        all=f"{QADS}/{{qdir}}qads-all.json",
    wildcard_constraints:
        qdir=QADS_DIR_WC,
    params:
        questions=qads_selection,
        dataset=qads_set_read,
        candidates=QD["candidates"],
        wsd=pick(QD["wsd"], "method", "context"),
        lesk=QD_LESK if QD["wsd"]["method"] == "enhanced_lesk" else None,
        encoder=embedder_spec() if QD["wsd"]["method"] == "enhanced_lesk" else None,
        generation=QD["generation"],
    log:
        "logs/qads/{qdir}generate.log",
    benchmark:
        "benchmarks/qads/{qdir}generate.tsv"
    threads: 2
    resources:
        mem_mb=6000,
        gpu=0,
    conda:
        "../../envs/nlp.yaml"
    script:
        "../scripts/qads_generate.py"


rule qads_export_annotation:
    input:
        subs=f"{QADS}/substitutions.parquet",
        original=QADS_GENERATED["original"],
        one=f"{QADS}/qads-one.json",
    output:
        directory(QADS_BLOCKS),
    params:
        block_size=QD_VER["block_size"],
    log:
        "logs/qads/annotation/export.log",
    threads: 1
    resources:
        mem_mb=3000,
        gpu=0,
    conda:
        "../../envs/nlp.yaml"
    script:
        "../scripts/qads_export_annotation.py"


rule qads_verify:
    input:
        # the generated rows the returned blocks are checked against, by row id: not the exported
        # blocks, whose layout (qads.verification.block_size) cannot change a verified set
        questions=QADS_QUESTIONS,
        subs=f"{QADS}/substitutions.parquet",
        original=QADS_GENERATED["original"],
        one=f"{QADS}/qads-one.json",
        annotations=QADS_ANNOTATIONS,
    output:
        original=f"{QADS}/verified/original.json",
        one=f"{QADS}/verified/qads-one.json",
        all=f"{QADS}/verified/qads-all.json",
        decisions=f"{QADS}/verified/decisions.parquet",
        agreement=report(f"{QADS}/verified/agreement.tsv", caption="../report/qads_agreement.rst",
                         category="QADS"),
        summary=f"{QADS}/verified/summary.json",
    params:
        questions=QADS_SELECT,
        dataset=QADS_READ,
        modes=QD["generation"]["modes"],
    log:
        "logs/qads/verify.log",
    threads: 1
    resources:
        mem_mb=3000,
        gpu=0,
    conda:
        "../../envs/nlp.yaml"
    script:
        "../scripts/qads_verify.py"


rule qads_domains:
    input:
        questions=QADS_QUESTIONS,
        subs=f"{QADS}/substitutions.parquet",
    output:
        report(f"{QADS}/domains.tsv", caption="../report/qads_domains.rst", category="QADS"),
    params:
        questions=QADS_SELECT,
        dataset=QADS_READ,
        domains=QD["domains"],
    log:
        "logs/qads/domains.log",
    threads: 1
    resources:
        mem_mb=3000,
        gpu=0,
    conda:
        "../../envs/nlp.yaml"
    script:
        "../scripts/qads_domains.py"


# qads.qa.mem_mb times the attempt: a job retried (profiles/slurm sets `retries: 1`) after being
# killed for memory asks for more. A resource, not a param: changing it reruns nothing.
QA_MEM_MB = lambda wc, attempt: QD["qa"]["mem_mb"] * attempt  # noqa: E731


rule qads_predict:
    input:
        questions=lambda wc: QADS_JSON_BY_DIR[wc.qdir],
        model=lambda wc: model_dir(wc.model),
    output:
        preds=[f"{QADS}/{{qdir}}predictions/{{model}}.{s}.json" for s in QADS_SETS],
        na_probs=[f"{QADS}/{{qdir}}predictions/{{model}}.{s}.na_prob.json" for s in QADS_SETS],
    wildcard_constraints:
        qdir=QADS_DIR_WC,
    params:
        # not `models` (which jobs exist), `batch_size` (inference speed) or `mem_mb` (a resource)
        qa=_qdr.predict_params(QD["qa"]),  # what the job computes with (csbench.qads.route)
    log:
        "logs/qads/{qdir}predict/{model}.log",
    benchmark:
        "benchmarks/qads/{qdir}predict/{model}.tsv"
    threads: 2
    resources:
        mem_mb=QA_MEM_MB,
        gpu=QADS_GPU,
    conda:
        "../../envs/lm.yaml"
    script:
        "../scripts/qads_predict.py"


QADS_QA_MODELS = _qdw.qa_models(QD["qa"], config["models"]["qa"])
_QADS_PAIRS = [(m, s) for m in QADS_QA_MODELS for s in QADS_SETS]


rule qads_score:
    input:
        questions=lambda wc: QADS_JSON_BY_DIR[wc.qdir],
        preds=lambda wc: [f"{QADS}/{wc.qdir}predictions/{m}.{s}.json" for m, s in _QADS_PAIRS],
        na_probs=lambda wc: [f"{QADS}/{wc.qdir}predictions/{m}.{s}.na_prob.json"
                             for m, s in _QADS_PAIRS],
    output:
        report(f"{QADS}/{{qdir}}qa_scores.tsv", caption="../report/qads_qa_scores.rst",
               category="QADS"),
        per_question=f"{QADS}/{{qdir}}qa_items.tsv",  # per question: the findings' intervals
    wildcard_constraints:
        qdir=QADS_DIR_WC,
    params:
        dataset_name=lambda wc: QADS_DIRS[wc.qdir],  # the question set, named in the table
        pairs=_QADS_PAIRS,
        sets=QADS_SETS,
        random={m: MODEL_SPECS[m].random for m in config["models"]["qa"]},
        source={m: MODEL_SPECS[m].label() for m in config["models"]["qa"]},
        verified=lambda wc: QADS_VERIFIED and wc.qdir == "",
    log:
        "logs/qads/{qdir}score.log",
    threads: 1
    resources:
        mem_mb=2000,
        gpu=0,
    conda:
        "../../envs/nlp.yaml"
    script:
        "../scripts/qads_score.py"


QADS_FT = QD["finetune"]
QADS_FT_TAG = _qdw.finetune_tag(QADS_FT)
# tag -> settings of each run: the plain one and, with add_rewritten, the QADS arm (<tag>+<mode>:
# the same folds, the rewritten questions of the training articles added to the training questions)
QADS_FT_ARMS = _qdw.finetune_arms(QADS_FT)
QADS_FT_TAGS = "|".join(re.escape(t) for t in QADS_FT_ARMS)


# tag -> the question sets that run reads (trained on + scored [+ added]), in order, and whether
# one of them is the SQuAD table itself
QADS_FT_SETS = {t: _qdw.finetune_sets(arm) for t, arm in QADS_FT_ARMS.items()}
QADS_FT_FILES = {t: [s for s in sets if s != "squad"] for t, sets in QADS_FT_SETS.items()}


rule qads_finetune_fold:
    input:
        sets=lambda wc: [QADS_JSON[s] for s in QADS_FT_FILES[wc.ft_tag]],
        squad=lambda wc: ([QADS_QUESTIONS]
                          if "squad" in QADS_FT_SETS[wc.ft_tag] else []),
        model=lambda wc: model_dir(wc.model),
    output:
        scores=f"{QADS}/finetune/folds/{{model}}.{{ft_tag}}.fold{{fold}}.tsv",
        predictions=f"{QADS}/finetune/folds/{{model}}.{{ft_tag}}.fold{{fold}}.predictions.json",
    wildcard_constraints:
        fold=r"\d+",
        ft_tag=QADS_FT_TAGS,
    params:
        ft=lambda wc: QADS_FT_ARMS[wc.ft_tag],
        qa=_qdr.fold_params(QD["qa"]),  # what the job computes with (csbench.qads.route)
        questions=QADS_SELECT,
        dataset=QADS_READ,
        set_names=lambda wc: QADS_FT_FILES[wc.ft_tag],
        fold=lambda wc: int(wc.fold),
    log:
        f"logs/qads/finetune/folds/{{model}}.{{ft_tag}}.fold{{fold}}.log",
    benchmark:
        f"benchmarks/qads/finetune/folds/{{model}}.{{ft_tag}}.fold{{fold}}.tsv"
    threads: 2
    resources:
        mem_mb=QA_MEM_MB,
        gpu=QADS_GPU,
    conda:
        "../../envs/lm.yaml"
    script:
        "../scripts/qads_finetune_fold.py"


rule qads_finetune_gather:
    input:
        scores=expand(f"{QADS}/finetune/folds/{{{{model}}}}.{{{{ft_tag}}}}.fold{{k}}.tsv",
                      k=range(QADS_FT["folds"])),
        predictions=expand(f"{QADS}/finetune/folds/{{{{model}}}}.{{{{ft_tag}}}}.fold{{k}}.predictions.json",
                           k=range(QADS_FT["folds"])),
        sets=lambda wc: [QADS_JSON[s] for s in QADS_FT_FILES[wc.ft_tag]],
        squad=lambda wc: ([QADS_QUESTIONS]
                          if "squad" in QADS_FT_SETS[wc.ft_tag] else []),
        domains=f"{QADS}/domains.tsv",
    output:
        report(f"{QADS}/finetune/{{model}}.{{ft_tag}}.tsv",
               caption="../report/qads_finetune.rst", category="QADS"),
        by_domain=report(f"{QADS}/finetune/{{model}}.{{ft_tag}}.by_domain.tsv",
                         caption="../report/qads_finetune_by_domain.rst", category="QADS"),
        per_question=f"{QADS}/finetune/{{model}}.{{ft_tag}}.items.tsv",  # per question, pooled
    wildcard_constraints:
        ft_tag=QADS_FT_TAGS,
    params:
        questions=QADS_FT["questions"],
        select=QADS_SELECT,
        dataset=QADS_READ,
        set_names=lambda wc: QADS_FT_FILES[wc.ft_tag],
        trained_on=lambda wc: _qdw.trained_on(QADS_FT_ARMS[wc.ft_tag]),
        verified=QADS_VERIFIED,
    log:
        f"logs/qads/finetune/{{model}}.{{ft_tag}}.log",
    threads: 1
    resources:
        mem_mb=1000,
        gpu=0,
    conda:
        "../../envs/lm.yaml"
    script:
        "../scripts/qads_finetune_gather.py"


register_targets(
    "qads",
    lambda: [f"{QADS}/{f}" for f in ("wsd_eval.tsv", "substitutions.parquet", "domains.tsv")]
    + [f"{QADS}/{d}{f}" for d in QADS_DIRS for f in ("qa_scores.tsv", "qa_items.tsv")]
    + [f"{QADS}/{d}substitutions.parquet" for d in QADS_DIRS if d]
    + [QADS_BLOCKS]
    + ([f"{QADS}/verified/{f}" for f in ("agreement.tsv", "summary.json")] if QADS_VERIFIED else [])
    + ([f"{QADS}/finetune/{m}.{tag}{kind}.tsv" for m in config["models"]["qa"]
        for tag in QADS_FT_ARMS for kind in ("", ".by_domain", ".items")] if QADS_FT["enabled"] else []),
)
