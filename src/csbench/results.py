"""RESULTS.md: every task's headline numbers in one Markdown file, built only from the result
tables the tasks wrote (plus the published anchors of ``resources/published_anchors.tsv``, each
with its source). Nothing here runs a model or recomputes a metric.

Each task renders its own section (``csbench.<task>.report``: its inputs, the summary files it
writes, its markdown, tables and models; :mod:`csbench.sections`); this module only orders the
sections, adds the headers, the published anchors and the Models table, and writes. A new task
adds its report module and one line to :data:`SECTIONS`.

:func:`planned` names the summary tables (and the figure) a configuration will produce, at
DAG-build time; :func:`build` writes them and RESULTS.md. Row order and number formats are
fixed, so two runs on the same tables give byte-identical files.
"""
from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd

from .contamination import report as contamination
from .findings import NOT_RUN, PAPERS, Finding, findings_markdown
from .protoqa import report as protoqa
from .qads import report as qads
from .record import build_record, write_record
from .sections import Section, markdown_table
from .twentyq import report as twentyq
from .winowhat import report as winowhat

SECTIONS = {"winowhat": winowhat, "protoqa": protoqa, "twentyq": twentyq, "qads": qads,
            "contamination": contamination}  # RESULTS.md's order
TASK_ORDER = tuple(SECTIONS)
ANCHOR_COLUMNS = ("id", "task", "benchmark", "system", "metric", "value", "unit", "setting", "source",
                  "note")


def inputs_of(task: str, targets: list[str]) -> dict[str, list[str]]:
    """The result tables of a task RESULTS.md reads, by role (from the task's registered targets)."""
    return SECTIONS[task].inputs(targets) if task in SECTIONS else {}


def planned(targets_by_task: dict[str, list[str]]) -> dict[str, str]:
    """Summary output key -> file name (under the summary directory) for the configured tasks."""
    out = {}
    for task, mod in SECTIONS.items():
        if task in targets_by_task:
            out.update(mod.planned(mod.inputs(targets_by_task[task])))
    return out


def anchors_markdown(anchors: pd.DataFrame, task: str) -> str:
    a = anchors[anchors["task"] == task]
    if a.empty:
        return ("No **published** number is listed for this task in `resources/published_anchors.tsv` "
                "(none could be sourced; see docs/reproduce.md).")
    show = pd.DataFrame({"benchmark": a["benchmark"], "system": a["system"], "metric": a["metric"],
                         "published": [f"{p}%" if u == "%" else p for p, u in zip(a["printed"], a["unit"])],
                         "setting": a["setting"], "source": a["source"], "note": a["note"].fillna("")})
    return ("**Published** numbers for orientation (from `resources/published_anchors.tsv`; other "
            "models, weights, prompts or splits than the rows above, so not directly comparable):\n\n"
            + markdown_table(show))


ANCHOR_ID = re.compile(r"[a-z0-9][a-z0-9_.-]*")
ANCHOR_UNITS = {"%": 1.0, "fraction": 100.0, "count": None, "nll": None, "words": None, "p-value": None}
#: what a row's source must name: a table, section or appendix of the paper, its abstract, or a
#: model card (the one primary source outside a paper the file uses)
ANCHOR_SOURCE = re.compile(r"Table \d+|Section [0-9IVX]|§\s*\d|appendix|abstract|model card", re.I)


def read_anchors(path) -> pd.DataFrame:
    """The published anchors (columns :data:`ANCHOR_COLUMNS`, one row per number), validated: a
    unique id of the form ``<paper>.<table>.<system>.<setting>.<metric>`` in ``[a-z0-9_.-]``, a
    numeric value in a known unit, a source naming a table or section (:data:`ANCHOR_SOURCE`).
    A bad row raises :class:`~csbench.errors.InputError` naming the file and line. ``value`` is
    the number as printed (float), ``printed`` its text, ``percent`` the value in percent where
    the unit is ``%`` or ``fraction`` (NaN otherwise)."""
    from .errors import InputError

    header, rows = None, []
    for lineno, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        cells = line.split("\t")
        if header is None:
            header = cells
            missing = [c for c in ANCHOR_COLUMNS if c not in header]
            if missing:
                raise InputError(path, f"missing columns {missing}", lineno)
            continue
        if len(cells) != len(header):
            raise InputError(path, f"{len(cells)} tab-separated cells, the header has {len(header)}",
                             lineno)
        row = dict(zip(header, (c.strip() for c in cells)))
        problem = _anchor_problem(row)
        if problem:
            raise InputError(path, problem, lineno)
        rows.append((lineno, row))
    if header is None:
        raise InputError(path, "no header line")
    seen: dict[str, int] = {}
    for lineno, row in rows:
        if row["id"] in seen:
            raise InputError(path, f"id {row['id']!r} is already used on line {seen[row['id']]}",
                             lineno)
        seen[row["id"]] = lineno
    df = pd.DataFrame([r for _, r in rows], columns=header).reindex(columns=list(ANCHOR_COLUMNS))
    df["printed"] = df["value"]
    df["value"] = df["value"].astype(float)
    df["percent"] = [round(v * ANCHOR_UNITS[u], 9) if ANCHOR_UNITS[u] else math.nan
                     for v, u in zip(df["value"], df["unit"])]
    df["note"] = df["note"].replace("", None)
    return df


