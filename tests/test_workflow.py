"""Integration: run the whole demo DAG in a scratch directory, then check incremental reruns,
the report and the linter."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from demo_runs import NOT_REPEATED, REPO, SNAKEMAKE, checked, smk_cmd

pytestmark = pytest.mark.integration


def smk(workdir: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    cmd, env = smk_cmd(workdir, *args)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if check:
        checked(cmd, proc)
    return proc


def planned_rules(proc: subprocess.CompletedProcess) -> dict[str, int]:
    """Parse the 'Job stats' table of a dry run into {rule: count}."""
    text = proc.stdout + proc.stderr
    stats: dict[str, int] = {}
    if "Job stats:" not in text:
        return stats
    table = text.split("Job stats:", 1)[1]
    for line in table.splitlines()[3:]:
        m = re.match(r"^(\S+)\s+(\d+)\s*$", line)
        if not m:
            if stats:
                break
            continue
        if m.group(1) != "total":
            stats[m.group(1)] = int(m.group(2))
    return stats


def rules_run(work: Path) -> dict[str, int]:
    """{rule: jobs} of a background demo run (its Job stats table, tests/demo_runs.py)."""
    text = "".join(work.with_name(work.name + ext).read_text(errors="replace")
                   for ext in (".out", ".err"))
    return planned_rules(subprocess.CompletedProcess([], 0, text, ""))


@pytest.fixture(scope="module")
def demo_runs(demo_background):
    """The finished demo and the determinism test's second fresh run in another directory: both
    started in the background at the first test of the run (tests/demo_runs.py,
    tests/conftest.py), side by side with each other and the unit tests."""
    return demo_background.both()


@pytest.fixture(scope="module")
def demo_run(demo_background):
    """The finished demo (the second run may still be going)."""
    return demo_background.first()


# The two tests that need no demo come first: they run while the demo is still running.


def test_report_captions_render_as_plain_text():
    """Every caption is reStructuredText rendered by docutils for the report: no docutils warnings,
    and no link the text did not mean (``Answers@1/3`` renders as a mailto: link unless quoted)."""
    from docutils.core import publish_parts

    captions = sorted((REPO / "workflow" / "report").glob("*.rst"))
    assert captions
    for rst in captions:
        html = publish_parts(rst.read_text(), writer_name="html",
                             settings_overrides={"report_level": 5})["body"]
        assert "<a " not in html and "system-message" not in html, (rst.name, html[:400])


def test_lint_is_clean():
    proc = subprocess.run([SNAKEMAKE, "--lint", "--snakefile", str(REPO / "Snakefile"),
                           "--directory", str(REPO)], capture_output=True, text=True,
                          env=dict(os.environ, NLTK_DATA=str(REPO / "resources/nltk_data")))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "Lints for rule" not in proc.stdout + proc.stderr


def test_demo_dag_completes_and_is_up_to_date(demo_run):
    proc = smk(demo_run, "-n")
    assert planned_rules(proc) == {}, proc.stdout[-3000:]
    assert (demo_run / "results").is_dir()


def test_every_configured_demo_task_produced_outputs(demo_run):
    cfg = yaml.safe_load((REPO / "resources/demo/config.yaml").read_text())
    tasks = cfg.get("tasks") or yaml.safe_load((REPO / "config.yaml").read_text())["tasks"]
    produced = {p.name for p in (demo_run / "results").iterdir()}
    expected = {"twentyq": "twentyq", "protoqa": "protoqa", "winowhat": "winowhat", "qads": "qads",
                "contamination": "contamination", "results": "RESULTS.md"}
    from importlib import import_module  # noqa: F401  (keeps the check data-driven below)

    smk_text = {p.stem: p.read_text() for p in (REPO / "workflow/rules").glob("*.smk")}
    for task in tasks:
        registered = any(f'register_targets("{task}"' in t for t in smk_text.values())
        if registered:
            assert expected[task] in produced, f"task {task} produced nothing under results/"


def rules_of(smk_name: str) -> set[str]:
    text = (REPO / "workflow" / "rules" / smk_name).read_text()
    return set(re.findall(r"^rule (\w+):", text, re.M))


def test_changing_one_task_parameter_reruns_only_that_task(demo_run, tmp_path):
    change = {"winowhat": {"bootstrap": {"n": 321}}}
    got = rerun_sets_in_parallel(demo_run, REPO / "resources/demo/config.yaml", {"n": change},
                                 tmp_path)["n"]
    planned = got.get("run")
    assert planned, f"changing winowhat.bootstrap.n should rerun the WinoWhat statistics: {got}"
    # results (RESULTS.md) reads every task's tables, so it follows any of them
    assert set(planned) - {"all", "results"} <= rules_of("winowhat.smk"), planned


def test_per_item_model_scores_carry_the_provenance(demo_run):
    import pandas as pd

    files = sorted((demo_run / "results" / "twentyq").rglob("scores/*/items.parquet")) + \
        sorted((demo_run / "results" / "winowhat").glob("*/items.parquet"))
    assert len(files) >= 3, files
    for f in files:
        df = pd.read_parquet(f)
        assert {"model", "random_model", "model_source", "model_sha256"} <= set(df.columns), f
        # a fine-tuned model names its base's source after the training data
        assert df["model_source"].str.match(r"(pypi:|finetune:.*=pypi:)").all(), f
        # what computed them: the demo's lm settings (device and dtype auto: fp32 on a CPU)
        pairs = set(zip(df["compute_device"], df["compute_dtype"]))
        assert all((d, t) == ("cpu", "float32") or (d.startswith("cuda") and t == "bfloat16")
                   for d, t in pairs), (f, pairs)


def test_report_builds(demo_run):
    smk(demo_run, "--report", str(demo_run / "report.html"))
    html = (demo_run / "report.html").read_text(errors="replace")
    assert len(html) > 10_000


# Columns and JSON keys that record time, not results: left out of the determinism comparison
# (cpu_s, wall_s, encode_s, seconds, the provenance's creation time).
TIMING_COLUMNS = re.compile(r"_s$|^seconds$|^created$")


def without_timing(obj):
    if isinstance(obj, dict):
        return {k: without_timing(v) for k, v in obj.items() if not TIMING_COLUMNS.search(str(k))}
    if isinstance(obj, list):
        return [without_timing(v) for v in obj]
    return obj
DETERMINISM_SUFFIXES = (".parquet", ".tsv", ".json", ".jsonl", ".csv", ".md")


def result_files(root: Path) -> dict[str, Path]:
    return {p.relative_to(root).as_posix(): p for p in sorted((root / "results").rglob("*"))
            if p.is_file() and p.name.endswith(DETERMINISM_SUFFIXES)}


def comparable(path: Path):
    """A result file as compared across runs: tables without timing columns, other files as bytes."""
    import pandas as pd

    if path.suffix in (".parquet", ".tsv"):
        try:
            df = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path, sep="\t")
        except pd.errors.EmptyDataError:
            return "empty"
        return df.drop(columns=[c for c in df.columns if TIMING_COLUMNS.search(str(c))])
    if path.suffix == ".json":
        return json.dumps(without_timing(json.loads(path.read_text())), sort_keys=True)
    return path.read_bytes()


# --- Exact partial rebuilds: every config key, changed on the finished demo, reruns exactly the
# rules its schema entry declares (x-reruns) and what reads their outputs, nothing else.

SCHEMAS = REPO / "workflow" / "schemas"


def nested(key: str, value) -> dict:
    out = value
    for part in reversed(key.split(".")):
        out = {part: out}
    return out


def get(cfg: dict, key: str):
    for part in key.split("."):
        cfg = cfg[part]
    return cfg


def changed_value(key: str, schema: dict, current):
    """A valid value other than ``current``, from the key's schema."""
    types = schema.get("type")
    types = types if isinstance(types, list) else [types]
    enum = schema.get("enum")
    if enum:
        return next(v for v in enum if v != current)
    if "array" in types and current is not None:
        if len(current) > 1:
            return list(current)[:-1]
        items = schema.get("items", {}).get("enum")
        return list(current) + [next(v for v in items if v not in current) if items else "x"]
    if "boolean" in types:
        return not current
    if "integer" in types:
        if current is None or isinstance(current, str):
            return max(schema.get("minimum", 1), 1) + 1
        top = schema.get("maximum")
        return current + 1 if top is None or current < top else current - 1
    if "number" in types:
        if current is None:
            return 0.5
        top = schema.get("maximum", schema.get("exclusiveMaximum"))
        return round(current * 0.5, 6) if top is not None and current >= top * 0.9 else current + 0.05
    raise AssertionError(f"{key}: no generic change for type {types}; add it to CHANGES")


