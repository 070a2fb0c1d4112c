"""The LM cache's integrity (issue 29): only valid values are stored; every entry carries a
checksum verified on read (a mismatch, a NULL or an invalid value is a miss, logged, recomputed);
files written before checksums are migrated; a damaged file is moved aside; refresh_cache."""
from __future__ import annotations

import math
import sqlite3
import struct
from pathlib import Path

import pytest

from csbench.lm import open_scorer
from csbench.lm.cache import ScoreCache, request_fingerprint, samples_checksum, score_checksum

REQS = [("The cat sat on the", " mat."), ("The cat sat on the", " hat"),
        ("Alice thanked Bob because", " he helped her."), ("Question: alive? Answer:", " yes")]
KEYS = [f"demo/orig/{i}/1" for i in range(len(REQS))]


@pytest.fixture(scope="module")
def reference(tiny_lm_dir):
    return open_scorer(tiny_lm_dir, {"device": "cpu"}).loglikelihood(REQS)


def same(got, want):
    """Equal up to the engine's batch invariance (|difference| <= 1e-5): a request recomputed
    alone may differ in the last bits from the batch that first scored it."""
    return len(got) == len(want) and all(
        n == m and abs(a - b) <= 1e-5 for (a, n), (b, m) in zip(got, want))


def scorer(tiny_lm_dir, tmp_path, **kw):
    return open_scorer(tiny_lm_dir, {"device": "cpu", **kw}, tmp_path / "lm")


def cache_file(tmp_path):
    """The one file the scorers so far wrote (finished: its scorer was collected or closed)."""
    (path,) = (tmp_path / "lm").glob("lm-*/*.sqlite")
    return path


def test_put_refuses_values_that_are_not_log_probabilities(tmp_path):
    c = ScoreCache(tmp_path, "m")
    for lp, n in [(math.nan, 3), (-math.inf, 3), (math.inf, 3), (0.5, 3), (None, 3), ("-1", 3),
                  (-1.0, 0), (-1.0, None)]:
        with pytest.raises(ValueError, match=rf"{c.path}: refusing to store key 'k2'"):
            c.put([("k1", "r1", -1.0, 2), ("k2", "r2", lp, n)])
    assert c.get([("k1", "r1")]) == {}  # nothing of a refused batch is written
    c.put([("k3", "r3", 5e-5, 2)])      # up to 1e-4 above 0 counts as 0
    assert c.get([("k3", "r3")]) == {("k3", "r3"): (0.0, 2)}


def test_null_row_is_a_logged_miss_then_recomputed(tiny_lm_dir, tmp_path, reference, caplog):
    assert scorer(tiny_lm_dir, tmp_path).loglikelihood(REQS, keys=KEYS) == reference
    with sqlite3.connect(cache_file(tmp_path)) as con:  # what NaN became before (issue 29)
        con.execute("UPDATE scores SET logprob=NULL WHERE key=?", (KEYS[2],))
    again = scorer(tiny_lm_dir, tmp_path)
    with caplog.at_level("WARNING"):
        assert same(again.loglikelihood(REQS, keys=KEYS), reference)
    assert again.stats["cached"] == 3 and again.stats["cache_rejected"] == 1
    assert f"1 entries not used (the log-prob is NULL: 1; e.g. key '{KEYS[2]}')" in caplog.text
    third = scorer(tiny_lm_dir, tmp_path)  # the entry was overwritten
    assert same(third.loglikelihood(REQS, keys=KEYS), reference) and third.stats["cached"] == 4


