"""WSD framework normaliser: instances with sentences and gold keys, exact original layout."""
import pytest

from csbench.data import wsd_eval
from csbench.errors import InputError


@pytest.fixture(scope="module")
def root(repo):
    return repo / "resources/demo/mirror/wsd_eval"


def paths(root, name):
    return {f: root / f for f in wsd_eval.files_of(name)}


def test_tables_need_both_files():
    files = list(wsd_eval.files_of("ALL")) + [wsd_eval.files_of("senseval2")[0]]
    assert wsd_eval.tables(files) == {"ALL": list(wsd_eval.files_of("ALL"))}


def test_all_table(root):
    df = wsd_eval.normalise("ALL", paths(root, "ALL"))
    assert list(df.columns) == list(wsd_eval.COLUMNS)
    assert len(df) == 14
    r = df.iloc[0]
    assert r["id"] == "senseval2.d000.s000.t000" and r["lemma"] == "house" and r["pos"] == "NOUN"
    assert r["tokens"][r["position"]] == "house"
    assert list(df.iloc[2]["gold"]) == ["vote%2:41:13::", "vote%2:41:10::"]
    part = wsd_eval.normalise("semeval2007", paths(root, "semeval2007"))
    assert set("semeval2007." + part["id"]) <= set(df["id"])


def test_bad_key_line(root, tmp_path):
    p = paths(root, "senseval2")
    key = tmp_path / "k.txt"
    key.write_text("d000.s000.t000 house%1:14:02::\nd000.s000.t001\n")
    p[wsd_eval.files_of("senseval2")[1]] = key
    with pytest.raises(InputError, match=r"k.txt:2"):
        wsd_eval.normalise("senseval2", p)
