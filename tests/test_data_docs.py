from csbench.data import SOURCES, module
from csbench.data.docs import render


def test_docs_data_md_is_current(repo):
    assert (repo / "docs" / "data.md").read_text() == render(), (
        "docs/data.md is stale: run `python -m csbench.data.docs > docs/data.md`")


def test_every_normaliser_documents_id_column():
    for source in SOURCES:
        try:
            mod = module(source)
        except ModuleNotFoundError:
            continue
        assert "id" in mod.COLUMNS, f"{source}: COLUMNS lacks the original id column"
