"""Records of a data set file, each with where it came from (file line, or row for Parquet).

Formats by name: ``.jsonl`` (one object a line), ``.json`` (an array of objects), ``.csv``,
``.tsv`` (a header line, then one record a line; values stay text), ``.parquet``; each of them
gzipped as ``<file>.gz`` (``.zst`` too, as :func:`csbench.io.open_text` reads it).
"""
from __future__ import annotations

import csv
from pathlib import Path
from typing import Iterator

from ..errors import InputError
from ..io import open_text, read_json_array, read_jsonl

FORMATS = (".jsonl", ".json", ".csv", ".tsv", ".parquet")


def file_format(path: str | Path) -> str | None:
    """The format of a file by its name (``.gz``/``.zst`` stripped), or None."""
    name = Path(path).name.lower()
    for comp in (".gz", ".zst"):
        if name.endswith(comp):
            name = name[:-len(comp)]
    return next((f for f in FORMATS if name.endswith(f)), None)


class Where:
    """Where a record is: a file line, or a Parquet row (0-based index, shown 1-based)."""

    def __init__(self, path, line: int | None = None, row: int | None = None):
        self.path, self.line, self.row = str(path), line, row

    def error(self, message: str) -> InputError:
        if self.line is None and self.row is not None:
            message = f"row {self.row + 1}: {message}"
        return InputError(self.path, message, self.line)


def _delimited(path, sep: str) -> Iterator[tuple[Where, dict]]:
    with open_text(path) as fh:
        reader = csv.reader(fh, delimiter=sep)
        try:
            header = next(reader)
        except StopIteration:
            raise InputError(path, "file is empty") from None
        dup = sorted({h for h in header if header.count(h) > 1})
        if dup:
            raise InputError(path, f"header names column(s) {dup} more than once", 1)
        start = reader.line_num + 1
        n = 0
        for values in reader:
            line = start
            start = reader.line_num + 1
            if not values or values == [""]:
                continue
            if len(values) != len(header):
                raise InputError(path, f"{len(values)} fields, the header has {len(header)}", line)
            n += 1
            yield Where(path, line), dict(zip(header, values))
        if n == 0:
            raise InputError(path, "file has a header but no records")


def records(path: str | Path) -> Iterator[tuple[Where, dict]]:
    """``(Where, record)`` for each record of a data set file, in file order."""
    path = Path(path)
    if not path.exists():
        raise InputError(path, "file not found")
    fmt = file_format(path)
    if fmt == ".jsonl":
        for line, rec in read_jsonl(path):
            yield Where(path, line), rec
    elif fmt == ".json":
        for line, rec in read_json_array(path):
            if not isinstance(rec, dict):
                raise InputError(path, "expected a JSON object (one per data set item)", line)
            yield Where(path, line), rec
    elif fmt in (".csv", ".tsv"):
        yield from _delimited(path, "," if fmt == ".csv" else "\t")
    elif fmt == ".parquet":
        import pandas as pd

        try:
            df = pd.read_parquet(path)
        except (OSError, ValueError) as exc:
            raise InputError(path, f"cannot read Parquet ({exc})") from None
        for i, rec in enumerate(df.to_dict("records")):
            yield Where(path, row=i), rec
    else:
        raise InputError(path, "unknown file format (use .jsonl, .json, .csv, .tsv or .parquet, "
                         "optionally gzipped as <file>.gz)")


def header(path: str | Path) -> tuple[list[str], bool] | None:
    """The column names of a file, read cheaply where the format has them up front, and whether
    every record has exactly these (CSV/TSV header, Parquet schema: True; the first JSON Lines
    record: False, a later record may add optional fields); None for a JSON array (read whole)."""
    fmt = file_format(path)
    if fmt in (".csv", ".tsv"):
        with open_text(path) as fh:
            row = next(csv.reader(fh, delimiter="," if fmt == ".csv" else "\t"), None)
        return list(row or []), True
    if fmt == ".parquet":
        import pyarrow.parquet as pq

        try:
            return list(pq.read_schema(path).names), True
        except (OSError, ValueError) as exc:
            raise InputError(path, f"cannot read Parquet ({exc})") from None
    if fmt == ".jsonl":
        for _, rec in read_jsonl(path):
            return list(rec), False
    return None
