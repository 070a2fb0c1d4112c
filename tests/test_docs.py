"""The generated parts of the docs are current, and the docs read as documentation."""
import subprocess

from csbench.rulemap import END, START, rulemap_table, rules


def test_architecture_doc_maps_every_rule_to_its_script_and_modules(repo):
    """docs/ARCHITECTURE.md's rule map is `python -m csbench.rulemap`."""
    doc = (repo / "docs/ARCHITECTURE.md").read_text()
    table = doc.split(START, 1)[1].split(END, 1)[0]
    assert table == rulemap_table(), "regenerate it: python -m csbench.rulemap --write"


def test_rule_map_covers_every_script(repo):
    """Every workflow script is some rule's, and every rule that runs a script names one that exists."""
    scripts = {s for _, s, _ in rules(repo) if s}
    assert scripts == {p.relative_to(repo).as_posix() for p in (repo / "workflow/scripts").glob("*.py")}
    assert {"normalise", "results", "all"} <= {name for name, _, _ in rules(repo)}


def test_docs_carry_no_lab_notebook_wording(repo):
    """History lives in git log: no 'session' in the docs or the README."""
    found = subprocess.run(["git", "grep", "-n", "-i", "session", "--", "docs", "README.md"],
                           cwd=repo, capture_output=True, text=True).stdout
    assert found == "", found


def test_readme_is_short(repo):
    n = len((repo / "README.md").read_text().splitlines())
    assert n < 200, f"README.md has {n} lines; details belong in docs/"
