"""A job of one model in its own process, for tests/test_lm_cache_concurrent.py (run as
``python tests/lm_cache_worker.py '<json>'``; nothing shared with the test process but the cache
directory). No torch here: the "model" answers from the table of scores the test computed with
the tiny model (a cold single-process run), through the engine's shared cache lookup
(:class:`csbench.lm.base.Scorer`) and in chunks committed one by one, as the local engine does.

``{"mode": "score", "cache": dir, "model_key": key, "job": name, "requests": [[ctx, cont], ...],
"keys": [...], "table": [[lp, n], ...] (per request), "commit_every": n, "delay": s,
"go": file}``: create ``<go>.<job>.ready``, wait for ``go`` to exist, score the requests through
the cache, ``delay`` seconds per chunk computed; prints ``{"scores": [...], "stats": {...}}``.

``{"mode": "die", "cache": dir, "model_key": key, "job": name, "rows": [[key, req, lp, n], ...],
"commits": k}``: store the rows in ``k`` commits, then start one more, write junk values for the
same keys (with valid checksums) until SQLite has put some into the file, and SIGKILL itself
in the middle of that commit.
"""
import json
import os
import signal
import sys
import time
from pathlib import Path

from csbench.lm.base import Scorer
from csbench.lm.cache import ScoreCache, score_checksum
from csbench.lm.cache_files import CacheDir


class TableScorer(Scorer):
    backend = "table"

    def __init__(self, cache, table: dict, commit_every: int, delay: float):
        super().__init__()
        self.cache, self.table, self.commit_every, self.delay = cache, table, commit_every, delay

    def _loglikelihood(self, requests, keys):
        n, out = self.commit_every, []
        for i in range(0, len(requests), n):
            out += self._lookup_and_score(requests[i:i + n], keys[i:i + n], None, i)
        return out

    def _score_todo(self, requests, todo, results, ckeys, prep, offset) -> None:
        time.sleep(self.delay)
        self.stats["unique"] += len(todo)
        for i in todo:
            results[i] = tuple(self.table[tuple(requests[i])])
        self.cache.put([(*ckeys[i], *results[i]) for i in todo])


def score(a: dict) -> None:
    cache = ScoreCache(CacheDir(a["cache"], a["job"]), a["model_key"])
    reqs = [tuple(r) for r in a["requests"]]
    s = TableScorer(cache, dict(zip(reqs, a["table"])), a["commit_every"], a["delay"])
    Path(f"{a['go']}.{a['job']}.ready").touch()
    while not os.path.exists(a["go"]):
        time.sleep(0.005)
    got = s.loglikelihood(reqs, keys=a["keys"])
    print(json.dumps({"scores": got, "stats": s.stats}))


def die(a: dict) -> None:
    c = ScoreCache(CacheDir(a["cache"], a["job"]), a["model_key"])
    rows, k = a["rows"], a["commits"]
    step = -(-len(rows) // k)
    for i in range(0, len(rows), step):
        c.put([tuple(r) for r in rows[i:i + step]])
    con = c.writer.connect()
    con.execute("PRAGMA cache_size=1")  # dirty pages go to the file before the commit
    con.execute("BEGIN")
    m = a["model_key"]
    junk = [(m, key, req, -123.0, 7, score_checksum(m, key, req, -123.0, 7))
            for key, req, _, _ in rows]
    junk += [(m, f"junk/{i}", "0" * 40, -1.0, 1, score_checksum(m, f"junk/{i}", "0" * 40, -1.0, 1))
             for i in range(3000)]
    con.executemany("INSERT OR REPLACE INTO scores VALUES (?,?,?,?,?,?)", junk)
    assert os.path.exists(f"{c.path}-journal")
    print(json.dumps({"file": str(c.path)}), flush=True)
    os.kill(os.getpid(), signal.SIGKILL)


if __name__ == "__main__":
    args = json.loads(sys.argv[1])
    {"score": score, "die": die}[args["mode"]](args)
