"""Which rules a dry run would rerun after each of several config changes, on a finished run.

``python tests/rerun_sets.py WORKDIR BASE_CONFIG CHANGES_JSON`` prints a JSON object: change name ->
``{"run": rules of the jobs Snakemake would run, "rerun": rules of those that rewrite an existing
output, "rerun_jobs": those jobs as "<rule> <first output>"}`` (or ``{"error": message}``); the change named
``__graph__`` gives the rule graph instead (rule -> rules downstream of it, one step). CHANGES_JSON maps
a name to a config override (a nested mapping merged over BASE_CONFIG the way a second
``--configfile`` is). One process builds every DAG in turn (the Snakemake API, as ``snakemake -n``
does, at about a second a DAG instead of four for a new ``snakemake -n`` process each); used by
tests/test_workflow.py (every schema key changed in turn).

``python tests/rerun_sets.py --serve`` answers such requests one after another, one JSON line each
on stdin (``{"workdir": ..., "base": ..., "changes": {...}}``) with one JSON line each on stdout:
tests/test_workflow.py keeps two of these warm for all of its rerun tests (one interpreter
start-up, one import of Snakemake and csbench, the schema files parsed once).
"""
from __future__ import annotations

import contextlib
import io
import json
import logging
import sys
import tempfile
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]


def rerun_rules(workdir: Path, configfiles: list[Path], graph: bool = False):
    """Rule names of the jobs a dry run would run, and of those that would rewrite an existing
    output; with ``graph``, instead the rule graph of the whole DAG: rule -> the rules whose jobs
    read its jobs' outputs."""
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import (ConfigSettings, DAGSettings, OutputSettings,
                                          ResourceSettings, StorageSettings)

    with SnakemakeApi(OutputSettings(dryrun=True, quiet={"all"})) as api:
        wf = api.workflow(resource_settings=ResourceSettings(cores=2),
                          config_settings=ConfigSettings(configfiles=configfiles),
                          storage_settings=StorageSettings(), workdir=workdir,
                          snakefile=REPO / "Snakefile")
        wf.dag(DAGSettings())  # checks the settings
        w = wf._workflow  # what `snakemake -n` builds: the DAG with its needrun jobs
        w.dag_settings = DAGSettings()
        w._prepare_dag(forceall=graph, ignore_incomplete=False, lock_warn_only=True)
        w._build_dag()
        if graph:
            edges: dict[str, set] = {}
            for job in w.dag.jobs:
                for dep in w.dag.dependencies[job]:
                    edges.setdefault(dep.rule.name, set()).add(job.rule.name)
            return {r: sorted(d - {"all"}) for r, d in edges.items()}
        jobs = [j for j in w.dag.needrun_jobs() if j.rule.name != "all"]
        # a rerun rewrites an output that exists; a job none of whose outputs exist is new work
        # the change asks for (a new shard, model or corpus), not a rerun
        again = [j for j in jobs if any(Path(workdir, f).exists() for f in j.output)]
        return {"run": sorted({j.rule.name for j in jobs}), "rerun": sorted({j.rule.name for j in again}),
                # each rerun job as "<rule> <its first output>", for tests that name jobs, not rules
                "rerun_jobs": sorted(f"{j.rule.name} {j.output[0]}" for j in again)}


def keep_snakefile_translations() -> None:
    """Snakemake translates the Snakefile and each included .smk file to Python on every parse, a
    quarter of a dry run's CPU; the translation is a function of the file's text, the running rule
    count and the shell override alone, so one process building many DAGs keeps it (keyed on all
    four). Left alone where Snakemake's ``parse`` is not the one this was written against."""
    import inspect

    import snakemake.api  # noqa: F401  (first: snakemake.workflow alone is a circular import)
    import snakemake.parser as parser
    import snakemake.workflow as workflow

    original = workflow.parse
    wanted = ["path", "workflow", "linemap", "overwrite_shellcmd", "rulecount"]
    if original is not parser.parse or list(inspect.signature(original).parameters) != wanted:
        return
    done: dict = {}

    def parse(path, workflow, linemap, overwrite_shellcmd=None, rulecount=0):
        with workflow.sourcecache.open(path) as f:
            text = f.read()
        key = (path.get_path_or_uri(secret_free=True), text, overwrite_shellcmd, rulecount)
        if key not in done:
            lines: dict = {}
            done[key] = (*original(path, workflow, lines, overwrite_shellcmd, rulecount), lines)
        code, count, lines = done[key]
        parser.Shell.overwrite_cmd = overwrite_shellcmd
        linemap.update(lines)
        return code, count

    workflow.parse = parse


def rerun_sets(workdir: str, base: str, changes: dict) -> dict:
    """Change name -> what a dry run would run and rerun after it (see the module docstring)."""
    out = {}
    with tempfile.TemporaryDirectory() as td:
        for name, override in changes.items():
            extra = Path(td) / "change.yaml"
            extra.write_text(yaml.safe_dump(override))
            try:
                with contextlib.redirect_stdout(io.StringIO()), \
                        contextlib.redirect_stderr(io.StringIO()):
                    out[name] = rerun_rules(Path(workdir), [Path(base), extra],
                                            graph=name == "__graph__")
            except Exception as exc:  # reported per change; the test names it
                out[name] = {"error": f"{type(exc).__name__}: {exc}"[:2000]}
    return out


def main(workdir: str, base: str, changes: str) -> None:
    logging.disable(logging.CRITICAL)
    keep_snakefile_translations()
    print(json.dumps(rerun_sets(workdir, base, json.loads(Path(changes).read_text()))))


def serve() -> None:
    logging.disable(logging.CRITICAL)
    keep_snakefile_translations()
    answer = sys.stdout
    for line in sys.stdin:
        req = json.loads(line)
        answer.write(json.dumps(rerun_sets(req["workdir"], req["base"], req["changes"])) + "\n")
        answer.flush()


if __name__ == "__main__":
    serve() if sys.argv[1:] == ["--serve"] else main(*sys.argv[1:4])
