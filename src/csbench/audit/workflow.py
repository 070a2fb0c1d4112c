"""Parse-time helpers of workflow/rules/audit.smk: the ``audits:`` section and its inputs."""
from __future__ import annotations

ROOT = "results/audit"
METHODS = ("trigram", "bm25", "embedding", "wordnet")


def audit_config(config: dict) -> dict:
    """The ``audits`` section (validated and filled by the config validation: the built-in
    audits' settings are merged under the user's keys by the schema, ``x-merge-defaults``).
    Enabled audits must name their train and test tables."""
    audits = config["audits"]
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
