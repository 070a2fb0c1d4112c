"""Where a model's outputs came from: the ``provenance.json`` of a materialised model directory,
the provenance columns every table made from a model carries (its weights:
:func:`provenance_columns`; what computed with them: :func:`csbench.compute.compute_columns` or
a scorer's ``compute()``; both: :func:`stamp`), and the check that a per-model table a job reads is that
model's. Kept apart from :mod:`csbench.models` (which loads torch and transformers), so jobs that
only read tables need none of them."""
from __future__ import annotations

import json
from pathlib import Path

from .errors import InputError

# Columns of every table that comes from a model: where its weights came from
# (provenance_columns) and what computed with them (csbench.compute.compute_columns or a
# scorer's compute()).
WEIGHT_COLUMNS = ("random_model", "model_source", "model_sha256", "model_quant")
COMPUTE_COLUMNS = ("compute_device", "compute_dtype")
PROVENANCE_COLUMNS = WEIGHT_COLUMNS + COMPUTE_COLUMNS
# What a causal LM's outputs also carry: the prompt format they were made with
# (csbench.lm.prompt.PromptFormat.columns: raw | chat, and the system instruction or "").
PROMPT_COLUMNS = ("prompt_format", "system_instruction")
LM_COLUMNS = PROVENANCE_COLUMNS + PROMPT_COLUMNS
PROVENANCE = "provenance.json"
# What computed a served model's outputs is the server's business: recorded as "served".
SERVED_COMPUTE = {"compute_device": "served", "compute_dtype": "served"}
# The key under which a prediction file in an official id -> value format (SQuAD 2.0
# predictions) carries its compute columns: no question id looks like it, and the official
# evaluation looks up the data set's ids only.
COMPUTE_KEY = "__csbench_compute__"


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
    """The weights' columns of every table that comes from a model (``WEIGHT_COLUMNS``): whether
    its weights are random, where they came from, the sha256 of the weights file they were made
    from, and the quantisation (the compute columns: :func:`csbench.compute.compute_columns`; all:
    :func:`stamp`)."""
    p = provenance(path)
    spec = p.get("spec")
    label = spec.get("label") if isinstance(spec, dict) else str(spec)
    return {"random_model": bool(p.get("random", False)), "model_source": label or "",
            "model_sha256": p.get("file_sha256") or "", "model_quant": p.get("quantisation") or ""}


def stamp(df, path: str | Path, compute: dict, prompt: dict | None = None):
    """Set every provenance column on ``df`` (a table made from the model at ``path``, or a
    dict): the weights' (:func:`provenance_columns`) and ``compute`` (a scorer's ``compute()``,
    :func:`csbench.compute.compute_columns` or :data:`SERVED_COMPUTE`); for a causal LM's outputs
    also ``prompt``, the prompt format they were made with (``PROMPT_COLUMNS``:
    :meth:`csbench.lm.prompt.PromptFormat.columns`). Returns ``df``."""
    missing = [c for c in COMPUTE_COLUMNS if c not in compute]
    missing += [c for c in PROMPT_COLUMNS if prompt is not None and c not in prompt]
    if missing:
        raise ValueError(f"compute or prompt lacks {', '.join(missing)}: {compute!r}, {prompt!r}")
    for col, value in provenance_columns(path).items():
        df[col] = value
    for col in COMPUTE_COLUMNS:
        df[col] = compute[col]
    for col in PROMPT_COLUMNS if prompt is not None else ():
        df[col] = prompt[col]
    return df


def with_compute(mapping: dict, compute: dict) -> dict:
    """An id -> value mapping (official SQuAD predictions) with ``compute`` under
    :data:`COMPUTE_KEY`."""
    return {**mapping, COMPUTE_KEY: {c: compute[c] for c in COMPUTE_COLUMNS}}


def pop_compute(mapping: dict, path: str | Path) -> tuple[dict, dict]:
    """``(mapping without its compute entry, the compute columns)`` of a mapping written with
    :func:`with_compute`; one without (written before csbench recorded them) is an
    :class:`InputError` naming the file."""
    got = mapping.get(COMPUTE_KEY)
    if not isinstance(got, dict):
        raise written_before(path, [COMPUTE_KEY])
    return {k: v for k, v in mapping.items() if k != COMPUTE_KEY}, \
        columns_of(got, path, COMPUTE_COLUMNS)


def columns_of(record: dict, path: str | Path, columns=PROVENANCE_COLUMNS) -> dict:
    """The provenance ``columns`` of a JSON record written with :func:`stamp` (a ``meta.json``);
    one without them is an :class:`InputError` naming the file."""
    missing = [c for c in columns if c not in record]
    if missing:
        raise written_before(path, missing)
    return {c: record[c] for c in columns}


def written_before(path: str | Path, missing) -> InputError:
    """The error for an output that lacks provenance entries ``missing`` because an older
    csbench wrote it."""
    return InputError(path, f"no {', '.join(missing)}: written before csbench recorded the "
                      "compute device and dtype of every output made from a model (and the "
                      "prompt format of a causal LM's); rerun the "
                      "job that ran the model, and the jobs after it rerun too (snakemake "
                      "--forcerun <that rule>: winowhat_score, twentyq_topic_frequency, "
                      "twentyq_score, protoqa_generate, qads_predict or qads_finetune_fold)")


def read_model_table(path: str | Path, model: str | None, model_column: str = "model",
                     columns=PROVENANCE_COLUMNS):
    """Read a table a job wrote for one model (``.parquet`` or ``.tsv``) and check that it is
    that model's: a file (a directory at the path would be read as a dataset of whatever it
    holds), with the provenance ``columns`` (:func:`stamp`; a causal LM's tables: ``LM_COLUMNS``,
    with the prompt format) and one provenance, and, when ``model`` is given, a ``model_column``
    that names only ``model``. Raises :class:`InputError` naming the file."""
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
    columns = list(columns)
    need = columns + ([model_column] if model is not None else [])
    missing = [c for c in need if c not in df.columns]
    later = set(COMPUTE_COLUMNS) | set(PROMPT_COLUMNS)  # columns csbench added over time
    if missing and set(missing) <= later and set(WEIGHT_COLUMNS) <= set(df.columns):
        raise written_before(path, [f"column {c}" for c in missing])
    if missing:
        raise InputError(path, f"not a table of model {model or '?'}: no column(s) "
                         f"{', '.join(missing)} (every table made from a model carries "
                         f"{', '.join(columns)})")
    if model is not None:
        others = sorted(set(df[model_column].astype(str)) - {model})
        if others:
            raise InputError(path, f"holds rows of model(s) {', '.join(others)}, not only of "
                             f"{model}: a table of another model at this model's path; rerun "
                             "the job that writes it")
    if len(df[columns].drop_duplicates()) > 1:
        raise InputError(path, "rows of more than one model source, compute set-up or prompt "
                         "format: " + "; ".join(str(r) for r in df[columns]
                                                .drop_duplicates().to_dict("records")[:3]))
    return df
