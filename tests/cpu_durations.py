"""Per-test CPU time, a pytest plugin for finding where the suite's time goes on shared cores.

``pytest --cpu-durations=FILE tests`` (tests/conftest.py loads these hooks) writes one TSV row per
test and phase as it ends (setup, call, teardown): wall seconds, CPU seconds of the pytest process
and CPU seconds of the child processes it waited for (Snakemake runs, interpreters).
On a busy machine wall time measures the neighbours as much as the test; CPU time does not. A
session-scoped fixture's cost lands in the setup of the first test that asks for it.
"""
from __future__ import annotations

import resource
import time

import pytest


def pytest_addoption(parser):
    parser.addoption("--cpu-durations", metavar="FILE", default=None,
                     help="write wall, own CPU and child CPU seconds per test phase to FILE (TSV)")


def _cpu(who) -> float:
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


class CpuDurations:
    def __init__(self, path: str):
        self.file = open(path, "w", buffering=1)  # a row per line as it ends: readable mid-run
        self.file.write("nodeid\tphase\twall_s\tcpu_s\tchildren_cpu_s\n")

    def _measure(self, item, phase):
        wall, own = time.perf_counter(), _cpu(resource.RUSAGE_SELF)
        kids = _cpu(resource.RUSAGE_CHILDREN)
        yield
        self.file.write(f"{item.nodeid}\t{phase}\t{time.perf_counter() - wall:.3f}\t"
                        f"{_cpu(resource.RUSAGE_SELF) - own:.3f}\t"
                        f"{_cpu(resource.RUSAGE_CHILDREN) - kids:.3f}\n")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_setup(self, item):
        yield from self._measure(item, "setup")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        yield from self._measure(item, "call")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_teardown(self, item):
        yield from self._measure(item, "teardown")

    def pytest_sessionfinish(self, session):
        self.file.close()


def pytest_configure(config):
    path = config.getoption("--cpu-durations")
    if path:
        config.pluginmanager.register(CpuDurations(path), "cpu-durations-recorder")