def data_set_changes(key: str, tmp: Path) -> dict:
    """A ``datasets.*`` key's changes: set name -> new value, on the demo's winograd set (read by
    WinoWhat and the contamination scan), its yes/no set (20Q, the scan, the demo_sets audit) and
    the built-in sets ProtoQA and QADS read (protoqa_dev, squad_v2_dev; a row filter also on the
    built-in wsc, read by WinoWhat and the scan); a kind on the demo's
    squad set, which the scan and the audit read (both search any kind; QADS's list drops it with
    the change, DATA_SET_ALSO)."""
    import shutil

    leaf = key.split(".", 2)[2]
    if leaf == "kind":  # a JSON file: no header to check against the new kind's roles
        return {"demo_squad": "protoqa"}
    if leaf == "path":
        out = {}
        for name, file in (("demo_wino", "datasets/winograd.csv"),
                           ("demo_yesno", "datasets/yesno.tsv"),
                           ("protoqa_dev", "mirror/protoqa/dev.crowdsourced.jsonl"),
                           ("squad_v2_dev", "mirror/squad_v2/dev-v2.0.json")):
            copy = tmp / "datasets" / Path(file).name  # the same rows in another file: an input
            copy.parent.mkdir(exist_ok=True)
            shutil.copy(REPO / "resources/demo" / file, copy)
            out[name] = str(copy)
        return out
    protoqa_columns = {"id": "id", "question": "question", "answers": "cluster_answers",
                       "counts": "cluster_counts"}  # its normalised table read in the columns form
    return {"columns": {"demo_wino": {"categories": "note"}, "demo_yesno": {"topic": "note"},
                        "protoqa_dev": protoqa_columns},
            "settings.limit": {"demo_wino": 3, "demo_yesno": 3, "protoqa_dev": 3, "squad_v2_dev": 5},
            "settings.seed": {"demo_wino": 1, "demo_yesno": 1},
            # a row filter on the sets each reader reads (protoqa_dev and squad_v2_dev: on the
            # columns of their normalised tables), and the built-in WSC273 filter off on wsc
            "settings.where": {"demo_wino": {"kinds": "physical"}, "demo_yesno": {"part": "test"},
                               "protoqa_dev": {"id": "r1q1"}, "squad_v2_dev": {"is_impossible": False},
                               "wsc": None},
            "settings.fewshot": {"demo_yesno": "csqa2_train"}}[leaf]


