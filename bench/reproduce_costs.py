"""What a Snakemake run spent, per rule: wall seconds of every job from the run's logs
(`.snakemake/log/*.snakemake.log`: the start and finish time of each job id), CPU seconds and peak
memory from the rules' benchmark files where they have one. Resumed runs (several logs) are
summed; a job started in one log and not finished there (killed) counts in the log that finished it.
A job that finished more than once (the same rule and wildcards rerun after a fix or a `--forcerun`)
counts once, its last run; the earlier runs are listed as superseded (`--all-runs` counts them too).

    .venv/bin/python bench/reproduce_costs.py /path/to/run            # a table of rules by wall time
    .venv/bin/python bench/reproduce_costs.py /path/to/run --jobs     # one row per job
    .venv/bin/python bench/reproduce_costs.py /path/to/run --all-runs # count superseded runs too
    .venv/bin/python bench/reproduce_costs.py /path/to/run --json out.json
"""
from __future__ import annotations

import argparse
import json
import re
from datetime import datetime
from pathlib import Path

STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")
RULE = re.compile(r"^(?:local)?(?:rule|checkpoint) (\w+):$")
JOBID = re.compile(r"^\s+jobid: (\d+)$")
BENCH = re.compile(r"^\s+benchmark: (\S+)$")
WILDCARDS = re.compile(r"^\s+wildcards: (.*)$")
FINISHED = re.compile(r"^Finished jobid: (\d+) \(Rule: (\w+)\)$|^Finished job (\d+)\.$")


def parse_log(path: Path) -> tuple[list[dict], float]:
    """Jobs of one Snakemake log (rule, job id, wildcards, benchmark file, start, end or None) and
    the seconds from its first to its last timestamp (that segment's wall time)."""
    jobs: dict[int, dict] = {}
    now, current, first = None, None, None
    for line in path.read_text(errors="replace").splitlines():
        if m := STAMP.match(line):
            now = datetime.strptime(m.group(1), "%a %b %d %H:%M:%S %Y")
            first = first or now
            continue
        if m := RULE.match(line):
            current = {"rule": m.group(1), "start": now, "end": None, "benchmark": None,
                       "wildcards": "", "log": path.name}
            continue
        if current is not None:
            if m := JOBID.match(line):
                jobs[int(m.group(1))] = current
            elif m := BENCH.match(line):
                current["benchmark"] = m.group(1)
            elif m := WILDCARDS.match(line):
                current["wildcards"] = m.group(1)
            elif not line.startswith(" "):
                current = None
        if m := FINISHED.match(line):
            jid = int(m.group(1) or m.group(3))
            if jid in jobs:
                jobs[jid]["end"] = now
    return list(jobs.values()), ((now - first).total_seconds() if first else 0.0)


def read_benchmark(run: Path, rel: str | None) -> dict:
    if not rel or not (run / rel).exists():
        return {}
    lines = (run / rel).read_text().splitlines()
    if len(lines) < 2:
        return {}
    row = dict(zip(lines[0].split("\t"), lines[-1].split("\t")))
    out = {}
    for key, name in (("cpu_time", "cpu_s"), ("max_rss", "max_rss_mb"), ("s", "bench_wall_s"),
                      ("mean_load", "mean_load")):
        try:
            out[name] = float(row[key])
        except (KeyError, ValueError):
            pass
    return out


def latest_runs(jobs: list[dict]) -> tuple[list[dict], list[dict]]:
    """The last finished run of each (rule, wildcards) and the earlier runs it superseded."""
    latest: dict[tuple[str, str], dict] = {}
    superseded = []
    for j in sorted(jobs, key=lambda j: j["end"]):
        key = (j["rule"], j["wildcards"])
        if key in latest:
            superseded.append(latest[key])
        latest[key] = j
    return list(latest.values()), superseded


def costs(run: Path, all_runs: bool = False) -> tuple[list[dict], list[dict], list[float], list[dict]]:
    jobs, spans = [], []
    for log in sorted((run / ".snakemake" / "log").glob("*.snakemake.log")):
        log_jobs, span = parse_log(log)
        spans.append(span)
        for j in log_jobs:
            if j["end"] is None or j["start"] is None:
                continue  # killed or still running: counted where it finished
            j["wall_s"] = (j["end"] - j["start"]).total_seconds()
            j.update(read_benchmark(run, j["benchmark"]))
            jobs.append(j)
    superseded: list[dict] = []
    if not all_runs:
        jobs, superseded = latest_runs(jobs)
    by_rule: dict[str, dict] = {}
    for j in jobs:
        r = by_rule.setdefault(j["rule"], {"rule": j["rule"], "jobs": 0, "wall_s": 0.0, "cpu_s": 0.0,
                                           "max_rss_mb": 0.0, "benchmarked": 0})
        r["jobs"] += 1
        r["wall_s"] += j["wall_s"]
        if "cpu_s" in j:
            r["cpu_s"] += j["cpu_s"]
            r["benchmarked"] += 1
            r["max_rss_mb"] = max(r["max_rss_mb"], j.get("max_rss_mb", 0.0))
    rules = sorted(by_rule.values(), key=lambda r: -r["wall_s"])
    return jobs, rules, spans, superseded


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path, nargs="?", default=Path("."))
    ap.add_argument("--jobs", action="store_true", help="one row per job instead of per rule")
    ap.add_argument("--all-runs", action="store_true",
                    help="count every finished run of a job, not only its last")
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args(argv)
    jobs, rules, spans, superseded = costs(a.run, a.all_runs)
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps({"rules": rules, "jobs": jobs, "superseded": superseded},
                                     indent=1, default=str) + "\n")
    if a.jobs:
        print("| rule | wildcards | wall s | CPU s | peak RSS MB |\n|---|---|---|---|---|")
        for j in sorted(jobs, key=lambda j: -j["wall_s"]):
            print(f"| {j['rule']} | {j['wildcards']} | {j['wall_s']:,.0f} | "
                  f"{j.get('cpu_s', float('nan')):,.0f} | {j.get('max_rss_mb', float('nan')):,.0f} |")
        return
    total_wall = sum(r["wall_s"] for r in rules)
    print("| rule | jobs | wall s (sum of jobs) | share | CPU s (benchmarked jobs) | peak RSS MB |")
    print("|---|---|---|---|---|---|")
    for r in rules:
        cpu = f"{r['cpu_s']:,.0f} ({r['benchmarked']}/{r['jobs']})" if r["benchmarked"] else "-"
        rss = f"{r['max_rss_mb']:,.0f}" if r["benchmarked"] else "-"
        share = r["wall_s"] / total_wall if total_wall else 0.0
        print(f"| {r['rule']} | {r['jobs']} | {r['wall_s']:,.0f} | {share:.1%} | {cpu} | {rss} |")
    print(f"| **total** | {sum(r['jobs'] for r in rules)} | {total_wall:,.0f} | | "
          f"{sum(r['cpu_s'] for r in rules):,.0f} | |")
    print(f"\nSnakemake wall time: {sum(spans):,.0f} s over {len(spans)} log(s) "
          f"({', '.join(f'{s:,.0f}' for s in spans)}); jobs run side by side, so the sum of job "
          "wall times can exceed it.")
    if superseded:
        print(f"\nNot counted above ({len(superseded)} earlier run(s) of a job that ran again; "
              "--all-runs counts them): " + "; ".join(
                  " ".join(filter(None, (j["rule"], j["wildcards"])))
                  + f" {j['wall_s']:,.0f} s ({j['log']})"
                  for j in superseded))


if __name__ == "__main__":
    main()
