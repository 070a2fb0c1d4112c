"""Cluster submission through profiles/slurm.

Without a cluster: the profiles layer correctly (the workflow profile profiles/default cannot
clobber the SLURM profile) and a dry run under the SLURM profile resolves, for a CPU rule and a
GPU-capable rule, the threads, memory, runtime, GPUs and the partition and CPUs the executor
plugin derives from them.

With a real one-node SLURM (tests/cluster/slurm-up: needs root and apt; skipped otherwise): a
slice of the demo DAG (downloads and model materialisation as local rules, normalisers, two LM
scoring shards, their gather) is submitted through the profile; every job must complete and
carry the partition, time limit, memory and CPUs its rule asks for, CPU jobs must run side by
side, and local rules must never reach SLURM.
"""
from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
PROFILE = REPO / "profiles" / "slurm"  # absolute: relative profile paths break with --directory
DEMO = REPO / "resources" / "demo" / "config.yaml"
# The slice: WinoWhat scored by a tiny random model in two shards, then gathered.
TARGET = "results/winowhat/tiny-gpt2/items.parquet"
LOCAL_RULES = {"download_winogrande", "download_wsc273", "download_winowhat", "materialise_model"}
SLURM_RULES = {"normalise", "winowhat_items", "winowhat_score", "winowhat_gather"}


def slice_config(tmp: Path, device: str) -> Path:
    """Demo config overrides for the slice: a random tiny model (whatever the demo's LM is),
    two scoring shards, the device under test, and a scoring memory that any test node has."""
    path = tmp / f"slice-{device}.yaml"
    path.write_text(yaml.safe_dump({
        "models": {"lm": {"tiny-gpt2": "random:tiny-gpt2"}},
        "lm": {"device": device, "shards": 2},
        "winowhat": {"mem_mb": 1500},
    }))
    return path


def smk_env(**extra: str) -> dict[str, str]:
    return dict(os.environ, NLTK_DATA=str(REPO / "resources" / "nltk_data"), HF_HUB_OFFLINE="1",
                **extra)


def workdir(tmp: Path) -> Path:
    work = tmp / "work"
    (work / "resources").mkdir(parents=True)
    (work / "resources" / "demo").symlink_to(REPO / "resources" / "demo")
    return work


def job_blocks(text: str) -> list[dict]:
    """The job descriptions Snakemake prints ('rule x:' / 'localrule x:' and indented
    'key: value' lines) as dicts with rule, local, jobid, threads and resources."""
    jobs, cur = [], None
    for line in text.splitlines():
        m = re.match(r"^(local)?rule (\w+):$", line)
        if m:
            cur = {"rule": m.group(2), "local": bool(m.group(1)), "threads": 1, "resources": {}}
            jobs.append(cur)
            continue
        if cur is None:
            continue
        m = re.match(r"^    (\w+): (.*)$", line)
        if not m:
            cur = None
            continue
        key, val = m.groups()
        if key in ("jobid", "threads"):
            cur[key] = int(val)
        elif key == "resources":
            for item in val.split(", "):
                k, _, v = item.partition("=")
                cur["resources"][k] = int(v) if v.isdigit() else v
        elif key == "wildcards":
            cur["wildcards"] = val
    return jobs


class _Resources(dict):
    __getattr__ = dict.__getitem__


def plugin_view(job: dict) -> tuple[str | None, str]:
    """The partition and CPU request the SLURM executor plugin derives for a job."""
    from snakemake_executor_plugin_slurm.partitions import get_best_partition, read_partition_file
    from snakemake_executor_plugin_slurm_jobstep import get_cpu_setting

    config = yaml.safe_load((PROFILE / "config.yaml").read_text())
    partitions = read_partition_file(PROFILE / config["slurm-partition-config"])
    fake = SimpleNamespace(name=job["rule"], threads=job["threads"],
                           resources=_Resources(job["resources"]))
    partition = get_best_partition(partitions, fake, logging.getLogger("slurm-test"))
    return partition, get_cpu_setting(fake, bool(job["resources"].get("gpu")))


# ---------------------------------------------------------------------------- without a cluster