# A data set change that needs another key changed with it: demo_squad of another kind leaves
# QADS's list (which reads squad sets only) and stays in the scan and the audit, which read any kind.
DATA_SET_ALSO = {"datasets.*.kind@demo_squad": {"qads": {"questions": {"table": "squad_v2_dev"}}}}


# Keys whose generic change is not a valid or meaningful one: the change made instead.
def special_changes(work: Path, tmp: Path) -> dict:
    import shutil

    user_csv = tmp / "user.csv"
    user_csv.write_text("sentence,paraphrased_sentence,option1,option2,answer\n")
    annotations = tmp / "annotations"  # the same returned blocks, elsewhere
    shutil.copytree(REPO / "resources/demo/qads_annotations", annotations)
    anchors = tmp / "anchors.tsv"
    shutil.copy(REPO / "resources/published_anchors.tsv", anchors)
    mirror = (work / "resources/demo/mirror").resolve()
    out = {
        "tasks": ["twentyq", "protoqa", "winowhat", "qads", "results"],
        "mirror": str(mirror),  # the same files by another path: a mirror's path is an input
        "nltk_data": str(REPO / "resources/nltk_data"),
        "cache_dir": "results/cache-elsewhere",
        "models.lm": {"smollm2-135m": "random:tiny-gpt2"},
        "models.qa": {"tiny-bert-qa-2": "random:tiny-bert-qa"},
        "models.embedder": "hf:sentence-transformers/all-mpnet-base-v2",
        "lm.batch_size": 3,
        "lm.device": "cpu",
        "lm.system_instruction": "Answer briefly.",
        "qads.qa.device": "cuda",
        "winowhat.models": ["smollm2-135m"],
        "contamination.signals.models": ["smollm2-135m"],
        "twentyq.scoring.reference_lm": "smollm2-135m",
        "winowhat.user_files.winogrande_test": str(user_csv),
        "winowhat.user_files.wsc": str(user_csv),
        "protoqa.predictions": {"again": "{mirror}/protoqa/dev.predictions.demo.json"},
        "protoqa.targets": ["demo_protoqa", "protoqa_dev"],  # the predictions files answer the first
        "protoqa.generation.models": [],
        "twentyq.scoring.models": [],
        "twentyq.scoring.figure_variant": "few_shot",
        "audits.*.train": "csqa2:dev",
        "audits.*.test": "csqa2:dev",
        "audits.*.id_field": None,
        "audits.*.text_fields": ["question", "topic_prompt"],
        "audits.*.short_field": None,
        "audits.*.encoder": "all-MiniLM-L6-v2",
        "qads.questions.table": "demo_squad",  # the demo's user squad set
        "qads.questions.ids": ["x"],
        "qads.candidates.mwes": ["in order to"],
        "qads.candidates.spacy_model": "en_core_web_sm",
        "qads.wsd.enhanced_lesk.relations": ["hypernyms"],
        "qads.verification.annotations": str(annotations),
        "qads.qa.models": [],
        "qads.finetune.train_on": "all",
        "qads.finetune.score_on": ["one", "original"],
        "qads.finetune.add_rewritten": "all",  # the demo trains on `one` already
        "results.anchors": str(anchors),
        "contamination.corpora": {"books": {"paths": ["resources/demo/corpus/books/book*"]}},
        "contamination.methods": ["exact", "semantic"],  # the lexical scan loses ngram
        "contamination.semantic.shard_mb": 0.0001,  # the books corpus cut into more shards
        "contamination.semantic.corpora": ["books", "web"],
    }
    for source in ("twentyq", "protoqa", "winogrande", "wsc273", "winowhat", "squad_v2", "csqa2",
                   "com2sense", "wsd_eval"):
        out[f"sources.{source}.url"] = "https://example.org/elsewhere/"
        out[f"sources.{source}.urls"] = {"x": "https://example.org/x"}
    return out