def test_bit_flipped_score_fails_its_checksum_and_is_recomputed(tiny_lm_dir, tmp_path, reference,
                                                                caplog):
    first = scorer(tiny_lm_dir, tmp_path)
    assert first.loglikelihood(REQS, keys=KEYS) == reference
    first.cache.close()  # finishes the file
    path = cache_file(tmp_path)
    data = bytearray(path.read_bytes())
    stored = struct.pack(">d", reference[1][0])  # SQLite stores REAL as big-endian IEEE 754
    assert data.count(stored) == 1
    at = data.index(stored) + 7
    data[at] ^= 0x01  # one bit of the score's last byte
    path.write_bytes(bytes(data))
    again = scorer(tiny_lm_dir, tmp_path)
    with caplog.at_level("WARNING"):
        got = again.loglikelihood(REQS, keys=KEYS)
    assert same(got, reference) and got[1][0] != struct.unpack(">d", bytes(data[at - 7:at + 1]))[0]
    assert again.stats["cache_rejected"] == 1 and again.stats["cached"] == 3
    assert "checksum mismatch: 1" in caplog.text and KEYS[1] in caplog.text


def test_old_cache_file_is_migrated_trusting_valid_rows_once(tmp_path, caplog):
    path = tmp_path / f"lm-{'m' * 24}.sqlite"
    with sqlite3.connect(path) as con:  # the schema before checksums
        con.execute("CREATE TABLE scores (model TEXT, key TEXT, req TEXT, logprob REAL, "
                    "n_tokens INTEGER, PRIMARY KEY (model, key, req))")
        con.execute("CREATE TABLE samples (model TEXT, req TEXT, texts TEXT, "
                    "PRIMARY KEY (model, req))")
        con.executemany("INSERT INTO scores VALUES (?,?,?,?,?)",
                        [("m" * 24, "a", "r", -1.5, 2), ("m" * 24, "b", "r", None, 2)])
        con.execute("INSERT INTO samples VALUES (?,?,?)", ("m" * 24, "s", '["x", "y"]'))
    with caplog.at_level("WARNING"):
        c = ScoreCache(tmp_path, "m" * 24)
    assert "2 entries checksummed as they are (trusted once), 1 invalid ones dropped" in caplog.text
    assert c.get([("a", "r"), ("b", "r")]) == {("a", "r"): (-1.5, 2)}
    assert c.get_samples("s") == ["x", "y"] and c.rejected == 0
    assert not path.exists()
    (adopted,) = (tmp_path / f"lm-{'m' * 24}").glob("*-legacy-*.sqlite")  # finished, migrated
    with sqlite3.connect(adopted) as con:
        assert con.execute("PRAGMA journal_mode").fetchone() == ("delete",)
        row = con.execute("SELECT checksum FROM scores WHERE key='a'").fetchone()
    assert row[0] == score_checksum("m" * 24, "a", "r", -1.5, 2)
    assert ScoreCache(tmp_path, "m" * 24).get([("a", "r")]) == {("a", "r"): (-1.5, 2)}


def test_tampered_samples_are_a_miss(tmp_path):
    c = ScoreCache(tmp_path, "m")
    c.put_samples("req", ["one", "two"])
    assert c.get_samples("req") == ["one", "two"]
    c.writer.con.execute("UPDATE samples SET texts='[\"one\", \"tow\"]'")
    c.writer.con.commit()
    assert c.get_samples("req") is None and c.rejected == 1
    c.put_samples("req", ["one", "two"])
    assert c.get_samples("req") == ["one", "two"]


def test_samples_with_cut_flags(tmp_path):
    """Texts stored with their cut flags come back with them; a row stored without them has
    flags None; malformed flags are a miss."""
    c = ScoreCache(tmp_path, "m")
    c.put_samples("old", ["one", "two"])
    c.put_samples("new", ["one", "two"], [True, False])
    assert c.get_samples("old", with_cut=True) == (["one", "two"], None)
    assert c.get_samples("new", with_cut=True) == (["one", "two"], [True, False])
    assert c.get_samples("new") == ["one", "two"]
    with pytest.raises(ValueError, match="malformed cut flags"):
        c.put_samples("bad", ["one"], [True, False])
    blob = '{"texts": ["one", "two"], "cut": [1, 0]}'
    c.writer.con.execute("UPDATE samples SET texts=?, checksum=? WHERE req='new'",
                         (blob, samples_checksum("m", "new", blob)))
    c.writer.con.commit()
    assert c.get_samples("new") is None and c.rejected == 1


