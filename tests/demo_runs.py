"""The finished demo that tests/test_workflow.py reads, run in the background from the first test on.

A demo run keeps about one of CI's two cores busy (interpreter start-up, one-thread jobs), and the
unit tests keep one busy: so when any test of tests/test_workflow.py that reads the finished demo
is selected, the ``demo_runs`` fixture of tests/conftest.py starts the demo (and, when the
determinism test is selected, a second run from scratch in another directory) as the first test
starts, and the workflow tests wait for them. What the tests check is unchanged; only when the
runs happen moves. Each run's output goes to files beside its directory (a pipe nobody reads
until the end would fill and stall Snakemake); a failure quotes their tails.

The first run starts at once: the workflow tests wait for it, and it is the longest chain. Beside
it, tests/warm_kernels.py compiles the contamination scan kernels into numba's disk cache (a
fresh clone has none: each run's first scan jobs compiled them side by side); the second run
starts when that is done, and the determinism test, the only one that reads it, runs last.

The second run builds ``SECOND_RUN_TARGETS`` from scratch: every rule of the demo at least once
(the determinism test checks that against the first run's job table), one instance of rules that
fan out over data sets or models the first run covers several times, and every task's summaries
over those instances. Only the rules that gather every instance (``NOT_REPEATED``) run once.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
WORKFLOW_TESTS = "tests/test_workflow.py"
DETERMINISM_TEST = "test_two_fresh_demo_runs_give_identical_result_tables"
DEMO_FIXTURES = {"demo_run", "demo_runs"}
WARM_KERNELS = Path(__file__).with_name("warm_kernels.py")

# One instance of each rule, from scratch, for the determinism test (module docstring): both
# ProtoQA models (base and fine-tuned) with every similarity on one question set, both 20Q models
# on one data set, one audit, every contamination corpus and signal, QADS on the user's set with
# the WSD evaluation, the verification round trip and the fine-tuning folds.
SECOND_RUN_TARGETS = (
    "results/twentyq/csqa2/metrics.tsv",
    "results/twentyq/split/statistics.tsv",
    "results/twentyq/finetune/twentyq.admission_counts.tsv",
    "results/protoqa/demo_protoqa/summary.tsv",
    "results/protoqa/demo_protoqa/eval/gen-smollm2-135m-protoqa-ft/issues.tsv",
    "results/winowhat/accuracy.png",
    "results/winowhat/accuracy.tsv",
    "results/contamination/summary.tsv",
    "results/contamination/effect.tsv",
    "results/contamination/signals/auroc.tsv",
    "results/qads/sets/demo_squad/qa_scores.tsv",
    "results/qads/finetune/tiny-bert-qa.one.tsv",
    "results/qads/wsd_eval.tsv",
    "results/qads/domains.tsv",
    "results/qads/verified/agreement.tsv",
    "results/qads/annotation/blocks",
    "results/audit/com2sense/summary.tsv",
)
# The rules that gather every instance of the demo: only in the first run
NOT_REPEATED = {"all", "results", "audit_summary"}


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
    """One ``snakemake`` run of the demo DAG (``targets``, default all) in a fresh directory,
    started now."""

    def __init__(self, work: Path, targets: tuple[str, ...] = ()):
        self.work = work
        self.cmd, env = smk_cmd(work, *targets)
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
    the background when made: the first run at once (the workflow tests wait for it), the second
    once tests/warm_kernels.py has compiled the scan kernels (a thread waits for that, so the
    unit tests go on). ``first()`` waits for the first run, ``both()`` for both."""

    def __init__(self, tmp_path_factory, items):
        demo, second = wanted(items)
        self.runs: list[BackgroundDemo] = []
        self.result: dict[int, Path] = {}
        self.stopped = threading.Event()
        self.warm = self.starter = None
        if not demo:
            return
        first = demo_dir(tmp_path_factory, "demo")
        self.warm_log = first.with_name("warm_kernels.log")
        with open(self.warm_log, "w") as log:
            self.warm = subprocess.Popen([sys.executable, str(WARM_KERNELS)], stdout=log,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True)
        self.runs.append(BackgroundDemo(first))
        if second:
            work = demo_dir(tmp_path_factory, "demo2")
            self.starter = threading.Thread(target=self._start_second, args=(work,), daemon=True)
            self.starter.start()

    def _start_second(self, work: Path) -> None:
        self.warm.wait()
        if not self.stopped.is_set():
            self.runs.append(BackgroundDemo(work, SECOND_RUN_TARGETS))

    def _finished(self, i: int) -> Path:
        if i not in self.result:
            assert self.runs, "no test of this session reads the demo"
            assert self.warm.wait() == 0, \
                f"tests/warm_kernels.py failed:\n{self.warm_log.read_text()[-4000:]}"
            if i == 1:
                assert self.starter is not None, "the determinism test is not selected"
                self.starter.join()
            self.runs[i].proc.wait()
            self.result[i] = self.runs[i].wait()
        return self.result[i]

    def first(self) -> Path:
        return self._finished(0)

    def both(self) -> tuple[Path, Path]:
        if self.starter is not None:
            self.starter.join()
        for r in self.runs:  # both runs finished before any failure is raised
            r.proc.wait()
        return self._finished(0), self._finished(1)

    def stop(self) -> None:
        self.stopped.set()
        if self.warm is not None and self.warm.poll() is None:
            os.killpg(self.warm.pid, signal.SIGKILL)
        if self.starter is not None:
            self.starter.join()
        for r in self.runs:
            r.stop()