def test_workflow_profile_cannot_clobber_the_slurm_profile():
    """Snakemake applies profiles/default on top of --profile profiles/slurm, key by key
    (a key there replaces the SLURM profile's whole entry)."""
    default = yaml.safe_load((REPO / "profiles" / "default" / "config.yaml").read_text())
    slurm = yaml.safe_load((PROFILE / "config.yaml").read_text())
    executor_keys = {"executor", "jobs", "cores", "local-cores", "latency-wait", "retries",
                     "default-resources", "set-resources", "set-threads"}
    assert not executor_keys & set(default), sorted(executor_keys & set(default))
    assert not {k for k in default if k.startswith("slurm-")}
    # a local cap on GPUs must not throttle GPU jobs across a cluster
    for res in default.get("resources", {}):
        assert default.get("set-resource-scopes", {}).get(res) == "local", res
    # CPUs come from threads, partitions from resources: neither is pinned for every job
    pinned = set(slurm.get("default-resources", {}))
    for rule_res in slurm.get("set-resources", {}).values():
        pinned |= set(rule_res)
    assert not pinned & {"cpus_per_task", "slurm_partition", "gpu"}, pinned
    assert slurm["slurm-status-command"] == "squeue"
    assert (PROFILE / slurm["slurm-partition-config"]).is_file()


@pytest.mark.parametrize("device", ["cuda", "cpu"])
def test_dry_run_resolves_slurm_resources(tmp_path, device):
    work = workdir(tmp_path)
    # --cores only lifts the dry run's default cap of 1 thread; a SLURM run has no cap
    proc = subprocess.run(
        [SNAKEMAKE, TARGET, "-n", "--profile", str(PROFILE), "--cores", "64",
         "--snakefile", str(REPO / "Snakefile"), "--directory", str(work),
         "--configfile", str(DEMO), str(slice_config(tmp_path, device))],
        cwd=REPO, capture_output=True, text=True, env=smk_env())
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert "workflow specific profile profiles/default" in out  # the layering under test
    jobs = job_blocks(out)  # (a dry run prints local rules as plain rules)
    assert {j["rule"] for j in jobs} == LOCAL_RULES | SLURM_RULES

    cpu_job = next(j for j in jobs if j["rule"] == "normalise")
    assert cpu_job["threads"] == 1
    assert cpu_job["resources"]["mem_mb"] == 4000        # the rule's
    assert cpu_job["resources"]["runtime"] == 60         # the SLURM profile's default
    assert cpu_job["resources"]["gpu"] == 0
    assert plugin_view(cpu_job) == ("cpu", "--cpus-per-task=1")

    gpu_rule = [j for j in jobs if j["rule"] == "winowhat_score"]
    assert len(gpu_rule) == 2  # lm.shards
    for job in gpu_rule:
        assert job["threads"] == 2
        assert job["resources"]["mem_mb"] == 1500       # from the config (winowhat.mem_mb)
        assert job["resources"]["runtime"] == 240       # the SLURM profile's set-resources
        if device == "cuda":
            assert job["resources"]["gpu"] == 1
            assert plugin_view(job)[0] == "gpu"
        else:  # a CPU-only run never asks for a GPU nor lands on the GPU partition
            assert job["resources"]["gpu"] == 0
            assert plugin_view(job) == ("cpu", "--cpus-per-task=2")


# ------------------------------------------------------------------------- on a real SLURM

