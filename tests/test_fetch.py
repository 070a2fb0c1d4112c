import gzip
import hashlib

import pytest

from csbench import fetch
from csbench.errors import ChecksumError, InputError


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def mirror(tmp_path):
    m = tmp_path / "mirror"
    (m / "src").mkdir(parents=True)
    (m / "src" / "a.jsonl").write_bytes(b'{"x": 1}\n')
    (m / "src" / "b.json.gz").write_bytes(b"irrelevant")
    with gzip.open(m / "src" / "c.json.gz", "wb") as fh:
        fh.write(b'{"c": 3}')
    return m


def cfg(files):
    return {"url": "http://invalid.example/", "archive": None, "files": files, "urls": {}}


def test_mirror_copy_verified(mirror, tmp_path):
    out = tmp_path / "raw"
    got = fetch.fetch_source("src", cfg({"a.jsonl": sha(b'{"x": 1}\n')}), out, mirror=str(mirror))
    assert (out / "a.jsonl").read_bytes() == b'{"x": 1}\n'
    assert got == {"a.jsonl": sha(b'{"x": 1}\n')}


def test_gzip_in_mirror_is_decompressed_and_hash_is_of_content(mirror, tmp_path):
    out = tmp_path / "raw"
    fetch.fetch_source("src", cfg({"c.json": sha(b'{"c": 3}')}), out, mirror=str(mirror))
    assert (out / "c.json").read_bytes() == b'{"c": 3}'


def test_null_hash_is_recorded_not_checked(mirror, tmp_path):
    got = fetch.fetch_source("src", cfg({"a.jsonl": None}), tmp_path / "raw", mirror=str(mirror))
    assert got["a.jsonl"] == sha(b'{"x": 1}\n')


def test_checksum_mismatch_names_path_and_hash_and_leaves_nothing(mirror, tmp_path):
    out = tmp_path / "raw"
    with pytest.raises(ChecksumError) as exc:
        fetch.fetch_source("src", cfg({"a.jsonl": "0" * 64}), out, mirror=str(mirror))
    assert "a.jsonl" in str(exc.value) and "0" * 64 in str(exc.value)
    assert not (out / "a.jsonl").exists()
    assert not any(out.glob("*")) if out.exists() else True


def test_missing_file_names_expected_path_and_hash(mirror, tmp_path):
    with pytest.raises(InputError) as exc:
        fetch.fetch_source("src", cfg({"nope.jsonl": "f" * 64}), tmp_path / "raw", mirror=str(mirror))
    msg = str(exc.value)
    assert str(mirror / "src" / "nope.jsonl") in msg and "f" * 64 in msg


def test_failure_removes_files_fetched_earlier_in_the_same_call(mirror, tmp_path):
    out = tmp_path / "raw"
    files = {"a.jsonl": None, "nope.jsonl": None}
    with pytest.raises(InputError):
        fetch.fetch_source("src", cfg(files), out, mirror=str(mirror))
    assert not (out / "a.jsonl").exists()


def test_interrupted_copy_leaves_no_partial_file(mirror, tmp_path, monkeypatch):
    out = tmp_path / "raw"

    def boom(src, dst):
        with open(dst, "wb") as fh:
            fh.write(b"partial")
        raise KeyboardInterrupt

    monkeypatch.setattr(fetch.shutil, "copyfile", boom)
    with pytest.raises(KeyboardInterrupt):
        fetch.fetch_source("src", cfg({"a.jsonl": None}), out, mirror=str(mirror))
    assert list(out.iterdir()) == []


def test_corrupt_gzip_is_reported(mirror, tmp_path):
    with pytest.raises(InputError, match="b.json.gz"):
        fetch.fetch_source("src", cfg({"b.json": None}), tmp_path / "raw", mirror=str(mirror))


def test_empty_file_is_an_error(mirror, tmp_path):
    (mirror / "src" / "empty.txt").write_bytes(b"")
    with pytest.raises(InputError, match="empty"):
        fetch.fetch_source("src", cfg({"empty.txt": None}), tmp_path / "raw", mirror=str(mirror))


def test_skip_entries_are_not_fetched():
    assert fetch.wanted_files({"files": {"a": None, "b": "skip"}}) == {"a": None}


def test_download_from_local_archive(tmp_path, monkeypatch):
    import zipfile

    archive = tmp_path / "src.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("pkg/data/dev.jsonl", '{"a": 1}\n')

    def fake_download(url, dest, timeout=60):
        dest.write_bytes(archive.read_bytes())

    monkeypatch.setattr(fetch, "_download", fake_download)
    c = {"url": "http://x/src.zip", "archive": "zip", "files": {"dev.jsonl": None}, "urls": {}}
    fetch.fetch_source("src", c, tmp_path / "raw")
    assert (tmp_path / "raw" / "dev.jsonl").read_text() == '{"a": 1}\n'
