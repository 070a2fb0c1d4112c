"""The text an audit compares, for a dataset of the ``datasets`` registry, by its kind.

A dataset's normalised table of roles becomes an audit table: every column kept, and ``text``
the text compared: a ``winograd`` item's sentence as written (with its ``_`` blank), the
question of a ``yesno``, ``protoqa`` or ``squad`` item, a ``text`` item's text. The audit's
``text_fields`` default (``[text]``) and ``id_field`` (``id``) then fit every kind; a
``yesno`` dataset's ``topic`` can be the ``short_field``.
"""
from __future__ import annotations

import pandas as pd

from ..datasets import TEXT_ROLES
from ..errors import InputError


def audit_items(kind: str, df: pd.DataFrame, path="<dataset>") -> pd.DataFrame:
    """``df`` (a normalised table of ``kind``) with the ``text`` column an audit compares."""
    if kind not in TEXT_ROLES:
        raise ValueError(f"{path}: unknown dataset kind {kind!r} (known: {', '.join(TEXT_ROLES)})")
    role = TEXT_ROLES[kind]
    missing = [c for c in ("id", role) if c not in df.columns]
    if missing:
        raise InputError(path, f"{kind} table lacks column(s) {', '.join(missing)} "
                               f"(has {', '.join(map(str, df.columns))})")
    return df.assign(text=df[role])


def read_items(path, dataset: dict | None = None) -> pd.DataFrame:
    """One side of an audit: a data set's file read as ``dataset`` says (its registry kind,
    columns and settings) with its ``text`` column, else a table file as it is."""
    if dataset is None:
        from .engine import read_table

        return read_table(path)
    from ..datasets import read_entry

    return audit_items(dataset["kind"], read_entry(dataset, path), path)
