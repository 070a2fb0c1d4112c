"""Where a model's outputs came from: the ``provenance.json`` of a materialised model directory,
the provenance columns every table made from a model carries, and the check that a per-model
table a job reads is that model's. Kept apart from :mod:`csbench.models` (which loads torch and
transformers), so jobs that only read tables need none of them."""
from __future__ import annotations

import json
from pathlib import Path

from .errors import InputError
from .modelspec import PROVENANCE_COLUMNS

PROVENANCE = "provenance.json"


def is_random_model_dir(path: str | Path) -> bool:
    """True when ``path`` holds a model built by :func:`build_random_model`."""
    return bool(provenance(path).get("random", False))


def provenance(path: str | Path) -> dict:
    """The provenance of a materialised model directory (``provenance.json``). Unknown for a
    directory csbench did not make."""
    f = Path(path) / PROVENANCE
    if f.exists():
        return json.loads(f.read_text())
    return {"spec": {"kind": "dir", "label": str(path)}, "random": False}


def provenance_columns(path: str | Path) -> dict:
    """Columns every table that comes from a model carries: whether its weights are random, where
    they came from, the sha256 of the weights file they were made from, and the quantisation."""
    p = provenance(path)
    spec = p.get("spec")
    label = spec.get("label") if isinstance(spec, dict) else str(spec)
    return {"random_model": bool(p.get("random", False)), "model_source": label or "",
            "model_sha256": p.get("file_sha256") or "", "model_quant": p.get("quantisation") or ""}


def read_model_table(path: str | Path, model: str | None, model_column: str = "model"):
    """Read a table a job wrote for one model (``.parquet`` or ``.tsv``) and check that it is
    that model's: a file (a directory at the path would be read as a dataset of whatever it
    holds), with the provenance columns (:func:`provenance_columns`) and one provenance, and, when
    ``model`` is given, a ``model_column`` that names only ``model``. Raises
    :class:`InputError` naming the file."""
    import pandas as pd

    path = Path(path)
    if path.is_dir():
        raise InputError(path, f"a directory where the table of model {model or '?'} should be: "
                         "remove it and rerun the job that writes it")
    if not path.is_file():
        raise InputError(path, "file not found")
    if path.suffix == ".parquet":
        df = pd.read_parquet(path)
    else:
        try:
            df = pd.read_csv(path, sep="\t", dtype={model_column: str})
        except pd.errors.EmptyDataError:
            df = pd.DataFrame()
    need = list(PROVENANCE_COLUMNS) + ([model_column] if model is not None else [])
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise InputError(path, f"not a table of model {model or '?'}: no column(s) "
                         f"{', '.join(missing)} (every table made from a model carries "
                         f"{', '.join(PROVENANCE_COLUMNS)})")
    if model is not None:
        others = sorted(set(df[model_column].astype(str)) - {model})
        if others:
            raise InputError(path, f"holds rows of model(s) {', '.join(others)}, not only of "
                             f"{model}: a table of another model at this model's path; rerun "
                             "the job that writes it")
    if len(df[list(PROVENANCE_COLUMNS)].drop_duplicates()) > 1:
        raise InputError(path, "rows of more than one model source: "
                         + "; ".join(str(r) for r in df[list(PROVENANCE_COLUMNS)]
                                     .drop_duplicates().to_dict("records")[:3]))
    return df