@pytest.fixture(scope="module")
def slurm_cluster(tmp_path_factory):
    """A one-node SLURM for this module (tests/cluster/slurm-up), stopped afterwards by pid."""
    state = tmp_path_factory.mktemp("slurm")
    up = subprocess.run([str(REPO / "tests" / "cluster" / "slurm-up"), str(state)],
                        capture_output=True, text=True, timeout=900)
    try:
        if up.returncode == 3:
            pytest.skip(up.stderr.strip().splitlines()[-1])
        if up.returncode != 0:
            pytest.fail(f"slurm-up failed ({up.returncode}):\n{up.stderr[-3000:]}")
        yield SimpleNamespace(dir=state, env={
            "SLURM_CONF": str(state / "slurm.conf"),
            "PATH": f"{state / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        })
    finally:
        subprocess.run([str(REPO / "tests" / "cluster" / "slurm-down"), str(state)],
                       capture_output=True, text=True, timeout=120)


def slurm_jobs(env: dict[str, str]) -> list[dict[str, str]]:
    """Jobs slurmctld still holds (MinJobAge=600 keeps finished ones): `scontrol show job -o`."""
    out = subprocess.run(["scontrol", "show", "job", "-o"], capture_output=True, text=True,
                         env=env, check=True).stdout
    return [dict(re.findall(r"(\S+?)=(\S*)", line)) for line in out.splitlines() if line.strip()]


def overlapping(a: dict[str, str], b: dict[str, str]) -> bool:
    t = lambda s: datetime.fromisoformat(s)  # noqa: E731
    return t(a["StartTime"]) < t(b["EndTime"]) and t(b["StartTime"]) < t(a["EndTime"])


@pytest.mark.integration
def test_demo_slice_runs_through_slurm(slurm_cluster, tmp_path):
    env = smk_env(**slurm_cluster.env)
    work = workdir(tmp_path)
    cmd = [SNAKEMAKE, TARGET, "--profile", str(PROFILE), "--snakefile", str(REPO / "Snakefile"),
           "--directory", str(work), "--configfile", str(DEMO), str(slice_config(tmp_path, "cpu"))]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, env=env, timeout=900)
    out = proc.stdout + proc.stderr
    ctld_log = (slurm_cluster.dir / "log" / "slurmctld.log")
    assert proc.returncode == 0, out[-6000:] + "\n--- slurmctld.log\n" + ctld_log.read_text()[-2000:]
    assert (work / TARGET).is_file()

    asked = {j["jobid"]: j for j in job_blocks(out)}
    submitted = {int(s): int(j) for j, s in
                 re.findall(r"Job (\d+) has been submitted with SLURM jobid (\d+)", out)}
    jobs = slurm_jobs(env)
    assert {int(j["JobId"]) for j in jobs} == set(submitted), (sorted(submitted), jobs)

    by_rule: dict[str, list[dict]] = {}
    for job in jobs:
        rule = re.match(r"rule_(\w+?)(?:_wildcards_.*)?$", job["Comment"]).group(1)
        by_rule.setdefault(rule, []).append(job)
        want = asked[submitted[int(job["JobId"])]]
        assert want["rule"] == rule
        assert job["JobState"] == "COMPLETED", job
        # what the rule asks for is what SLURM gave the job
        assert job["Partition"] == "cpu", job            # gpu=0: the CPU partition
        assert job["NumCPUs"] == str(want["threads"]), job  # --cpus-per-task = threads
        assert job["MinMemoryNode"] == f"{want['resources']['mem_mb']}M", job
        runtime = want["resources"]["runtime"]
        assert job["TimeLimit"] == f"{runtime // 60:02d}:{runtime % 60:02d}:00", job
        assert job["WorkDir"] == str(work)
    assert set(by_rule) == SLURM_RULES
    assert len(by_rule["winowhat_score"]) == 2
    # the values themselves (profile + rules), not only their agreement
    for job in by_rule["normalise"]:
        assert (job["NumCPUs"], job["MinMemoryNode"], job["TimeLimit"]) == ("1", "4000M", "01:00:00")
    for job in by_rule["winowhat_score"]:
        assert (job["NumCPUs"], job["MinMemoryNode"], job["TimeLimit"]) == ("2", "1500M", "04:00:00")

    # 1-CPU jobs share the 2-CPU node: at least two normalisers ran at the same time
    norm = by_rule["normalise"]
    assert any(overlapping(a, b) for i, a in enumerate(norm) for b in norm[i + 1:]), norm

    # local rules ran in the Snakemake process on the submit host, never through sbatch
    local = {j["rule"] for j in asked.values() if j["local"]}
    assert local == LOCAL_RULES
    assert not local & set(by_rule)
    assert (work / "resources" / "models" / "tiny-gpt2").is_dir()
    assert (work / "results" / "raw" / "winowhat" / "WinoWhat.csv").is_file()
