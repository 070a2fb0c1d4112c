import gzip

import pytest

from csbench.errors import InputError
from csbench.io import atomic_open, read_json, read_jsonl
from csbench.nltk_setup import LEXNAMES, lexnames_text
from csbench.text import bag_of_words, fold, words


def test_read_jsonl_reports_file_and_line(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_text('{"a": 1}\n\n{"a": 2\n')
    with pytest.raises(InputError, match=r"x.jsonl:3"):
        list(read_jsonl(p))


def test_read_jsonl_missing_field(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_text('{"a": 1}\n{"b": 2}\n')
    with pytest.raises(InputError, match=r"x.jsonl:2: missing field\(s\) a"):
        list(read_jsonl(p, required=("a",)))


def test_read_jsonl_gz_and_empty(tmp_path):
    p = tmp_path / "x.jsonl.gz"
    with gzip.open(p, "wt") as fh:
        fh.write('{"a": 1}\n')
    assert [r for _, r in read_jsonl(p)] == [{"a": 1}]
    e = tmp_path / "e.jsonl"
    e.write_text("")
    with pytest.raises(InputError, match="empty"):
        list(read_jsonl(e))


def test_read_json_error_line(tmp_path):
    p = tmp_path / "x.json"
    p.write_text('{\n"a": 1,\n}')
    with pytest.raises(InputError, match=r"x.json:3"):
        read_json(p)


def test_atomic_open_leaves_nothing_on_failure(tmp_path):
    p = tmp_path / "out.txt"
    with pytest.raises(RuntimeError):
        with atomic_open(p) as fh:
            fh.write("half")
            raise RuntimeError
    assert list(tmp_path.iterdir()) == []


def test_fold_and_words():
    assert fold("  Héllo,  WORLD!\n“Quotes” — dash ") == "héllo world quotes dash"
    assert words("It's a dog's life.") == ["it's", "a", "dog's", "life"]
    assert bag_of_words("Is it running?") == bag_of_words("it runs")


def test_lexnames():
    assert len(LEXNAMES) == 45
    lines = lexnames_text().splitlines()
    assert lines[3] == "03\tnoun.Tops\t1" and lines[44] == "44\tadj.ppl\t3"


def test_wordnet_offline():
    from csbench.wordnet import synsets, wordnet

    assert wordnet().get_version() == "3.0"
    assert any(s.name() == "chewing_gum.n.01" for s in synsets("chewing gum"))
    assert wordnet().synset("dog.n.01").lexname() == "noun.animal"