# Keys the demo's configuration leaves without effect (their declared rules do not run, or the
# change cannot apply there): only "nothing extra reruns" is checked for them.
INERT = {
    **{f"sources.{s}.{k}": "the demo reads a mirror: where files come from is not used"
       for s in ("twentyq", "protoqa", "winogrande", "wsc273", "winowhat", "squad_v2", "csqa2",
                 "com2sense", "wsd_eval") for k in ("url", "archive", "urls")},
    "twentyq.scoring.reference_lm": "the demo has one LM: its reference LM is that model already",
    "winowhat.models": "the demo scores one LM in winowhat (winowhat.models: [smollm2-135m]) already",
    "contamination.signals.models": "the demo computes the signals of one LM "
                                    "(contamination.signals.models: [smollm2-135m]) already",
    "twentyq.scoring.models": "the demo has one LM: scoring none drops the summary instead",
    "contamination.effect.enabled": "no random LM in the demo: the effect table is not built",
    "contamination.effect.benchmarks": "no random LM in the demo: the effect table is not built",
    "datasets.*.settings.seed": "used only with settings.limit, which the demo's sets leave null",
    "audits.*.trigram_max_df": "trigram_max_df 1.0 -> 0.5 keeps the demo audit's trigram pairs",
}


class RerunWorkers:
    """Two warm ``tests/rerun_sets.py --serve`` processes (CI has 2 cores), shared by every rerun
    test of this module: Snakemake, csbench and the schema files are loaded once per process, not
    once per test. Each keeps its stderr in a file that a failure quotes."""

    def __init__(self, logs: Path, parts: int = 2):
        self.logs, self.parts, self.procs = logs, parts, []

    def start(self) -> list:
        if not self.procs:
            env = dict(os.environ, NLTK_DATA=str(REPO / "resources/nltk_data"), HF_HUB_OFFLINE="1")
            for i in range(self.parts):
                with open(self.logs / f"worker-{i}.log", "w") as err:
                    self.procs.append(subprocess.Popen(
                        [sys.executable, str(REPO / "tests/rerun_sets.py"), "--serve"], env=env,
                        text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err))
        return self.procs

    def failure(self, i: int) -> str:
        return (self.logs / f"worker-{i}.log").read_text()[-4000:]

    def close(self) -> None:
        for p in self.procs:
            p.stdin.close()
        for p in self.procs:
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs = []


