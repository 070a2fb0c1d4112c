"""The data set registry: the ``datasets`` config section, read into one normalised table per set.

A data set is ``name -> {kind, path, columns, settings}`` (workflow/schemas/datasets.schema.yaml,
docs/datasets.md). The built-in sets (winogrande_dev, winogrande_test, wsc, csqa2, csqa2_train,
protoqa_dev, squad_v2_dev) are entries of the same section with their settings in the schema, so
built-ins and users' sets are read, validated and named the same way.

API (stable; tasks use only these):

* :func:`check_config` (parse time, ``common.smk``): every entry checked (kind set, path set and
  existing, roles of its kind, columns present in the file's header); a
  :class:`csbench.errors.ConfigError` names the key. Returns name -> entry.
* :func:`names` ``(config, kind=None)``: the configured names (of one kind).
* :func:`input_path` ``(entry, data_table)``: the file a rule takes as input (a normalised table's
  Parquet path for ``<source>:<table>``), so editing it reruns the rules that read it.
* :func:`read_params` ``(entry)``: what a reader's output depends on besides the file (a rule's
  ``params``); :func:`read_entry` reads a file with them; :func:`read_in_part`: whether they read
  only some of its items (a ``where`` filter, a ``limit`` sample).
* :func:`read_dataset` ``(name, config, path=None)``: the normalised table of a set (columns
  ``KINDS[kind].columns``, one row per item, source ids kept, the ``where`` filter and then the
  ``limit``/``seed`` sample applied);
  ``path``: the file to read (a rule's input; default: the entry's path, ``<source>:<table>`` as
  ``results/data/<source>/<table>.parquet``). Bad rows raise :class:`csbench.errors.InputError`
  naming the file and line.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import ConfigError, InputError
from . import formats
from .kinds import KINDS, ROWS, protoqa_native

__all__ = ["KINDS", "TEXT_ROLES", "check_config", "names", "entry", "input_path", "of_kind",
           "read_dataset", "read_entry", "read_in_part", "read_params", "table_ref"]


def table_ref(path: str) -> tuple[str, str] | None:
    """``(source, table)`` when ``path`` is ``<source>:<table>`` of a known source, else None."""
    from ..data import SOURCES

    src, sep, table = path.partition(":")
    return (src, table) if sep and src in SOURCES and table else None


def names(config: dict, kind: str | None = None) -> list[str]:
    return [n for n, e in config["datasets"].items() if kind is None or e["kind"] == kind]


def entry(config: dict, name: str) -> dict:
    try:
        return config["datasets"][name]
    except KeyError:
        raise ConfigError(f"unknown data set {name!r}: not under datasets (configured: "
                          f"{sorted(config['datasets'])})") from None


def input_path(e: dict, data_table=None) -> str:
    """The file a rule reads for entry ``e`` (``data_table(source, table)`` for a table)."""
    ref = table_ref(e["path"])
    if ref is None:
        return e["path"]
    return data_table(*ref) if data_table else f"results/data/{ref[0]}/{ref[1]}.parquet"


def read_params(e: dict) -> dict:
    """What :func:`read_entry`'s table of entry ``e`` depends on besides the file's content: its
    kind, columns and ``where``/``limit``/``seed`` settings (a rule's ``params``;
    ``read_entry(read_params(e), path)`` reads the same table as ``read_entry(e, path)``). Not
    ``settings.fewshot``: 20Q takes the pool set's own file and params beside it (rule
    ``twentyq_dataset``). ``where`` only when set: a null filter and none read the same table, so
    a set without one keeps the params of a reader without filters (no job of it reruns)."""
    settings = {k: e["settings"][k] for k in ("limit", "seed")}
    if e["settings"].get("where"):
        settings["where"] = dict(e["settings"]["where"])
    return {"kind": e["kind"], "columns": dict(e["columns"]), "settings": settings}


def read_in_part(e: dict) -> bool:
    """Whether entry ``e`` (or its :func:`read_params`) reads only some of its file's items: a
    ``settings.where`` filter or a ``limit`` sample."""
    return bool(e["settings"].get("where")) or e["settings"]["limit"] is not None


def _role_column(e: dict, role: str) -> str:
    return e["columns"].get(role, role)


def check_config(config: dict, root: str | Path = ".") -> dict[str, dict]:
    """Parse-time check of every ``datasets`` entry (paths relative to ``root``); returns them."""
    out = {}
    for name, e in config["datasets"].items():
        key = f"datasets.{name}"
        if e["kind"] is None:
            raise ConfigError(f"config key '{key}.kind': must be set (one of {sorted(KINDS)})")
        kind = KINDS[e["kind"]]
        if not e["path"]:
            raise ConfigError(f"config key '{key}.path': must be set (a file or <source>:<table>)")
        for role in e["columns"]:
            if role not in kind.roles:
                raise ConfigError(f"config key '{key}.columns.{role}': {role!r} is not a role of "
                                  f"kind {kind.name} (its roles: {', '.join(kind.roles) or 'none'})")
        fewshot = e["settings"]["fewshot"]
        if fewshot is not None:
            other = config["datasets"].get(fewshot)
            if kind.name != "yesno" or other is None or other["kind"] != "yesno" or fewshot == name:
                raise ConfigError(f"config key '{key}.settings.fewshot': {fewshot!r} must name another "
                                  "yesno data set, on a yesno data set")
        ref = table_ref(e["path"])
        if ref is None:
            _check_file(key, e, kind, Path(root) / e["path"])
        else:
            _check_where(key, e, _source_columns(ref[0]), False, e["path"])
        out[name] = e
    return out


def _source_columns(source: str) -> list[str]:
    """The columns of a source's normalised tables (``csbench.data.<source>.COLUMNS``)."""
    from ..data import module

    return list(module(source).COLUMNS)


