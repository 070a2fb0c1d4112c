"""What a task's part of RESULTS.md is made of, and the formatting every task shares.

Each task package has a ``report`` module (``csbench.<task>.report``) with ``TITLE``,
``inputs(targets)`` (its result tables by role), ``planned(inputs)`` (the summary files it writes)
and ``section(inputs, outputs, links, anchors, **settings) -> Section`` (settings: the task's
keyword settings from the config, e.g. WinoWhat's ``subset``); ``csbench.results`` only orders the
sections, adds the published anchors and headers, and writes. This module imports nothing of
csbench but ``csbench.io`` (lazily), so every task package may import it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd


@dataclass
class Section:
    """One task's part of RESULTS.md.

    ``markdown``: the body under the task's header; ``tables``: name -> the machine-readable table
    behind the numbers the body shows (results.json); ``models``: ``(label, table)`` pairs whose
    provenance columns go into the Models table; ``findings``: the task's rows of the Findings
    table (:class:`csbench.findings.Finding`); ``files``: summary key -> path it wrote."""

    markdown: str
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    models: list[tuple[str, pd.DataFrame]] = field(default_factory=list)
    findings: list = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)


def select(paths, suffix: str) -> list[str]:
    """The paths (posix) ending in ``suffix``, sorted."""
    return sorted(p for p in (Path(q).as_posix() for q in paths) if p.endswith(suffix))


def summary_files(ins: dict[str, list[str]], files: dict[str, tuple[str, ...]]) -> dict[str, str]:
    """A section's summary files, ``{key: (file name, input role, ...)}``: the keys whose roles
    have inputs, with their file names, in the order given."""
    return {key: name for key, (name, *roles) in files.items() if any(ins.get(r) for r in roles)}


def read_table(path) -> pd.DataFrame:
    """A TSV result table; an empty file (a task that scored nothing) is an empty table."""
    try:
        return pd.read_csv(path, sep="\t")
    except pd.errors.EmptyDataError:
        return pd.DataFrame()


def write_summary(df: pd.DataFrame, path) -> None:
    """A summary table, atomically, floats with four decimals."""
    from .io import write_tsv

    write_tsv(df, path, float_format="%.4f")


def isnan(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def num(x, digits: int = 1, scale: float = 1.0) -> str:
    if isnan(x):
        return "–"
    return f"{float(x) * scale:.{digits}f}"


def pct(x, digits: int = 1) -> str:
    """A fraction in [0, 1] as a percentage."""
    return num(x, digits, 100.0)


def pval(p) -> str:
    if isnan(p):
        return "–"
    return f"{float(p):.2g}" if float(p) < 0.001 else f"{float(p):.3f}"


def ci(value, lo, hi) -> str:
    """A fraction with its interval, in %: ``62.0 [57.0, 67.0]``."""
    if isnan(value):
        return "–"
    return f"{pct(value)} [{pct(lo)}, {pct(hi)}]"


def markdown_table(df: pd.DataFrame) -> str:
    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in df.itertuples(index=False):
        cells = ["" if v is None else str(v).replace("|", "\\|").replace("\n", " ") for v in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def is_random(values) -> pd.Series:
    """A ``random_model`` column as booleans (it is read back as bool or text)."""
    return pd.Series(values).astype(str).str.lower().eq("true")


def random_note(df: pd.DataFrame) -> str:
    if "random_model" in df and is_random(df["random_model"]).any():
        models = sorted(df.loc[is_random(df["random_model"]).to_numpy(), "model"]
                        .astype(str).unique())
        return (f"\n\n**Random weights:** {', '.join(models)} "
                "(`random_model = true`): its numbers only show that the pipeline runs.")
    return ""
