"""Config validation against the JSON schema, with defaults filled in and errors naming the key.

Defaults fill missing keys; a property marked ``x-merge-defaults: true`` (the per-source ``files``
and ``urls`` maps) is merged key by key with its default instead, so a user can skip or re-hash
one file without restating the others.

The schema (``workflow/schemas/config.schema.yaml``) may ``$ref`` per-task schema files next to
it; every property has a ``default`` and a ``description``, and every object sets
``additionalProperties: false`` so a misspelt key fails before any job runs.
"""
from __future__ import annotations

import copy
from pathlib import Path

import yaml
from jsonschema import Draft202012Validator, validators
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from .errors import ConfigError


def _merged(default: dict, given: dict) -> dict:
    """``given`` over ``default``, key by key, nested maps too (a built-in data set's
    ``settings.limit`` given alone keeps its built-in ``settings.fewshot``)."""
    out = copy.deepcopy(default)
    for k, v in given.items():
        out[k] = _merged(out[k], v) if isinstance(out.get(k), dict) and isinstance(v, dict) else v
    return out


def _with_defaults(cls):
    validate_props = cls.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for name, sub in properties.items():
                if not isinstance(sub, dict) or "default" not in sub:
                    continue
                if name not in instance:
                    instance[name] = copy.deepcopy(sub["default"])
                elif (sub.get("x-merge-defaults") and isinstance(sub["default"], dict)
                      and isinstance(instance[name], dict)):
                    # maps such as sources.<s>.files: user entries override single defaults
                    instance[name] = _merged(sub["default"], instance[name])
        yield from validate_props(validator, properties, instance, schema)

    return validators.extend(cls, {"properties": set_defaults})


DefaultFillingValidator = _with_defaults(Draft202012Validator)


_SCHEMA_FILES: dict[Path, tuple[tuple[int, int], object]] = {}


def schema_file(path: str | Path):
    """A schema file's contents (a fresh copy). Parsed once per process while the file is
    unchanged: a process that builds many DAGs (the every-key rerun test) validates a config
    against the same schema files each time."""
    path = Path(path).resolve()
    st = path.stat()
    stamp = (st.st_mtime_ns, st.st_size)
    hit = _SCHEMA_FILES.get(path)
    if hit is None or hit[0] != stamp:
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        hit = _SCHEMA_FILES[path] = (stamp, yaml.load(path.read_text(), Loader=loader))
    return copy.deepcopy(hit[1])


def load_schema(path: str | Path) -> tuple[dict, Registry]:
    path = Path(path).resolve()
    schema = schema_file(path)
    schema["$id"] = path.as_uri()

    def retrieve(uri: str):
        from urllib.parse import urlparse
        from urllib.request import url2pathname

        contents = schema_file(url2pathname(urlparse(uri).path))
        # A "$schema" in a section file would make jsonschema switch to its stock validator
        # class for that section, which does not fill defaults: all sections use ours.
        contents.pop("$schema", None)
        return DRAFT202012.create_resource(contents)

    registry = Registry(retrieve=retrieve).with_resource(path.as_uri(), Resource.from_contents(schema))
    return schema, registry