def _check_where(key: str, e: dict, cols, text_only: bool, where: str) -> None:
    """``settings.where`` names columns of the file (``cols``; None: not known before reading)
    and, where every value of the file is text (``text_only``: CSV/TSV), text values."""
    for col, want in (e["settings"]["where"] or {}).items():
        at = f"config key '{key}.settings.where.{col}'"
        if cols is not None and col not in cols:
            raise ConfigError(f"{at}: column {col!r} is not in {where} (its columns: {list(cols)})")
        if text_only and not isinstance(want, str):
            raise ConfigError(f"{at}: every value of {where} is text, so the value must be text "
                              f"(e.g. {str(want).lower()!r}), not {want!r}")


def _check_file(key: str, e: dict, kind, path: Path) -> None:
    if not path.is_file():
        raise ConfigError(f"config key '{key}.path': file not found: {path}")
    if formats.file_format(path) is None:
        raise ConfigError(f"config key '{key}.path': unknown file format of {path} (use .jsonl, "
                          ".json, .csv, .tsv or .parquet, optionally gzipped as <file>.gz)")
    try:
        found = formats.header(path)
    except InputError as exc:
        raise ConfigError(f"config key '{key}.path': {exc}") from None
    cols, complete = found if found is not None else (None, False)
    _check_where(key, e, cols if complete else None,
                 formats.file_format(path) in (".csv", ".tsv"), str(path))
    if found is None or _native(e, kind, cols):
        return
    roles = kind.required + (tuple(r for r in kind.optional if r in e["columns"]) if complete else ())
    for role in roles:
        col = _role_column(e, role)
        if col not in cols:
            where = f"{key}.columns.{role}" if role in e["columns"] else f"{key}.columns"
            raise ConfigError(f"config key '{where}': column {col!r} (role {role}) is not in {path} "
                              f"(its columns: {cols})")


def _native(e: dict, kind, cols) -> bool:
    """Whether a protoqa/squad file is in its own format (fixed fields, no column map)."""
    if kind.name == "squad":
        return True
    if kind.name == "protoqa" and not e["columns"]:
        return "metadata" in cols or "cluster_answers" in cols
    return False


def read_dataset(name: str, config: dict, path: str | Path | None = None) -> pd.DataFrame:
    """The normalised table of data set ``name`` (see the module docstring)."""
    e = entry(config, name)
    return read_entry(e, path if path is not None else input_path(e), name)


def read_entry(e: dict, path: str | Path, name: str = "<data set>") -> pd.DataFrame:
    kind = KINDS[e["kind"]]
    path = Path(path)
    keep = RowFilter(path, e["settings"].get("where"))
    if kind.name == "squad":
        df = _squad(path, keep)
    elif kind.name == "protoqa" and path.suffix == ".parquet" and not e["columns"]:
        df = _fixed_table(path, kind, keep)  # a normalised ProtoQA table (protoqa:<table>)
    else:
        df = _rows(e, kind, path, keep)
    return _sample(df, kind, e["settings"])


class RowFilter:
    """A set's ``settings.where``: a record is kept when each named column holds its value,
    compared without conversion (text with text, an integer or a boolean with one of the same
    type). A record without such a column, or a file of which no record is kept, is an
    :class:`InputError` naming the file."""

    def __init__(self, path: Path, want: dict | None):
        self.path, self.want = path, dict(want or {})

    @staticmethod
    def _equal(value, want) -> bool:
        if isinstance(want, bool):
            return isinstance(value, (bool, np.bool_)) and bool(value) == want
        if isinstance(want, int):
            return (isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
                    and int(value) == want)
        return isinstance(value, str) and value == want

    def keeps(self, where, rec: dict) -> bool:
        """Whether record ``rec`` (at ``where``, a :class:`formats.Where`) is kept."""
        for col, want in self.want.items():
            if col not in rec:
                raise where.error(f"no column {col!r} (settings.where); the record has {sorted(rec)}")
            if not self._equal(rec[col], want):
                return False
        return True

    def table(self, df: pd.DataFrame) -> pd.DataFrame:
        """The kept rows of a table read whole (a SQuAD file, a normalised table)."""
        if not self.want:
            return df
        missing = [c for c in self.want if c not in df.columns]
        if missing:
            raise InputError(self.path, f"no column(s) {missing} (settings.where); its columns: "
                             f"{list(df.columns)}")
        kept = [all(self._equal(v, w) for v, w in zip(vals, self.want.values()))
                for vals in zip(*(df[c].tolist() for c in self.want))]
        return self.nonempty(df[kept].reset_index(drop=True))

    def nonempty(self, df: pd.DataFrame) -> pd.DataFrame:
        if self.want and df.empty:
            raise InputError(self.path, f"no record has {self.want} (settings.where)")
        return df


