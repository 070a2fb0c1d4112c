"""Read cost of the LM cache's one-file-per-writer layout against one file holding the same
entries, measured in the same run (CPU; no model: the entries are synthetic scores with valid
checksums, the lookups those of a scoring job).

A model's cache of ``--files`` files (one per job that wrote, ``--rows`` entries each, written
through :class:`csbench.lm.cache.ScoreCache` as jobs write them) and a copy of every entry in a
single file. A job then opens the cache (a fresh :class:`ScoreCache`) and looks up
``--lookup`` requests per call, as the local engine does per committed chunk, in three cases:

- ``oldest``: every request is in the oldest file (each lookup asks every newer file first: the
  worst case for hits);
- ``spread``: the requests are spread over all files;
- ``misses``: no request is cached (every file is asked for every request: a cold job).

Each case is timed ``--repeat`` times, interleaved between the two layouts; the median is
reported with the ratio to the one-file layout. ::

    .venv/bin/python bench/lm_cache_files.py --files 50 --rows 2000 --lookup 1024 \\
        --out bench/out/lm_cache_files.json
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import time
from pathlib import Path

from csbench.lm.cache import ScoreCache
from csbench.lm.cache_files import CacheDir

MODEL = "bench-model-key-" + "0" * 48


def build(root: Path, files: int, rows: int, rnd: random.Random) -> list[list[tuple]]:
    """``files`` writer files of ``rows`` entries each (oldest first) under ``root/many``, and
    all of them in one file under ``root/one``; the entries per file."""
    per_file = []
    for f in range(files):
        entries = [(f"ds/{f}/{i}", f"{rnd.getrandbits(160):040x}", -rnd.random() * 30,
                    rnd.randint(1, 9)) for i in range(rows)]
        c = ScoreCache(CacheDir(str(root / "many"), f"job{f}"), MODEL)
        c.put(entries)
        c.close()
        per_file.append(entries)
    one = ScoreCache(CacheDir(str(root / "one"), "all"), MODEL)
    for entries in per_file:
        one.put(entries)
    one.close()
    return per_file


def timed(where: Path, pairs: list[tuple[str, str]], lookup: int) -> tuple[float, int]:
    """Seconds for a fresh cache (a new job) to look up ``pairs``, ``lookup`` per call, and
    the number found."""
    t = time.perf_counter()
    c = ScoreCache(where, MODEL)
    found = 0
    for i in range(0, len(pairs), lookup):
        found += len(c.get(pairs[i:i + lookup]))
    c.close()
    return time.perf_counter() - t, found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=50)
    ap.add_argument("--rows", type=int, default=2000)
    ap.add_argument("--lookup", type=int, default=1024)
    ap.add_argument("--requests", type=int, default=4096, help="requests looked up per case")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out")
    a = ap.parse_args()
    rnd = random.Random(0)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        t = time.perf_counter()
        per_file = build(root, a.files, a.rows, rnd)
        built = time.perf_counter() - t
        every = [e for entries in per_file for e in entries]
        cases = {
            "oldest": [(k, r) for k, r, _, _ in per_file[0][:a.requests]],
            "spread": [(k, r) for k, r, _, _ in rnd.sample(every, min(a.requests, len(every)))],
            "misses": [(f"new/{i}", f"{rnd.getrandbits(160):040x}") for i in range(a.requests)],
        }
        res = {"files": a.files, "rows_per_file": a.rows, "lookup_per_call": a.lookup,
               "requests_per_case": a.requests, "repeat": a.repeat, "device": "cpu",
               "build_seconds": round(built, 2),
               "bytes": {w: sum(f.stat().st_size for f in (root / w).rglob("*.sqlite"))
                         for w in ("many", "one")}, "cases": {}}
        for name, pairs in cases.items():
            times: dict[str, list[float]] = {"many": [], "one": []}
            for rep in range(a.repeat):
                for where in (("many", "one") if rep % 2 == 0 else ("one", "many")):
                    sec, found = timed(root / where, pairs, a.lookup)
                    assert found == (0 if name == "misses" else len(pairs)), (name, where, found)
                    times[where].append(sec)
            many, one = statistics.median(times["many"]), statistics.median(times["one"])
            res["cases"][name] = {
                "many_files_s": round(many, 4), "one_file_s": round(one, 4),
                "ratio": round(many / one, 2),
                "many_us_per_request": round(1e6 * many / len(pairs), 1),
                "one_us_per_request": round(1e6 * one / len(pairs), 1)}
            print(name, res["cases"][name], flush=True)
    text = json.dumps(res, indent=1)
    print(text)
    if a.out:
        os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
        Path(a.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