_WORKERS: RerunWorkers | None = None


@pytest.fixture(scope="module", autouse=True)
def rerun_workers(tmp_path_factory):
    global _WORKERS
    _WORKERS = RerunWorkers(tmp_path_factory.mktemp("rerun-workers"))
    yield _WORKERS
    _WORKERS.close()
    _WORKERS = None


def rerun_sets_in_parallel(workdir: Path, base: Path, changes: dict, tmp: Path) -> dict:
    """tests/rerun_sets.py over ``changes``, split between the module's two warm worker processes
    side by side (a DAG is about 0.4 s of one core), merged. (``tmp`` is not used: the workers
    write their change files in their own temporary directories.)"""
    names = list(changes)
    procs = _WORKERS.start()
    asked = []
    for i, p in enumerate(procs):
        part = {n: changes[n] for n in names[i::len(procs)]}
        if part:
            p.stdin.write(json.dumps({"workdir": str(workdir), "base": str(base),
                                      "changes": part}) + "\n")
            p.stdin.flush()
            asked.append(i)
    got = {}
    for i in asked:
        line = procs[i].stdout.readline()
        assert line, f"rerun worker {i} stopped:\n{_WORKERS.failure(i)}"
        got.update(json.loads(line))
    assert set(got) == set(changes)
    return got


def downstream(graph: dict, start: set) -> set:
    """The rules of ``start`` and every rule below them in ``graph`` (rule -> its readers)."""
    seen, todo = set(), list(start)
    while todo:
        r = todo.pop()
        if r not in seen:
            seen.add(r)
            todo.extend(graph.get(r, []))
    return seen


