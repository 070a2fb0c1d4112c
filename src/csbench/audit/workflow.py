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


def table_path(ref: str, sources, data_table, datasets: dict | None = None) -> str:
    """A data set's name -> its file; ``<source>:<table>`` -> ``data_table(source, table)``;
    anything else is a file path."""
    if datasets and ref in datasets:
        from ..datasets import input_path

        return input_path(datasets[ref], data_table)
    if ":" in ref and ref.split(":", 1)[0] in sources:
        return data_table(*ref.split(":", 1))
    return ref


def inputs(audits: dict, sources, data_table, datasets: dict | None = None
           ) -> dict[str, dict[str, str]]:
    return {n: {side: table_path(audits[n][side], sources, data_table, datasets)
                for side in ("train", "test")} for n in enabled(audits)}


def dataset_reads(audits: dict, datasets: dict) -> dict[str, dict]:
    """Audit name -> side -> how its data set is read (kind, columns, settings; None for a table
    or file side): what the audit's output depends on besides the file."""
    from ..datasets import read_params

    return {n: {side: (read_params(datasets[audits[n][side]]) if audits[n][side] in datasets
                       else None)
                for side in ("train", "test")} for n in enabled(audits)}


def targets(audits: dict) -> list[str]:
    names = enabled(audits)
    if not names:
        return []
    files = ["top1.parquet", "duplicates.tsv", "summary.tsv"] + [f"top_pairs.{m}.tsv" for m in METHODS]
    return [f"{ROOT}/{n}/{f}" for n in names for f in files] + [f"{ROOT}/summary.tsv",
                                                               f"{ROOT}/top1_similarity.png"]