def test_truncated_cache_file_is_moved_aside_and_a_fresh_one_used(tiny_lm_dir, tmp_path,
                                                                  reference, caplog):
    many = [(f"Item {i} says", f" option {j}.") for i in range(300) for j in range(2)]
    first = scorer(tiny_lm_dir, tmp_path)
    first.loglikelihood(REQS + many)
    first.cache.close()
    path = cache_file(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])  # truncated
    with caplog.at_level("WARNING"):
        again = scorer(tiny_lm_dir, tmp_path)
        assert same(again.loglikelihood(REQS), reference)
    (aside,) = again.cache.moved_aside
    assert aside.name.startswith(path.name + ".corrupt-") and aside.read_bytes() == data[:len(data) // 2]
    assert f"LM cache {path} is damaged (sqlite3.DatabaseError: database disk image is malformed)" \
        in caplog.text and aside.name in caplog.text
    assert same(scorer(tiny_lm_dir, tmp_path).loglikelihood(REQS), reference)  # the fresh file


def test_damage_found_mid_job_moves_the_file_aside_and_goes_on(tmp_path, caplog):
    c = ScoreCache(tmp_path, "m")
    c.put([("k", "r", -1.0, 1)])
    real = c.writer.con

    class Damaged:
        def execute(self, *a):
            raise sqlite3.DatabaseError("database disk image is malformed")

        def close(self):
            real.close()

    c.writer.con = Damaged()
    with caplog.at_level("WARNING"):
        assert c.get([("k", "r")]) == {}  # the fresh cache has nothing
    assert len(c.moved_aside) == 1 and c.moved_aside[0].exists()
    c.put([("k", "r", -2.0, 1)])
    assert c.path.exists() and c.path != c.moved_aside[0]
    assert c.get([("k", "r")]) == {("k", "r"): (-2.0, 1)}
    locked = sqlite3.OperationalError("database is locked")  # not damage: raised as it is
    fresh = c.writer.con
    c.writer.con = type("Locked", (), {"execute": lambda self, *a: (_ for _ in ()).throw(locked)})()
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        c.get([("k", "r")])
    c.writer.con = fresh


def test_refresh_cache_reads_nothing_and_overwrites(tiny_lm_dir, tmp_path, reference):
    s = scorer(tiny_lm_dir, tmp_path)
    s.cache.put([(KEYS[0], request_fingerprint(*REQS[0]), -99.0, 2)])  # stale but well-formed
    stale = scorer(tiny_lm_dir, tmp_path).loglikelihood(REQS[:1], keys=KEYS[:1])
    assert stale == [(-99.0, 2)]
    fresh = open_scorer(tiny_lm_dir, {"device": "cpu", "refresh_cache": True}, tmp_path / "lm")
    assert fresh.cache.refresh
    assert same(fresh.loglikelihood(REQS, keys=KEYS), reference) and fresh.stats["cached"] == 0
    after = scorer(tiny_lm_dir, tmp_path)
    assert same(after.loglikelihood(REQS, keys=KEYS), reference) and after.stats["cached"] == 4


def test_empty_context_scores_cached_before_lm_eval_encoding_are_never_read(tiny_bos_lm_dir,
                                                                            tmp_path):
    """Empty-context scores cached under the old encoding (the continuation with the
    tokenizer's start token) have the old request hash: never read again; every other request's
    hash is unchanged, so its cached score is still read."""
    import hashlib

    def old_hash(c, x):
        return hashlib.sha1(f"{c}\x1f{x}".encode("utf-8")).hexdigest()

    reqs, keys = [("", " cat"), REQS[0]], ["topic/cat", KEYS[0]]
    assert request_fingerprint(*reqs[1]) == old_hash(*reqs[1])
    assert request_fingerprint(*reqs[0]) != old_hash(*reqs[0])
    s = scorer(tiny_bos_lm_dir, tmp_path)
    s.cache.put([(k, old_hash(*r), -99.0, 2) for k, r in zip(keys, reqs)])
    got = scorer(tiny_bos_lm_dir, tmp_path).loglikelihood(reqs, keys=keys)
    plain = open_scorer(tiny_bos_lm_dir, {"device": "cpu"})
    assert got[1] == (-99.0, 2)  # not an empty context: the cached row is read
    assert same(got[:1], plain.loglikelihood(reqs[:1]))  # scored anew: " cat", no start token
    assert got[0][1] == len(plain.tokenizer.encode(" cat", add_special_tokens=False))
    again = scorer(tiny_bos_lm_dir, tmp_path)
    assert again.loglikelihood(reqs, keys=keys) == got and again.stats["cached"] == 2


def test_one_file_per_writer_named_by_job_and_finished_at_close(tmp_path):
    """A cache writes only its own file (created with its first entry, named by the job), reads
    the others read-only, newest first; it is renamed finished when closed."""
    from csbench.lm.cache_files import CacheDir

    a = ScoreCache(CacheDir(str(tmp_path), "winowhat_score.model=m.shard=0"), "m")
    reader = ScoreCache(tmp_path, "m")
    assert not a.path.exists()
    a.put([("k", "r", -1.0, 1)])
    assert a.path.name.endswith(".open.sqlite")
    assert "-winowhat_score.model=m.shard=0-" in a.path.name
    assert reader.get([("k", "r")]) == {("k", "r"): (-1.0, 1)}  # an unfinished file, same host
    b = ScoreCache(CacheDir(str(tmp_path), "again"), "m")
    b.put([("k", "r", -2.0, 1)])                              # newer: read first
    assert reader.get([("k", "r")]) == {("k", "r"): (-2.0, 1)}
    a.close()
    b.close()
    assert sorted(p.name.endswith(".open.sqlite") for p in (tmp_path / "lm-m").iterdir()) \
        == [False, False]
    assert reader.get([("k", "r")]) == {("k", "r"): (-2.0, 1)} and not reader.path.exists()
    c = ScoreCache(tmp_path, "m")
    assert c.get([("k", "r")]) == {("k", "r"): (-2.0, 1)}
    c.close()
    assert len(list((tmp_path / "lm-m").iterdir())) == 2     # a reader writes no file


def test_unfinished_file_of_another_writer_that_fails_is_skipped_not_moved(tmp_path, caplog):
    good = ScoreCache(tmp_path, "m")
    good.put([("k", "r", -1.0, 1)])
    good.close()
    broken = tmp_path / "lm-m" / "20000101T000000.000000000-job-host-1-ab.open.sqlite"
    broken.write_bytes(b"SQLite format 3\x00" + b"\xff" * 200)   # seen half-written
    c = ScoreCache(tmp_path, "m")
    with caplog.at_level("WARNING"):
        assert c.get([("k", "r"), ("x", "y")]) == {("k", "r"): (-1.0, 1)}
    assert list(c.skipped) == [broken] and not c.moved_aside and broken.exists()
    assert f"LM cache {broken}: not read by this job" in caplog.text
    assert c.get([("x", "y")]) == {}                          # not tried again


def test_wal_cache_of_the_one_file_layout_is_adopted_with_its_wal(tmp_path):
    """The one-file layout's cache (WAL mode, entries still in its -wal) is moved into the
    model's directory, checkpointed and finished: every entry is read."""
    import shutil

    src = tmp_path / "src.sqlite"
    con = sqlite3.connect(src)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA wal_autocheckpoint=0")
    con.execute("CREATE TABLE scores (model TEXT, key TEXT, req TEXT, logprob REAL, "
                "n_tokens INTEGER, checksum TEXT, PRIMARY KEY (model, key, req))")
    con.execute("CREATE TABLE samples (model TEXT, req TEXT, texts TEXT, checksum TEXT, "
                "PRIMARY KEY (model, req))")
    con.execute("INSERT INTO scores VALUES (?,?,?,?,?,?)",
                ("m", "k", "r", -1.5, 2, score_checksum("m", "k", "r", -1.5, 2)))
    con.commit()
    legacy = tmp_path / "lm-m.sqlite"
    shutil.copyfile(src, legacy)                              # as a killed job left it
    shutil.copyfile(f"{src}-wal", f"{legacy}-wal")
    con.close()
    c = ScoreCache(tmp_path, "m")
    assert c.get([("k", "r")]) == {("k", "r"): (-1.5, 2)}
    assert not legacy.exists() and not Path(f"{legacy}-wal").exists()
    (adopted,) = (tmp_path / "lm-m").iterdir()
    assert adopted.name.endswith(".sqlite") and not adopted.name.endswith(".open.sqlite")
    assert ScoreCache(tmp_path, "m").get([("k", "r")]) == {("k", "r"): (-1.5, 2)}


def test_merge_keeps_the_newest_entry_of_every_file_in_one(tmp_path):
    from csbench.lm.cache_files import merge

    for i, lp in enumerate((-1.0, -2.0)):
        c = ScoreCache(tmp_path, "m")
        c.put([("k", "r", lp, 1), (f"only{i}", "r", -3.0, 1)])
        c.put_samples(f"s{i}", ["x"])
        c.close()
    killed = ScoreCache(tmp_path, "m")            # never finished
    killed.put([("late", "r", -4.0, 2)])
    killed.writer.con.close()
    root = tmp_path / "lm-m"
    new = merge(root)
    assert list(root.iterdir()) == [new] and not new.name.endswith(".open.sqlite")
    c = ScoreCache(tmp_path, "m")
    assert c.get([("k", "r"), ("only0", "r"), ("only1", "r"), ("late", "r")]) == {
        ("k", "r"): (-2.0, 1), ("only0", "r"): (-3.0, 1), ("only1", "r"): (-3.0, 1),
        ("late", "r"): (-4.0, 2)}
    assert c.get_samples("s0") == ["x"] and c.get_samples("s1") == ["x"] and c.rejected == 0
    assert merge(root) is None


def test_file_of_a_writer_killed_while_making_its_tables_reads_as_empty(tmp_path, caplog):
    """Its only commit (the tables, and rows in the same transaction) was cut: a hot journal.
    The reader rolls a private copy back: no table, no entry, nothing skipped."""
    import shutil

    src = tmp_path / "src.sqlite"
    con = sqlite3.connect(src, isolation_level=None)
    con.execute("PRAGMA cache_size=1")
    con.execute("BEGIN")
    con.execute("CREATE TABLE scores (model TEXT, key TEXT, req TEXT, logprob REAL, "
                "n_tokens INTEGER, checksum TEXT, PRIMARY KEY (model, key, req))")
    con.executemany("INSERT INTO scores VALUES (?,?,?,?,?,?)",
                    [("m", f"k{i}", "r", -1.0, 1, score_checksum("m", f"k{i}", "r", -1.0, 1))
                     for i in range(3000)])
    root = tmp_path / "lm-m"
    root.mkdir()
    cut = root / "20000101T000000.000000000-job-host-1-ab.open.sqlite"
    shutil.copyfile(src, cut)                                  # as the kill left it
    shutil.copyfile(f"{src}-journal", f"{cut}-journal")
    con.close()
    c = ScoreCache(tmp_path, "m")
    with caplog.at_level("WARNING"):
        assert c.get([("k1", "r")]) == {}
    assert "stopped in the middle of a commit" in caplog.text and not c.skipped
    assert Path(f"{cut}-journal").exists()                     # left as it is