def test_every_config_key_reruns_exactly_its_declared_rules(demo_run, tmp_path):
    """Issue 26: every schema leaf declares (``x-reruns``) the rules whose outputs depend on it;
    changing it on the finished demo must rerun those rules (where the demo runs them) and what
    reads their outputs, and nothing else: memory, batch sizes, served timeouts, cache locations
    and block layouts rerun nothing."""
    from csbench.config import load_config_file, schema_leaves, validate

    leaves = schema_leaves()
    undeclared = [k for k, s in leaves.items() if "x-reruns" not in s]
    assert not undeclared, f"schema keys without x-reruns (classify them): {undeclared}"
    rules = set().union(*(rules_of(p.name) for p in (REPO / "workflow/rules").glob("*.smk")))
    rules |= {f"download_{s}" for s in ("twentyq", "protoqa", "winogrande", "wsc273", "winowhat",
                                          "squad_v2", "csqa2", "com2sense", "wsd_eval")}
    for key, s in leaves.items():
        assert set(s["x-reruns"]) <= rules, (key, set(s["x-reruns"]) - rules)

    base = REPO / "resources/demo/config.yaml"
    cfg = validate(load_config_file(base), SCHEMAS / "config.schema.yaml")
    special = special_changes(demo_run, tmp_path)
    changes = {"__graph__": {}, "__none__": {}}
    for key, s in leaves.items():
        if key.startswith("datasets.*."):  # changed on the demo's sets (data_set_changes)
            for name, value in data_set_changes(key, tmp_path).items():
                changes[f"{key}@{name}"] = {**nested(key.replace("*", name), value),
                                            **DATA_SET_ALSO.get(f"{key}@{name}", {})}
            continue
        concrete = key.replace("audits.*", "audits.csqa2")
        if key.startswith("sources.") and key.endswith(".files"):  # a hash pinned
            first = next(f for f, h in get(cfg, concrete).items() if h != "skip")
            value = {first: "0" * 64}
        else:
            value = special[key] if key in special else changed_value(key, s, get(cfg, concrete))
        changes[key] = nested(concrete, value)
    got = rerun_sets_in_parallel(demo_run, base, changes, tmp_path)
    for name in [k for k in got if "@" in k]:  # a data set key: what its changes rerun together
        key, part = name.split("@")[0], got.pop(name)
        merged = got.setdefault(key, {"run": [], "rerun": []})
        if "error" in part or "error" in merged:
            got[key] = {"error": part.get("error") or merged["error"]}
        else:
            got[key] = {k: sorted(set(merged[k]) | set(part[k])) for k in ("run", "rerun")}
    graph = got.pop("__graph__")
    assert got.pop("__none__")["run"] == [], "the finished demo is not up to date"
    demo_rules = set(graph) | {r for d in graph.values() for r in d}

    problems = []
    for key, observed in got.items():
        if "error" in observed:
            problems.append(f"{key}: {observed['error']}")
            continue
        declared = set(leaves[key]["x-reruns"])
        extra = set(observed["rerun"]) - downstream(graph, declared)
        missing = set() if key in INERT else (declared & demo_rules) - set(observed["run"])
        if extra or missing:
            problems.append(f"{key}:" + f" reruns {sorted(extra)} it does not declare"
                            * bool(extra) + f"; does not rerun {sorted(missing)}" * bool(missing))
    assert not problems, "\n".join(problems)
    # The settings issue 26 found rerunning hours of jobs: now none reruns a costly job.
    costly = {"winowhat_score", "protoqa_generate", "twentyq_score", "twentyq_topic_frequency",
              "qads_generate", "qads_wsd_eval", "qads_predict", "qads_finetune_fold", "audit_run",
              "contamination_scan", "contamination_semantic"}
    for key in ("qads.qa.mem_mb", "lm.max_batch_size", "lm.served.timeout", "lm.batch_size",
                "qads.verification.block_size"):
        assert set(got[key]["rerun"]) <= {"qads_export_annotation"}, (key, got[key])
    shards = set(got["lm.shards"]["run"])  # new shard jobs, their gather and what reads it
    assert "winowhat_score" in shards and not shards & (costly - {"winowhat_score"}), shards


def test_a_finetuned_model_retrains_only_when_its_base_data_or_settings_change(demo_run, tmp_path):
    """The demo's ProtoQA fine-tuned model (a `finetune` spec): a training setting (in the spec or
    the `finetune` section), another base or another training table retrains it; sampling
    settings, another task's settings and resources do not."""
    ft = "smollm2-135m-protoqa-ft"
    spec = {"base": "smollm2-135m", "data": "protoqa/finetune_train", "dev": "protoqa/finetune_dev"}
    changes = {
        "spec_seed": {"models": {"lm": {ft: {"finetune": {**spec, "seed": 1}}}}},
        "section_lr": {"finetune": {"lr": 2.0e-4}},
        "base": {"models": {"lm": {"smollm2-135m": "random:tiny-gpt2"}}},
        "data": {"models": {"lm": {ft: {"finetune": {**spec, "data": "protoqa/finetune_dev"}}}}},
        "sampling": {"protoqa": {"generation": {"num_samples": 9}}},
        "other_task": {"winowhat": {"bootstrap": {"n": 201}}},
        "resources": {"finetune": {"threads": 1, "mem_mb": 9000}},
    }
    got = rerun_sets_in_parallel(demo_run, REPO / "resources/demo/config.yaml", changes, tmp_path)
    for name in ("spec_seed", "section_lr", "base", "data"):
        assert "finetune_model" in got[name]["rerun"], (name, got[name])
    for name in ("sampling", "other_task", "resources"):
        assert "finetune_model" not in got[name].get("run", ["error"]), (name, got[name])
    assert got["resources"]["run"] == [], got["resources"]


