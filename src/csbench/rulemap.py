"""The map rule -> script -> library module of the workflow, read from its files.

``python -m csbench.rulemap`` prints it as a Markdown table; docs/ARCHITECTURE.md holds it between
``<!-- rulemap:start -->`` and ``<!-- rulemap:end -->`` (a test keeps it current;
``python -m csbench.rulemap --write`` rewrites that block). Each rule of
the Snakefile and ``workflow/rules/*.smk`` in order, its ``script:`` and the ``csbench`` modules that
script imports, leaving out the plumbing every script uses (``PLUMBING``). Read as text: nothing
of the workflow is run, so the map does not depend on a config.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

from csbench.io import atomic_open

REPO = Path(__file__).resolve().parents[2]
# logging, atomic writers, provenance stamps: every job uses them, whatever it computes
PLUMBING = ("csbench.logs", "csbench.io", "csbench.provenance")
START, END = "<!-- rulemap:start -->\n", "\n<!-- rulemap:end -->"  # the block in ARCHITECTURE.md

_RULE = re.compile(r"^\s*(?:rule|checkpoint)(?:\s+(\w+))?\s*:", re.M)
_NAME = re.compile(r"^\s*name\s*:\s*\n?\s*f?[\"']([^\"']+)[\"']", re.M)
_SCRIPT = re.compile(r"^\s*script\s*:\s*\n?\s*[\"']([^\"']+)[\"']", re.M)


def _module(parts: list[str], src: Path) -> str:
    """The longest prefix of ``parts`` (``csbench`` first) that is a module or package of the
    library under ``src``."""
    for n in range(len(parts), 1, -1):
        path = src.joinpath(*parts[:n])
        if path.with_suffix(".py").exists() or (path / "__init__.py").exists():
            return ".".join(parts[:n])
    return "csbench"


def script_modules(script: Path, src: Path = REPO / "src") -> list[str]:
    """The ``csbench`` modules ``script`` imports (``from csbench.a import b`` names ``csbench.a.b``
    where ``b`` is a module, else ``csbench.a``), plumbing left out, in first-import order."""
    found: list[str] = []
    for node in ast.walk(ast.parse(script.read_text(), str(script))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "csbench":
            names = [_module(node.module.split(".") + [a.name], src) for a in node.names]
        elif isinstance(node, ast.Import):
            names = [_module(a.name.split("."), src) for a in node.names
                     if a.name.split(".")[0] == "csbench"]
        else:
            continue
        found += [m for m in dict.fromkeys(names) if m not in found and m not in PLUMBING]
    return found


def rules(repo: Path = REPO) -> list[tuple[str, str | None, list[str]]]:
    """(rule, script relative to the repo or None, library modules) for every rule, in the order
    of the Snakefile's includes (the Snakefile's own rules last); a rule named by an f-string
    shows each ``{...}`` as ``*``."""
    snakefile = repo / "Snakefile"
    includes = re.findall(r"^include:\s*[\"']([^\"']+)[\"']", snakefile.read_text(), re.M)
    out = []
    for path in [repo / i for i in includes] + [snakefile]:
        text = path.read_text()
        starts = list(_RULE.finditer(text))
        for i, m in enumerate(starts):
            body = text[m.end():starts[i + 1].start() if i + 1 < len(starts) else len(text)]
            name = m.group(1) or re.sub(r"\{[^}]*\}", "*", _NAME.search(body).group(1))
            script = _SCRIPT.search(body)
            if script is None:
                out.append((name, None, []))
                continue
            file = (path.parent / script.group(1)).resolve()
            out.append((name, file.relative_to(repo.resolve()).as_posix(),
                        script_modules(file, repo / "src")))
    return out


def rulemap_table(repo: Path = REPO) -> str:
    """Markdown table: rule | script | library modules (``csbench.`` left off)."""
    rows = ["| rule | script | library modules |", "|---|---|---|"]
    for name, script, modules in rules(repo):
        mods = ", ".join(f"`{m.removeprefix('csbench.')}`" for m in modules) or "-"
        rows.append(f"| `{name}` | `{script}` | {mods} |" if script else
                    f"| `{name}` | none (targets only) | - |")
    return "\n".join(rows)


def write_doc(doc: Path = REPO / "docs" / "ARCHITECTURE.md") -> None:
    """Replace the map between the markers of ``doc`` with the current one."""
    head, rest = doc.read_text().split(START, 1)
    tail = rest.split(END, 1)[1]
    table = rulemap_table()
    with atomic_open(doc) as fh:
        fh.write(f"{head}{START}{table}{END}{tail}")


if __name__ == "__main__":
    import sys

    if sys.argv[1:] == ["--write"]:
        write_doc()
    else:
        print(rulemap_table())