def load_config_file(path: str | Path) -> dict:
    """Read a YAML (or JSON) config file; an empty file, a syntax error or a top level that is
    not a mapping raise :class:`ConfigError` naming the file and, for syntax errors, the line and
    column (Snakemake's own loader names neither)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found") from None
    except UnicodeDecodeError as exc:
        line = path.read_bytes()[:exc.start].count(b"\n") + 1
        raise ConfigError(f"{path}:{line}: config file is not valid UTF-8") from None
    try:
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        what = " ".join(x for x in (exc.context, exc.problem) if x)
        raise ConfigError(f"{where}: YAML syntax error: {what}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: YAML error: {exc}") from None
    if data is None:
        raise ConfigError(f"{path}: config file is empty (expected a mapping of config keys, "
                          "e.g. `tasks: [protoqa]`)")
    if not isinstance(data, dict):
        raise ConfigError(f"{path}:1: the top level must be a mapping of config keys, got "
                          f"{type(data).__name__}")
    return data


def check_config_files(paths) -> None:
    """:func:`load_config_file` on each existing path (the Snakefile calls it on its own
    ``config.yaml`` before ``configfile:``, so a broken file is named with its line)."""
    for p in paths:
        if Path(p).exists():
            load_config_file(p)


def _key(error) -> str:
    parts = [str(p) for p in error.absolute_path]
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = set(error.schema.get("properties", {}))
        extra = [k for k in error.instance if k not in allowed]
        parts = parts + extra[:1]
    if error.validator == "required":
        import re

        m = re.match(r"'([^']+)' is a required property", error.message)
        if m:
            parts.append(m.group(1))
    return ".".join(parts) or "<root>"


def _message(error) -> str:
    """The message for one schema error. Text where the key wants another type says how to give
    a value on the command line. A name refused by a ``propertyNames`` pattern says what a name
    must be in the words of the key it is under: a file of ``sources.<s>.files``/``urls`` lands
    under ``results/raw/<s>/``; any other name (a model, a corpus, a benchmark, a predictions
    file) becomes a file or directory name of its own."""
    if error.validator == "type" and isinstance(error.instance, str):
        return (f"{error.message} (a value given on the command line is text unless it reads as "
                "one: --config 'lm={max_batch_size: 16}' gives the number 16)")
    if "propertyNames" not in error.schema_path:
        return error.message
    path = [str(p) for p in error.absolute_path]
    like = f" (pattern {error.validator_value})" if error.validator == "pattern" else ""
    if len(path) == 3 and path[0] == "sources" and path[2] in ("files", "urls"):
        return (f"name {error.instance!r} must be a relative path of plain names (no '..', no "
                f"leading '/' or '.'){like}: files land under results/raw/{path[1]}/")
    return (f"name {error.instance!r} must be a plain name (no '/', '\\', '..', '.', leading "
            f"dot or control characters){like}: it becomes a file or directory name of its own")


_SCALARS = {"integer": int, "number": (int, float), "boolean": bool, "null": type(None),
            "int": int, "float": float, "bool": bool, "NoneType": type(None)}


def _types(schema: dict) -> list:
    t = schema.get("type")
    if t is None and "enum" in schema:
        return sorted({type(v).__name__ for v in schema["enum"]})
    return t if isinstance(t, list) else [t]


def coerce_text(config: dict, schema_path: str | Path) -> dict:
    """Values given as text where the schema wants a number, a boolean or null, read as YAML.

    Snakemake reads the nested values of ``--config 'lm={max_batch_size: 16}'`` with YAML's
    BaseLoader, so they arrive as strings ("16", "true", "null"); each such string that reads
    as a value of the key's type is replaced by it, in place (anything else is left for the
    schema to refuse)."""
    base = Path(schema_path).resolve().parent

    def resolve(node: dict) -> dict:
        if "$ref" in node:
            return {**schema_file(base / node["$ref"]),
                    **{k: v for k, v in node.items() if k != "$ref"}}
        return node

    def fix(value, schema: dict):
        schema = resolve(schema)
        types = _types(schema)
        if isinstance(value, str) and set(types) & {"integer", "number", "boolean", "null", "int",
                                                    "float", "bool", "NoneType"}:
            try:
                parsed = yaml.safe_load(value)
            except yaml.YAMLError:
                return value
            wanted = tuple(_SCALARS[t] for t in types if t in _SCALARS)
            ok = isinstance(parsed, wanted) and not (isinstance(parsed, bool)
                                                     and "boolean" not in types)
            return parsed if ok or (parsed is None and "NoneType" in types) else value
        if isinstance(value, list) and isinstance(schema.get("items"), dict):
            return [fix(v, schema["items"]) for v in value]
        if isinstance(value, dict):
            props = schema.get("properties", {})
            extra = schema.get("additionalProperties")
            for k, v in value.items():
                sub = props.get(k, extra if isinstance(extra, dict) else None)
                if sub is not None:
                    value[k] = fix(v, sub)
        return value

    fix(config, schema_file(schema_path))
    return config


def validate(config: dict, schema_path: str | Path) -> dict:
    """Validate ``config`` in place (filling defaults; text from ``--config`` read as the key's
    type, :func:`coerce_text`); raise :class:`ConfigError` naming keys."""
    coerce_text(config, schema_path)
    schema, registry = load_schema(schema_path)
    validator = DefaultFillingValidator(schema, registry=registry)
    # Two passes: the first fills defaults (nested objects get their defaults too), the
    # second reports errors against the completed config.
    list(validator.iter_errors(config))
    errors = sorted(validator.iter_errors(config), key=lambda e: list(e.absolute_path))
    if errors:
        lines = [f"config key '{_key(e)}': {_message(e)}" for e in errors[:20]]
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(lines))
    return config


SCHEMA = Path(__file__).resolve().parents[2] / "workflow" / "schemas" / "config.schema.yaml"
_DEFAULTS: dict | None = None


def default(key: str):
    """The schema's default of a config key (``"qads.generation.min_zipf"``, or a section such as
    ``"lm"``): library functions called without a config (tests, benchmarks) take their defaults
    from here, so defaults live only in the schema."""
    global _DEFAULTS
    if _DEFAULTS is None:
        _DEFAULTS = validate({}, SCHEMA)
    node = _DEFAULTS
    for part in key.split("."):
        node = node[part]
    return copy.deepcopy(node)


def check_schema_documented(schema_path: str | Path) -> list[str]:
    """Return the property paths that lack a default or a description (for tests)."""
    problems: list[str] = []
    base = Path(schema_path).resolve().parent

    def walk(node: dict, where: str, top: bool):
        if "$ref" in node:
            ref = yaml.safe_load((base / node["$ref"]).read_text())
            walk(ref, where, top)
        if node.get("type") == "object" and "properties" in node:
            if node.get("additionalProperties", True) is True:
                problems.append(f"{where or '<root>'}: additionalProperties must be false")
        for name, sub in node.get("properties", {}).items():
            path = f"{where}.{name}" if where else name
            if "default" not in sub:
                problems.append(f"{path}: no default")
            if "description" not in sub:
                problems.append(f"{path}: no description")
            walk(sub, path, False)

    walk(yaml.safe_load(Path(schema_path).read_text()), "", True)
    return problems


def schema_leaves(schema_path: str | Path = SCHEMA) -> dict[str, dict]:
    """Dotted key -> schema of every leaf of the config schema (an object without properties,
    such as a name -> spec map, is a leaf); the per-audit and per-data-set keys appear as
    ``audits.*.<key>`` and ``datasets.*.<key>``."""
    base = Path(schema_path).resolve().parent
    out: dict[str, dict] = {}

    def walk(node: dict, where: str) -> None:
        if "$ref" in node:
            node = {**yaml.safe_load((base / node["$ref"]).read_text()),
                    **{k: v for k, v in node.items() if k != "$ref"}}
        if where in ("audits", "datasets"):  # name -> entry maps: one set of keys per entry
            walk(node["additionalProperties"], f"{where}.*")
            return
        props = node.get("properties")
        if node.get("type") == "object" and props:
            for name, sub in props.items():
                walk(sub, f"{where}.{name}" if where else name)
        else:
            out[where] = node

    walk(yaml.safe_load(Path(schema_path).read_text()), "")
    return out


def reruns_table(schema_path: str | Path = SCHEMA) -> str:
    """Markdown table of every config key and the rules whose outputs depend on it (the
    schema's ``x-reruns``; docs/reruns.md holds it)."""
    rows = ["| key | rules whose output depends on it |", "|---|---|"]
    for key, node in schema_leaves(schema_path).items():
        rules = node.get("x-reruns")
        text = ", ".join(f"`{r}`" for r in rules) if rules else "none (cannot change a number)"
        rows.append(f"| `{key}` | {text} |")
    return "\n".join(rows)


def main(argv=None) -> int:
    """``python -m csbench.config FILE...``: check config files (syntax, then the schema) with
    messages that name the file and line; Snakemake reads ``--configfile`` files before the
    workflow runs and names neither. ``python -m csbench.config --reruns``: the table of every
    key and the rules that depend on it."""
    import sys

    argv = sys.argv[1:] if argv is None else argv
    if argv == ["--reruns"]:
        print(reruns_table())
        return 0
    schema = SCHEMA
    status = 0
    for p in argv:
        try:
            cfg = load_config_file(p)
            if schema.exists():
                validate(cfg, schema)
            print(f"{p}: ok")
        except ConfigError as exc:
            print(exc, file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    raise SystemExit(main())
