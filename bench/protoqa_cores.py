"""How to keep both cores busy with ProtoQA sampling: the same questions sampled under several
set-ups, each run as separate processes of ``bench/protoqa_generate.py`` (model loading not
timed), cycled ``--repeats`` times so that the set-ups see the same load from other work:

* ``before``: the sampler of ``--baseline`` (a git revision), one process, 2 threads (the
  ``protoqa_generate`` rule with ``threads: 2`` before this change);
* ``after``: the current sampler, one process, 2 threads: 2 questions at a time (``workers``);
* ``after-1w``: the current sampler, one process, 2 threads, one question at a time (what the
  sampling work itself saves, without the second worker);
* ``split``: the current sampler, two processes at once with 1 thread each, each taking half of
  the questions (what two jobs side by side with ``threads: 1`` do, same total work).

Per run: the wall time from the first process's start of sampling to the last one's end, the
CPU seconds of all (CPU / wall = cores kept busy), the load average before it, and a checksum
of the samples (equal across set-ups: the same samples).

    .venv/bin/python bench/protoqa_cores.py --model-dir resources/models/smollm2-135m \\
        --questions ../shared/mirror/protoqa/dev.crowdsourced.jsonl --n-questions 4 \\
        --baseline bac7256 --repeats 3 --out bench/out/protoqa_cores_smollm2.json
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def run(args, setup: str, tmp: Path) -> dict:
    base = [sys.executable, str(HERE / "protoqa_generate.py"), "--model-dir", args.model_dir,
            "--questions", args.questions]
    n = args.n_questions
    if setup == "split":
        half = (n + 1) // 2
        jobs = [["--threads", "1", "--n-questions", str(half)],
                ["--threads", "1", "--skip", str(half), "--n-questions", str(n - half)]]
    else:
        jobs = [{"before": ["--threads", "2", "--sampler", args.baseline],
                 "after": ["--threads", "2"],
                 "after-1w": ["--threads", "2", "--workers", "1"]}[setup]
                + ["--n-questions", str(n)]]
    load = os.getloadavg()[0]
    procs, outs = [], []
    for k, extra in enumerate(jobs):
        out = tmp / f"{setup}-{k}.json"
        outs.append(out)
        procs.append(subprocess.Popen(base + extra + ["--out", str(out)],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    for p in procs:
        if p.wait():
            raise SystemExit(f"{setup}: bench/protoqa_generate.py failed ({p.returncode})")
    res = [json.loads(o.read_text()) for o in outs]
    runs = [r["run"] for r in res]
    wall = max(r["end"] for r in runs) - min(r["start"] for r in runs)
    cpu = sum(r["cpu_s"] for r in runs)
    return {"setup": setup, "wall_s": wall, "cpu_s": cpu, "cores_busy": cpu / wall,
            "load_before": load, "load_after": os.getloadavg()[0],
            "samples_crc32": [c for r in res for c in r["samples_crc32"]],   # per question
            "sampled_tokens": sum(r["sampled_tokens"] for r in runs)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--questions", required=True)
    ap.add_argument("--n-questions", type=int, default=4)
    ap.add_argument("--baseline", required=True, help="git revision of the 'before' sampler")
    ap.add_argument("--setups", default="before,after,after-1w,split")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    setups = args.setups.split(",")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.repeats):
            order = setups if rep % 2 == 0 else setups[::-1]
            for setup in order:
                row = run(args, setup, Path(tmp))
                row["repeat"] = rep
                rows.append(row)
                print(json.dumps(row), flush=True)
    summary = {}
    for setup in setups:
        mine = [r for r in rows if r["setup"] == setup]
        summary[setup] = {"wall_s_min": min(r["wall_s"] for r in mine),
                          "wall_s_median": sorted(r["wall_s"] for r in mine)[len(mine) // 2],
                          "cpu_s_median": sorted(r["cpu_s"] for r in mine)[len(mine) // 2],
                          "cores_busy_max": max(r["cores_busy"] for r in mine)}
    summary["same_samples"] = len({tuple(r["samples_crc32"]) for r in rows}) == 1
    print(json.dumps(summary, indent=1))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps({"args": vars(args), "runs": rows,
                                              "summary": summary, "time": time.time()},
                                             indent=1) + "\n")


if __name__ == "__main__":
    main()
