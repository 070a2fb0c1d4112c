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
                    merged = copy.deepcopy(sub["default"])
                    merged.update(instance[name])
                    instance[name] = merged
        yield from validate_props(validator, properties, instance, schema)

    return validators.extend(cls, {"properties": set_defaults})


DefaultFillingValidator = _with_defaults(Draft202012Validator)


def load_schema(path: str | Path) -> tuple[dict, Registry]:
    path = Path(path).resolve()
    schema = yaml.safe_load(path.read_text())
    schema["$id"] = path.as_uri()

    def retrieve(uri: str):
        from urllib.parse import urlparse
        from urllib.request import url2pathname

        contents = yaml.safe_load(Path(url2pathname(urlparse(uri).path)).read_text())
        # A "$schema" in a section file would make jsonschema switch to its stock validator
        # class for that section, which does not fill defaults: all sections use ours.
        contents.pop("$schema", None)
        return DRAFT202012.create_resource(contents)

    registry = Registry(retrieve=retrieve).with_resource(path.as_uri(), Resource.from_contents(schema))
    return schema, registry


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


def validate(config: dict, schema_path: str | Path) -> dict:
    """Validate ``config`` in place (filling defaults); raise :class:`ConfigError` naming keys."""
    schema, registry = load_schema(schema_path)
    validator = DefaultFillingValidator(schema, registry=registry)
    # Two passes: the first fills defaults (nested objects get their defaults too), the
    # second reports errors against the completed config.
    list(validator.iter_errors(config))
    errors = sorted(validator.iter_errors(config), key=lambda e: list(e.absolute_path))
    if errors:
        lines = [f"config key '{_key(e)}': {e.message}" for e in errors[:20]]
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(lines))
    return config


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