def test_the_20q_finetuned_arm_reruns_when_its_training_items_change(demo_run, tmp_path):
    """The demo's 20Q fine-tuned model trains on the 20Q split's items admitted against the scored
    test items (twentyq_finetune_data): another admission threshold rebuilds the table and retrains
    it; the prompted variants rescore the base model only, the fine-tuned variants the fine-tuned
    model only."""
    changes = {
        "admission": {"twentyq": {"finetune": {"max_similarity": 0.7}}},
        "prompted": {"twentyq": {"scoring": {"variants": ["zero_shot"]}}},
        "fine_tuned": {"twentyq": {"scoring": {"fine_tuned_variants": ["fine_tuned"]}}},
    }
    got = rerun_sets_in_parallel(demo_run, REPO / "resources/demo/config.yaml", changes, tmp_path)
    assert {"twentyq_finetune_data", "finetune_model", "twentyq_score"} <= set(got["admission"]["rerun"])
    for name in ("prompted", "fine_tuned"):
        assert "finetune_model" not in got[name]["run"] and "twentyq_score" in got[name]["rerun"]
    assert "twentyq_finetune_data" not in got["fine_tuned"]["run"]


def rerun_with_demo_files(demo_run: Path, shadow: Path, tmp_path: Path) -> dict:
    """What a dry run of the finished demo would run and rerun with its resources/demo link
    pointed at ``shadow`` (a copy of resources/demo with a file edited), the link restored after."""
    link = demo_run / "resources" / "demo"
    link.unlink()
    try:
        link.symlink_to(shadow)
        return rerun_sets_in_parallel(demo_run, REPO / "resources/demo/config.yaml",
                                      {"edited": {}}, tmp_path)["edited"]
    finally:
        link.unlink()
        link.symlink_to(REPO / "resources" / "demo")


def test_editing_a_data_set_file_reruns_only_what_reads_it(demo_run, tmp_path):
    """Issue 37: a data set's file is an input of the jobs that read that set and of no other.
    Each of the demo's user data set files is edited in turn (the finished demo pointed at a copy
    of resources/demo/datasets, as above): the dry run reruns the jobs that read it (its own
    twentyq_dataset, ProtoQA and QADS jobs; the contamination probes; the audit that names it)
    and what reads their outputs, and nothing of the other sets."""
    import gzip
    import shutil

    readers = {  # file -> (how to edit it, rules that read the set, where their jobs write)
        "winograd.csv": ("W99,The cup fell off _ because the shelf tilted.,the shelf,the table,1,,"
                         "physical,added\n", {"winowhat_items", "contamination_probes"}, {}),
        "yesno.tsv": ("y99\tA kettle boils water.\tyes\tkettle\ttest\tadded\n",
                      {"twentyq_dataset", "contamination_probes", "audit_run"},
                      {"twentyq_dataset": "results/twentyq/demo_yesno/", "audit_run": "results/audit/demo_sets/"}),
        "protoqa.jsonl": ('{"qid": "dq99", "prompt": "Name a fruit.", "clusters": [["apple"]], "sizes": [9]}\n',
                          {"protoqa_generate", "protoqa_trivial", "protoqa_eval", "protoqa_issues",
                           "contamination_probes"},
                          {r: "results/protoqa/demo_protoqa/" for r in ("protoqa_generate", "protoqa_trivial",
                                                                         "protoqa_eval", "protoqa_issues")}),
        "squad.json.gz": (None, {"qads_generate", "contamination_probes", "audit_run"},
                          {"qads_generate": "results/qads/sets/demo_squad/",
                           "audit_run": "results/audit/demo_sets/"}),
    }
    graph = rerun_sets_in_parallel(demo_run, REPO / "resources/demo/config.yaml",
                                   {"__graph__": {}}, tmp_path)["__graph__"]

    problems = []
    for name, (line, rules, where) in readers.items():
        shadow = tmp_path / name / "demo"
        shadow.mkdir(parents=True)
        for child in (REPO / "resources/demo").iterdir():
            if child.name != "datasets":
                (shadow / child.name).symlink_to(child)
        shutil.copytree(REPO / "resources/demo/datasets", shadow / "datasets")  # mtimes kept
        edited = shadow / "datasets" / name
        if line is None:  # a gzipped file: the same JSON written again
            edited.write_bytes(gzip.compress(gzip.decompress(edited.read_bytes())))
        else:
            edited.write_text(edited.read_text() + line)
        got = rerun_with_demo_files(demo_run, shadow, tmp_path)
        if "error" in got:
            problems.append(f"{name}: {got['error']}")
            continue
        missing, extra = rules - set(got["rerun"]), set(got["rerun"]) - downstream(graph, rules)
        others = [j for j in got["rerun_jobs"] if j.split()[0] in where
                  and not j.split()[1].startswith(where[j.split()[0]])]
        if missing or extra or others:
            problems.append(f"{name}: does not rerun {sorted(missing)}; reruns {sorted(extra)} "
                            f"beyond its readers; reruns other sets' jobs {others}")
    assert not problems, "\n".join(problems)


