"""Normalisers: each raw source becomes Parquet tables under ``results/data/<source>/``.

Every source has a module ``csbench.data.<source>`` that defines

* ``tables(files: list[str]) -> dict[str, list[str]]``: table name -> the raw files (names as in
  ``sources.<source>.files``) it is built from, given the files that are configured (not skipped);
* ``normalise(table: str, paths: dict[str, pathlib.Path]) -> pandas.DataFrame``: build one table
  from its raw files (keys are the file names); malformed records raise
  :class:`csbench.errors.InputError` naming the file and line; nothing is dropped silently;
* ``COLUMNS: dict[str, str]``: column -> description, documented in ``docs/data.md``.

Every table keeps the source's original item id in a column ``id``.
"""
from __future__ import annotations

import importlib

SOURCES = ("twentyq", "protoqa", "winogrande", "wsc273", "winowhat", "squad_v2", "csqa2",
           "com2sense", "wsd_eval")


def module(source: str):
    if source not in SOURCES:
        raise KeyError(f"unknown source {source!r}")
    return importlib.import_module(f"{__name__}.{source}")


def tables(source: str, files: list[str]) -> dict[str, list[str]]:
    """Table name -> raw files, for the configured files of ``source`` (empty if no module)."""
    try:
        mod = module(source)
    except ModuleNotFoundError:
        return {}
    return mod.tables(list(files))


def normalise(source: str, table: str, paths: dict):
    return module(source).normalise(table, paths)
