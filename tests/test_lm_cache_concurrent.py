"""The LM cache on a cluster: jobs of one model in separate processes (no memory shared, only
the cache directory) score overlapping requests at once, one of them killed mid-job; a job
killed in the middle of a commit. Every score equals a cold single-process run, nothing is
lost, no lock error, and no file is written by two processes (one file per writer)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from csbench.lm import open_scorer
from csbench.lm.cache import request_fingerprint

WORKER = str(Path(__file__).with_name("lm_cache_worker.py"))
REQS = [(f"Item {i} is about the {w}.", f" It is {x}.")
        for i, w in enumerate(["cat", "dog", "sea", "sun", "tree", "car", "rain", "bread",
                               "moon", "song", "road", "milk"])
        for x in ("good", "bad", "big")]
KEYS = [f"ds/{i}/{j}" for i in range(len(REQS) // 3) for j in range(3)]


@pytest.fixture(scope="module")
def cold(tiny_lm_dir):
    """Every request scored by one process without a cache."""
    return open_scorer(tiny_lm_dir, {"device": "cpu"}).loglikelihood(REQS, keys=KEYS)


def close(got, want):
    """Equal up to the engine's batch invariance (|difference| <= 1e-5)."""
    return len(got) == len(want) and all(
        n == m and abs(a - b) <= 1e-5 for (a, n), (b, m) in zip(got, want))


def spawn(args: dict) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.Popen([sys.executable, WORKER, json.dumps(args)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def cache_files(root: Path) -> list[Path]:
    return sorted(root.glob("lm-*/*.sqlite"))


def test_jobs_on_separate_processes_score_at_once_one_killed(tiny_lm_dir, tmp_path, cold):
    cache, go = tmp_path / "lm", tmp_path / "go"
    model_key = open_scorer(tiny_lm_dir, {"device": "cpu"}).model_key
    n = len(REQS)
    # three jobs, each two thirds of the requests (every request in two jobs), a fourth with
    # all of them, killed while it scores; commits of two requests, 5 ms of "compute" each
    # (the victim 300 ms, so that it is still scoring when it is killed)
    parts = {f"job{j}": [(j * n // 3 + i) % n for i in range(2 * n // 3)] for j in range(3)}
    parts["victim"] = list(range(n))
    procs = {job: spawn({"mode": "score", "cache": str(cache), "model_key": model_key,
                         "job": job, "requests": [REQS[i] for i in idx],
                         "keys": [KEYS[i] for i in idx], "table": [cold[i] for i in idx],
                         "commit_every": 2, "delay": 0.3 if job == "victim" else 0.005,
                         "go": str(go) + ("-victim" if job == "victim" else "")})
             for job, idx in parts.items()}
    deadline = time.time() + 300  # four interpreters importing torch on a loaded machine
    ready = [Path(f"{go}.{job}.ready") for job in procs if job != "victim"]
    while not all(p.exists() for p in ready + [Path(f"{go}-victim.victim.ready")]):
        assert time.time() < deadline and all(p.poll() is None for p in procs.values()), \
            [p.communicate() for p in procs.values() if p.poll() is not None]
        time.sleep(0.01)
    # the victim starts first; once it has committed, the others start and it is killed while
    # it sleeps in a chunk (0.3 s each: still scoring, whatever the others have stored by then)
    Path(f"{go}-victim").touch()
    victim = procs.pop("victim")
    while not list(cache.glob("lm-*/*-victim-*.open.sqlite")):
        assert time.time() < deadline and victim.poll() is None, victim.communicate()
        time.sleep(0.002)
    go.touch()  # the others start scoring now, beside the victim
    victim.send_signal(signal.SIGKILL)  # a job killed while it scores and commits
    assert victim.communicate()[0] == "" and victim.returncode == -signal.SIGKILL
    outs = {job: p.communicate(timeout=120) for job, p in procs.items()}
    for job, (out, err) in outs.items():
        assert procs[job].returncode == 0, err
        assert "locked" not in err.lower() and "busy" not in err.lower(), err
        got = json.loads(out)
        assert [tuple(x) for x in got["scores"]] == [cold[i] for i in parts[job]], job
        assert got["stats"]["cache_rejected"] == 0
    files = cache_files(cache)
    jobs = [f.name.split("-")[1] for f in files]
    assert sorted(jobs) == ["job0", "job1", "job2", "victim"]   # one file per writer
    assert all(f.name.endswith(".open.sqlite") == (j == "victim") for f, j in zip(files, jobs))
    # a rerun of the whole set: nothing lost, nothing recomputed, the cold run's numbers
    again = open_scorer(tiny_lm_dir, {"device": "cpu"}, cache)
    assert close(again.loglikelihood(REQS, keys=KEYS), cold)
    assert again.stats["cached"] == n and again.stats["unique"] == 0
    assert again.stats["cache_rejected"] == 0 and not again.cache.skipped


def test_job_killed_in_the_middle_of_a_commit(tiny_lm_dir, tmp_path, cold, caplog):
    cache = tmp_path / "lm"
    s = open_scorer(tiny_lm_dir, {"device": "cpu"}, cache)
    other = list(range(0, 12))                      # another job's entries, finished
    s.cache.put([(KEYS[i], request_fingerprint(*REQS[i]), *cold[i]) for i in other])
    s.cache.close()
    killed = list(range(12, 30))                    # stored in 3 commits before the kill
    rows = [(KEYS[i], request_fingerprint(*REQS[i]), *cold[i]) for i in killed]
    p = spawn({"mode": "die", "cache": str(cache), "model_key": s.model_key, "job": "killed",
               "rows": rows, "commits": 3})
    out, err = p.communicate(timeout=60)
    assert p.returncode == -signal.SIGKILL, err
    path = Path(json.loads(out)["file"])
    journal = Path(f"{path}-journal")
    before = (path.read_bytes(), journal.read_bytes())   # a hot journal: the commit was cut
    with caplog.at_level("WARNING"):
        again = open_scorer(tiny_lm_dir, {"device": "cpu"}, cache)
        got = again.loglikelihood(REQS, keys=KEYS)
    assert got[:30] == cold[:30]                     # read: the committed entries, not the junk
    assert close(got, cold) and again.stats["cached"] == 30
    assert again.stats["unique"] == len(REQS) - 30 and again.stats["cache_rejected"] == 0
    assert "stopped in the middle of a commit" in caplog.text and str(path) in caplog.text
    assert (path.read_bytes(), journal.read_bytes()) == before   # the file is left as it is
    again.cache.close()
    third = open_scorer(tiny_lm_dir, {"device": "cpu"}, cache)     # the rerun completed it
    assert close(third.loglikelihood(REQS, keys=KEYS), cold) and third.stats["unique"] == 0
