"""results/results.json: every number RESULTS.md shows, machine-readable, so that two runs can be
compared by a script. It holds the Findings rows (value, interval, n, verdict), each section's
tables (the rows behind its Markdown, with their intervals and n), the published anchors shown,
the models' provenance, the run's config, the git commit and the package versions; it is
validated against ``workflow/schemas/results.schema.json`` before it is written.
"""
from __future__ import annotations

import json
import platform
import subprocess
from pathlib import Path

import pandas as pd

SCHEMA = Path(__file__).resolve().parents[2] / "workflow" / "schemas" / "results.schema.json"
PACKAGES = ("csbench", "numpy", "pandas", "scipy", "snakemake", "torch", "transformers",
            "tokenizers", "sentence-transformers", "gguf", "nltk", "spacy", "matplotlib")
VERSION = 1


def rows(df: pd.DataFrame) -> list[dict]:
    """A table as JSON records: NaN as null, numpy scalars as plain numbers."""
    if df is None or df.empty:
        return []
    return json.loads(df.to_json(orient="records", double_precision=10, force_ascii=False))


def package_versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            continue
    return found


def git_commit(root) -> str | None:
    """The commit checked out at ``root`` (with ``-dirty`` when tracked files differ), or None
    outside a git checkout."""
    def git(*args):
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                              timeout=30)
    try:
        head = git("rev-parse", "HEAD")
        if head.returncode:
            return None
        dirty = git("status", "--porcelain", "--untracked-files=no").stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    return head.stdout.strip() + ("-dirty" if dirty else "")


def build_record(sections: dict, findings: list, anchors: pd.DataFrame, models: pd.DataFrame,
                 configured: list[str], config: dict | None, commit: str | None) -> dict:
    """The results.json object (``sections``: task -> :class:`csbench.sections.Section`)."""
    shown = anchors[anchors["task"].isin(list(sections))] if not anchors.empty else anchors
    return {
        "version": VERSION,
        "git_commit": commit,
        "packages": package_versions(),
        "tasks": [t for t in configured if t != "results"],
        "config": json.loads(json.dumps(config or {}, default=str)),
        "findings": [f.record() for f in findings],
        "sections": {task: {"tables": {name: rows(df) for name, df in sec.tables.items()}}
                     for task, sec in sections.items()},
        "published": rows(shown),
        "models": rows(models),
    }


def validate(record: dict) -> None:
    """Raise ``jsonschema.ValidationError`` where ``record`` breaks the schema."""
    import jsonschema

    jsonschema.validate(record, json.loads(SCHEMA.read_text(encoding="utf-8")))


def write_record(record: dict, path) -> None:
    from .io import write_json

    validate(record)
    write_json(record, path, indent=1)
