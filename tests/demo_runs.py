"""The finished demo that tests/test_workflow.py reads, run in the background from the first test on.

A demo run keeps about one of CI's two cores busy (interpreter start-up, one-thread jobs), and the
unit tests keep one busy: so when any test of tests/test_workflow.py that reads the finished demo
is selected, the ``demo_runs`` fixture of tests/conftest.py starts the demo (and, when the
determinism test is selected, a second run from scratch in another directory) as the first test
starts, and the workflow tests wait for them. What the tests check is unchanged; only when the
runs happen moves. Each run's output goes to files beside its directory (a pipe nobody reads
until the end would fill and stall Snakemake); a failure quotes their tails.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
WORKFLOW_TESTS = "tests/test_workflow.py"
DETERMINISM_TEST = "test_two_fresh_demo_runs_give_identical_result_tables"
DEMO_FIXTURES = {"demo_run", "demo_runs"}


def smk_cmd(workdir: Path, *args: str) -> tuple[list[str], dict]:
    """A Snakemake command on the demo config in ``workdir``, scheduling cheaply (which ready job
    starts first changes no output). The greedy scheduler: the default ILP one starts a CBC
    solver for every scheduling round. A job rate limit checked every 10 s, not every second:
    Snakemake 9.27 arms a one-second re-check timer on every scheduling round, timer rounds
    included, so the re-checks pile up while long jobs run (30 rounds a second, each stat-ing
    every ready job's inputs, seen with strace 35 min into a loaded demo run); the limit itself
    (1000 jobs) never binds in the demo. A finished run may wait up to 10 s for its last timer."""
    cmd = [SNAKEMAKE, "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir),
           "--configfile", str(REPO / "resources/demo/config.yaml"), "--cores", "2",
           "--scheduler", "greedy", "--max-jobs-per-timespan", "1000/10s", *args]
    return cmd, dict(os.environ, NLTK_DATA=str(REPO / "resources/nltk_data"), HF_HUB_OFFLINE="1")


def checked(cmd: list[str], proc) -> None:
    if proc.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-8000:]}")


def demo_dir(tmp_path_factory, name: str) -> Path:
    work = tmp_path_factory.mktemp(name)
    (work / "resources").mkdir()
    (work / "resources" / "demo").symlink_to(REPO / "resources" / "demo")
    return work


def wanted(items) -> tuple[bool, bool]:
    """(a finished demo is read, the determinism test's second run is read) by these tests."""
    mine = [i for i in items if i.nodeid.split("::")[0].endswith(WORKFLOW_TESTS)]
    demo = any(DEMO_FIXTURES & set(getattr(i, "fixturenames", ())) for i in mine)
    return demo, any(i.name == DETERMINISM_TEST for i in mine)


class BackgroundDemo:
    """One ``snakemake`` run of the whole demo DAG in a fresh directory, started now."""

    def __init__(self, work: Path):
        self.work = work
        self.cmd, env = smk_cmd(work)
        self.out, self.err = work.with_name(work.name + ".out"), work.with_name(work.name + ".err")
        with open(self.out, "w") as out, open(self.err, "w") as err:
            self.proc = subprocess.Popen(self.cmd, env=env, text=True, stdout=out, stderr=err,
                                         stdin=subprocess.DEVNULL, start_new_session=True)

    def wait(self) -> Path:
        code = self.proc.wait()
        checked(self.cmd, subprocess.CompletedProcess(
            self.cmd, code, self.out.read_text(errors="replace"),
            self.err.read_text(errors="replace")))
        return self.work

    def stop(self) -> None:
        """Ends a run still going: Snakemake and its jobs (its own process group; on SIGTERM
        alone Snakemake waits for its running jobs)."""
        if self.proc.poll() is None:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(self.proc.pid, sig)
                    self.proc.wait(timeout=30)
                    break
                except ProcessLookupError:
                    break
                except subprocess.TimeoutExpired:
                    continue


class DemoRuns:
    """The demo run (and the determinism test's second run) the selected tests read, started in
    the background when made; ``finished()`` waits for them: (first workdir, second or None)."""

    def __init__(self, tmp_path_factory, items):
        demo, second = wanted(items)
        self.runs = []
        if demo:
            self.runs.append(BackgroundDemo(demo_dir(tmp_path_factory, "demo")))
            if second:
                self.runs.append(BackgroundDemo(demo_dir(tmp_path_factory, "demo2")))
        self.result = None

    def finished(self) -> tuple[Path, Path | None]:
        if self.result is None:
            assert self.runs, "no test of this session reads the demo"
            for r in self.runs:  # every run finished before any failure is raised
                r.proc.wait()
            works = [r.wait() for r in self.runs]
            self.result = (works[0], works[1] if len(works) > 1 else None)
        return self.result

    def stop(self) -> None:
        for r in self.runs:
            r.stop()