def _rows(e: dict, kind, path: Path, keep: RowFilter) -> pd.DataFrame:
    make = ROWS[kind.name]
    rows, seen = [], {}
    roles = {r: _role_column(e, r) for r in kind.roles}
    for position, (where, rec) in enumerate(formats.records(path), start=1):
        if not keep.keeps(where, rec):
            continue  # its position still counts: ids by position do not move with the filter
        if kind.name == "protoqa" and not e["columns"] and "metadata" in rec:
            row = protoqa_native(where, rec)
        else:
            for role in kind.required:
                if roles[role] not in rec:
                    raise where.error(f"no column {roles[role]!r} (role {role}); the record has "
                                      f"{sorted(rec)}")
            row = make(where, lambda role: rec.get(roles[role]) if roles[role] in rec else None,
                       position)
        first = seen.setdefault(row["id"], where)
        if first is not where:
            at = f"line {first.line}" if first.line is not None else f"row {first.row + 1}"
            raise where.error(f"duplicate id {row['id']!r} (first at {at})")
        rows.append(row)
    df = keep.nonempty(pd.DataFrame(rows, columns=list(kind.columns)))
    if kind.name == "winograd":
        df["answer"] = df["answer"].astype("Int8")
    return df


def _fixed_table(path: Path, kind, keep: RowFilter) -> pd.DataFrame:
    if not path.exists():
        raise InputError(path, "file not found")
    df = keep.table(pd.read_parquet(path))
    missing = [c for c in kind.columns if c not in df.columns]
    if missing:
        raise InputError(path, f"not a {kind.name} table: no column(s) {missing}")
    return df[list(kind.columns)].reset_index(drop=True)


def _squad(path: Path, keep: RowFilter) -> pd.DataFrame:
    from ..data.squad_v2 import read_squad

    if formats.file_format(path) == ".json":
        return keep.table(read_squad(path))
    return _fixed_table(path, KINDS["squad"], keep)


def _sample(df: pd.DataFrame, kind, settings: dict) -> pd.DataFrame:
    """A seeded sample of ``limit`` items in file order (a yes/no set's train rows all kept)."""
    limit = settings["limit"]
    if limit is None:
        return df
    pool = df[df["split"] != "train"] if kind.name == "yesno" else df
    if limit >= len(pool):
        return df
    keep = pool.sample(n=limit, random_state=settings["seed"]).index
    if kind.name == "yesno":
        keep = keep.union(df.index[df["split"] == "train"])
    return df.loc[df.index.isin(keep)].reset_index(drop=True)


# kind -> the role holding an item's text where a task searches or compares any kind (the
# contamination scans, the audits); a winograd set's sentence has its `_` blank
TEXT_ROLES = {"winograd": "sentence", "yesno": "question", "protoqa": "question",
              "squad": "question", "text": "text"}


def of_kind(config: dict, name: str, kinds, key: str) -> dict:
    """The entry of data set ``name`` that config key ``key`` names, checked at parse time: a
    name not under ``datasets``, or a set of a kind not in ``kinds``, is a
    :class:`ConfigError` naming ``key``."""
    e = config["datasets"].get(name)
    if e is None:
        raise ConfigError(f"config key '{key}': {name!r} is not a data set (configured under "
                          f"datasets: {sorted(config['datasets'])})")
    if e["kind"] not in kinds:
        raise ConfigError(f"config key '{key}': data set {name!r} is of kind {e['kind']}, not "
                          f"{' or '.join(kinds)}")
    return e


def list_of_kind(config: dict, value, kinds, key: str) -> dict[str, dict]:
    """The data sets config key ``key`` names (``value``: one name or a list), in order: name ->
    entry (:func:`of_kind`), checked at parse time; an empty list or a set named twice is a
    :class:`ConfigError` naming ``key``."""
    names = [value] if isinstance(value, str) else list(value)
    if not names or len(set(names)) < len(names):
        raise ConfigError(f"config key '{key}': {names!r} must name at least one data set, "
                          "none twice")
    return {n: of_kind(config, n, kinds, key) for n in names}