def test_editing_a_mirror_file_reruns_its_download(demo_run, tmp_path):
    """Issue 29: a mirror file edited in place was not noticed (the download rules had no
    inputs). Now a source's mirror files are its download rule's inputs: an edited one reruns the
    download and what reads the source, and nothing of the other sources. (The demo's mirror is
    the repository's: the finished demo is pointed at a copy of it whose WSC file is edited.)"""
    import shutil

    shadow = tmp_path / "demo"
    shadow.mkdir()
    for child in (REPO / "resources/demo").iterdir():
        if child.name != "mirror":
            (shadow / child.name).symlink_to(child)
    (shadow / "mirror").mkdir()
    for child in (REPO / "resources/demo/mirror").iterdir():
        if child.name != "wsc273":
            (shadow / "mirror" / child.name).symlink_to(child)
    shutil.copytree(REPO / "resources/demo/mirror/wsc273", shadow / "mirror/wsc273")
    edited = shadow / "mirror/wsc273/WSCollection.xml"
    edited.write_text(edited.read_text() + "<!-- edited -->\n")
    got = rerun_with_demo_files(demo_run, shadow, tmp_path)
    assert "rerun" in got, got
    got = got["rerun"]
    assert "download_wsc273" in got and "normalise" in got, got
    assert not {r for r in got if r.startswith("download_")} - {"download_wsc273"}, got


# Last: the only test that reads the second demo run, which started after the first.


def test_two_fresh_demo_runs_give_identical_result_tables(demo_runs):
    """make reproduce's determinism on the demo: a second run from scratch in another directory
    (own downloads, models, caches; run side by side with the first) gives the same result tables
    (seeded sampling, fixed threads); only timing columns may differ. The second run builds one
    instance of every rule (tests/demo_runs.py, SECOND_RUN_TARGETS) and every file it writes is
    compared with the first run's."""
    import pandas as pd

    demo_run, work = demo_runs
    missing = set(rules_run(demo_run)) - set(rules_run(work)) - NOT_REPEATED
    assert not missing, f"rules the second run does not repeat (add a target): {sorted(missing)}"
    first, second = result_files(demo_run), result_files(work)
    assert set(second) <= set(first), sorted(set(second) - set(first))
    assert len(second) > 50
    differ = []
    for name, path in second.items():
        a, b = comparable(first[name]), comparable(path)
        if isinstance(a, pd.DataFrame) and isinstance(b, pd.DataFrame):
            try:
                pd.testing.assert_frame_equal(a, b, check_exact=True)
            except AssertionError as exc:
                differ.append(f"{name}: {str(exc)[:300]}")
        elif isinstance(a, pd.DataFrame) or isinstance(b, pd.DataFrame) or a != b:
            differ.append(name)
    assert not differ, "\n".join(differ)
