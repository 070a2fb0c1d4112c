"""Parse-time helpers of workflow/rules/audit.smk: the ``audits:`` section and its inputs."""
from __future__ import annotations

from pathlib import Path

import yaml

from ..config import validate

ROOT = "results/audit"
METHODS = ("trigram", "bm25", "embedding", "wordnet")


def audit_config(config: dict, schema_dir) -> dict:
    """Built-in audits with the user's keys laid over them, then every entry's defaults filled.

    A key left at the generic entry default (e.g. filled by an earlier validation pass) keeps
    the built-in value. Enabled audits must name their train and test tables.
    """
    path = Path(schema_dir) / "audits.schema.yaml"
    schema = yaml.safe_load(path.read_text())
    generic = {k: v["default"] for k, v in schema["additionalProperties"]["properties"].items()}
    user = config.setdefault("audits", {})
    for name, sub in schema["properties"].items():
        given = user.get(name) or {}
        merged = dict(sub["default"])
        merged.update({k: v for k, v in given.items() if not (k in merged and v == generic.get(k))})
        user[name] = merged
    audits = validate(user, path)
    for name, a in audits.items():
        if a["enabled"] and not (a["train"] and a["test"]):
            raise ValueError(f"audits.{name}: train and test must be set")
    return audits


def enabled(audits: dict) -> list[str]:
    return [n for n, a in audits.items() if a["enabled"]]


def table_path(ref: str, sources, data_table) -> str:
    """``<source>:<table>`` -> ``data_table(source, table)``; anything else is a file path."""
    if ":" in ref and ref.split(":", 1)[0] in sources:
        return data_table(*ref.split(":", 1))
    return ref


def inputs(audits: dict, sources, data_table) -> dict[str, dict[str, str]]:
    return {n: {"train": table_path(audits[n]["train"], sources, data_table),
                "test": table_path(audits[n]["test"], sources, data_table)} for n in enabled(audits)}


def targets(audits: dict) -> list[str]:
    names = enabled(audits)
    if not names:
        return []
    files = ["top1.parquet", "duplicates.tsv", "summary.tsv"] + [f"top_pairs.{m}.tsv" for m in METHODS]
    return [f"{ROOT}/{n}/{f}" for n in names for f in files] + [f"{ROOT}/summary.tsv",
                                                               f"{ROOT}/top1_similarity.png"]