def _anchor_problem(row: dict) -> str | None:
    """Why one anchor row is unusable (None if it is fine)."""
    if not ANCHOR_ID.fullmatch(row["id"]) or row["id"].count(".") < 4:
        return (f"id {row['id']!r} is not <paper>.<table>.<system>.<setting>.<metric> in "
                "lowercase [a-z0-9_.-]")
    if not row["source"] or not row["value"]:
        return f"{row['id']}: every published number needs a value and a source"
    try:
        finite = math.isfinite(float(row["value"]))
    except ValueError:
        finite = False
    if not finite:
        return f"{row['id']}: value {row['value']!r} is not a number (print it without separators)"
    if row["unit"] not in ANCHOR_UNITS:
        return f"{row['id']}: unit {row['unit']!r} is not one of {sorted(ANCHOR_UNITS)}"
    if not ANCHOR_SOURCE.search(row["source"]):
        return (f"{row['id']}: the source must name the table or section (or the model card) the "
                f"number is read in: {row['source']!r}")
    if row["task"] not in TASK_ORDER:
        return f"{row['id']}: task {row['task']!r} is not one of {list(TASK_ORDER)}"
    return None


MODEL_COLUMNS = {"model_source": "source", "model_quant": "quantisation",
                 "random_model": "random weights", "compute_device": "compute device",
                 "compute_dtype": "compute dtype", "prompt_format": "prompt format",
                 "system_instruction": "system instruction"}


def models_table(tables: list[tuple[str, pd.DataFrame]]) -> pd.DataFrame:
    """One row per model and table (``(label, table)`` pairs; a ``table`` column, where a table
    has one, labels its rows): where the weights came from (and their hash), what computed the
    table and, for a causal LM's, in which prompt format. A table written before csbench
    recorded the compute device and dtype says so."""
    rows = []
    for label, f in tables:
        if f.empty or "model" not in f:
            continue
        d = f.copy()
        if "table" not in d:
            d["table"] = label
        for c in ("compute_device", "compute_dtype"):
            if c not in d:
                d[c] = "not recorded"
        rows.append(d.reindex(columns=["model", "table", *MODEL_COLUMNS, "model_sha256"]))
    if not rows:
        return pd.DataFrame()
    df = pd.concat(rows, ignore_index=True).astype(object).fillna("").astype(str).drop_duplicates()
    return df.sort_values("model", kind="stable")


def models_markdown(df: pd.DataFrame) -> str:
    """The Models table of :func:`models_table` (without the weights' hash)."""
    if df.empty:
        return ""
    df = df.drop(columns="model_sha256").drop_duplicates()
    return ("Models behind the tables, from their provenance columns: where the weights came from, "
            "what computed each table and a causal LM's prompt format (`raw` or `chat`: its chat "
            "template; one set of weights in two formats is two model names) "
            "(`served`: an endpoint computed it; scores read back "
            "from the LM cache were computed from the same weights in the same dtype, the cache's "
            "key, possibly on another device):\n\n"
            + markdown_table(df.rename(columns=MODEL_COLUMNS)))


# ---------------------------------------------------------------------------------------------

def build(tables: dict[str, dict[str, list[str]]], configured: list[str], anchors_path,
          markdown_path, outputs: dict[str, str], log=None, json_path=None, config=None,
          commit=None) -> dict[str, Section]:
    """Write RESULTS.md, the planned summary files and, given ``json_path``, results.json (with
    ``config`` and the git ``commit``); return the sections by task.

    ``tables``: task -> role -> result table paths (:func:`inputs_of`); ``configured``: the tasks
    of the run's config; ``outputs``: summary key -> path (:func:`planned`, made absolute).
    """
    from .io import atomic_open

    anchors = read_anchors(anchors_path)
    md_dir = Path(markdown_path).parent.resolve()
    links = {k: Path(v).resolve().relative_to(md_dir).as_posix()
             if Path(v).resolve().is_relative_to(md_dir) else str(v) for k, v in outputs.items()}
    sections: dict[str, Section] = {}
    skipped: list[Finding] = []
    out = ["# csbench results", "",
           "Built by the `results` rule from the result tables of this run only: every number below is "
           "read from a table under `results/`, except the rows labelled **published**, which come from "
           "`resources/published_anchors.tsv` with their sources. Tasks in this run's config: "
           + ", ".join(f"`{t}`" for t in configured if t != "results") + "."]
    for task, mod in SECTIONS.items():
        out += ["", f"## {mod.TITLE}", ""]
        if task not in configured:
            out.append(f"Skipped: `{task}` is not in this run's `tasks`, so it has no result tables.")
            skipped.append(Finding(mod.PAPER, f"(every finding from `{task}`)", verdict=NOT_RUN,
                                   why=f"`{task}` is not in this run's `tasks`"))
            continue
        sec = mod.section(tables.get(task, {}), outputs, links, anchors)
        sections[task] = sec
        out.append(sec.markdown or "This task wrote none of the tables summarised here.")
        anchor_md = anchors_markdown(anchors, task)
        if anchor_md:
            out += ["", anchor_md]
    model_rows = models_table([m for sec in sections.values() for m in sec.models])
    models = models_markdown(model_rows)
    if models:
        out += ["", "## Models", "", models]
    found = sorted([f for sec in sections.values() for f in sec.findings] + skipped,
                   key=lambda f: PAPERS.index(f.paper) if f.paper in PAPERS else len(PAPERS))
    if found:  # first, right under the introduction
        out[3:3] = ["", "## Findings", "", findings_markdown(found)]
    if json_path is not None:
        write_record(build_record(sections, found, anchors, model_rows, configured, config, commit),
                     json_path)
    with atomic_open(markdown_path) as fh:
        fh.write("\n".join(out).rstrip() + "\n")
    if log is not None:
        log.info("wrote %s and %d summary files", markdown_path, len(outputs))
    return sections
