"""Conda is not available here, so check statically that every rule's conda env lists the
third-party packages its script imports, directly or through the csbench modules it uses."""
from __future__ import annotations

import ast
import functools
import re
import sys
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
RULE_RE = re.compile(r"^\s*rule\b[^\n]*:\s*$", re.M)


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def rules_with_envs():
    """(smk file, conda env path, script path) for every rule that has both."""
    out = []
    for smk in sorted((REPO / "workflow" / "rules").glob("*.smk")):
        text = smk.read_text()
        starts = [m.start() for m in RULE_RE.finditer(text)] + [len(text)]
        for a, b in zip(starts, starts[1:]):
            block = text[a:b]
            env = re.search(r"conda:\s*\n\s*['\"]([^'\"]+)['\"]", block)
            script = re.search(r"script:\s*\n\s*['\"]([^'\"]+)['\"]", block)
            if env and script:
                out.append((smk, (smk.parent / env.group(1)).resolve(),
                            (smk.parent / script.group(1)).resolve()))
    return out


def _module_file(mod: str) -> Path | None:
    base = SRC.joinpath(*mod.split("."))
    for cand in (base.with_suffix(".py"), base / "__init__.py"):
        if cand.exists():
            return cand
    return None


@functools.cache
def parsed(path: Path) -> ast.Module:
    """A module's syntax tree, parsed once per test run (every script's walk reaches the same
    csbench modules)."""
    return ast.parse(path.read_text())


@functools.cache
def installed_distributions() -> dict:
    """Top-level module -> distributions, read once (it scans every installed package's files)."""
    return packages_distributions()


def imports_of(path: Path, seen: set[Path] | None = None) -> set[str]:
    """Top-level names of third-party modules imported by ``path`` and csbench modules it uses."""
    seen = set() if seen is None else seen
    if path in seen:
        return set()
    seen.add(path)
    found: set[str] = set()
    tree = parsed(path)
    pkg = None
    if SRC in path.parents:
        rel = path.relative_to(SRC).with_suffix("")
        parts = list(rel.parts)
        pkg = ".".join(parts if parts[-1] == "__init__" and parts.pop() is not None else parts[:-1])
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level and pkg:
                base = pkg.split(".")
                base = base[: len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            names = [mod] + [f"{mod}.{a.name}" for a in node.names]
        for name in names:
            top = name.split(".")[0]
            if top == "csbench":
                f = _module_file(name)
                if f is not None:
                    found |= imports_of(f, seen)
                    if "importlib" in f.read_text() and f.name == "__init__.py":
                        # a registry that imports its submodules dynamically
                        for sub in sorted(f.parent.glob("*.py")):
                            found |= imports_of(sub, seen)
                    # importing csbench.a.b also runs csbench/a/__init__.py
                    parts = name.split(".")
                    for i in range(1, len(parts)):
                        init = _module_file(".".join(parts[:i]))
                        if init is not None:
                            found |= imports_of(init, seen)
            elif top and top not in sys.stdlib_module_names and top != "snakemake":
                found.add(top)
    return found


def env_packages(env: Path) -> set[str]:
    spec = yaml.safe_load(env.read_text())
    pkgs = set()
    for dep in spec.get("dependencies", []):
        items = dep.get("pip", []) if isinstance(dep, dict) else [dep]
        for item in items:
            name = re.split(r"[=<>!~ \[]", item.strip())[0]
            if name and not name.startswith("-"):
                pkgs.add(_norm(name))
    return pkgs


RULES = rules_with_envs()


def test_rules_are_found():
    assert len(RULES) >= 3


@pytest.mark.parametrize("smk,env,script", RULES, ids=[f"{r[0].stem}:{r[2].name}" for r in RULES])
def test_env_lists_imported_packages(smk, env, script):
    assert env.exists(), f"{smk.name}: conda env {env} does not exist"
    assert script.exists(), f"{smk.name}: script {script} does not exist"
    dists = installed_distributions()
    listed = env_packages(env)
    missing = []
    for mod in sorted(imports_of(script)):
        candidates = {_norm(d) for d in dists.get(mod, [mod])}
        if not candidates & listed:
            missing.append(f"{mod} (from {'/'.join(sorted(candidates))})")
    assert not missing, f"{env.name} lacks packages imported by {script.name}: {missing}"
