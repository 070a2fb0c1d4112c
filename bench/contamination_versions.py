"""Same-run comparison of two versions of the lexical scan: fused `ngram` MB/s per CPU-second.

    git worktree add /tmp/old_csbench <commit>
    .venv/bin/python bench/contamination_versions.py --old /tmp/old_csbench/src --corpus /tmp/c7_2gb

Each round runs the old code (``PYTHONPATH=--old``) and this checkout's code in fresh, alternating
processes (each with its own numba cache, warmed on 5 MB first), scanning ``--mb`` MB of text of the
first plain, .zst and .gz file of a corpus made by ``contamination_bench.py``. Reports every round,
the per-round ratios, the ratio of medians, and the hit-table sizes of both versions (equal when the
two find the same items).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

CHILD = r'''
import json, sys, time
from pathlib import Path
import csbench
from csbench.contamination.items import extract
from csbench.contamination.scan import ProbeIndex, Scanner
from csbench.data import winogrande as wgmod
files, limit, wg_path = json.loads(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
wg = wgmod.normalise("dev", {"dev.jsonl": Path(wg_path)})
idx = ProbeIndex(extract("winogrande_dev", wg), n=13, min_words=8, methods=("ngram",))
out = {"src": csbench.__file__}
for kind, f in files.items():
    Scanner(idx).scan_pieces([(f, 0, -1)], "jsonl", "text", "id", max_bytes=5_000_000)
    t = time.process_time()
    s = Scanner(idx).scan_pieces([(f, 0, -1)], "jsonl", "text", "id", max_bytes=limit)
    out[kind] = s.bytes / 1e6 / (time.process_time() - t)
    out[kind + "_rows"] = len(s.table())
print(json.dumps(out))
'''


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--old", required=True, help="the src/ directory of the old checkout")
    ap.add_argument("--corpus", default="/tmp/c7_2gb")
    ap.add_argument("--winogrande", default="../shared/mirror/winogrande/dev.jsonl")
    ap.add_argument("--mb", type=float, default=200)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    names = sorted(os.listdir(a.corpus))
    files = {k: str(Path(a.corpus) / next(n for n in names if n.endswith(ext)))
             for k, ext in (("plain", ".jsonl"), ("zst", ".jsonl.zst"), ("gz", ".jsonl.gz"))}
    new_src = str(Path(__file__).resolve().parents[1] / "src")
    res: dict[str, list[dict]] = {"old": [], "new": []}
    for _ in range(a.rounds):
        for name, src in (("old", a.old), ("new", new_src)):
            env = dict(os.environ, PYTHONPATH=src, NUMBA_CACHE_DIR=f"/tmp/numba_cache_{name}")
            p = subprocess.run([sys.executable, "-c", CHILD, json.dumps(files),
                                str(int(a.mb * 1e6)), a.winogrande],
                               env=env, capture_output=True, text=True, check=True)
            res[name].append(json.loads(p.stdout.strip().splitlines()[-1]))
    report = {}
    for kind in files:
        o = [r[kind] for r in res["old"]]
        n = [r[kind] for r in res["new"]]
        med = sorted(n)[len(n) // 2] / sorted(o)[len(o) // 2]
        report[kind] = {"old_MBps": [round(x, 1) for x in o], "new_MBps": [round(x, 1) for x in n],
                        "ratio_per_round": [round(y / x, 2) for x, y in zip(o, n)],
                        "ratio_of_medians": round(med, 2),
                        "rows_old_new": [res["old"][0][kind + "_rows"],
                                         res["new"][0][kind + "_rows"]]}
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
