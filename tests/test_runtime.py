"""Thread limits for workflow jobs (csbench.runtime)."""
from __future__ import annotations

import logging
import os
import sys
from types import SimpleNamespace

import torch

from csbench.logs import snakemake_logger
from csbench.runtime import THREAD_VARS, job_environment, limit_threads


def test_limit_threads_sets_pools_and_env(monkeypatch, tmp_path):
    for var in THREAD_VARS:
        monkeypatch.setenv(var, "7")    # (so that monkeypatch restores the original state)
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", list(root.handlers))
    monkeypatch.setattr(root, "level", root.level)
    before = torch.get_num_threads()
    try:
        assert limit_threads(1) == 1
        assert torch.get_num_threads() == 1
        assert all(os.environ[v] == "1" for v in THREAD_VARS)
        assert limit_threads(None) is None and limit_threads("x") is None and limit_threads(0) is None
        job = SimpleNamespace(threads=1, log=[str(tmp_path / "job.log")])
        snakemake_logger(job).info("hello")
        assert "hello" in (tmp_path / "job.log").read_text()
    finally:
        torch.set_num_threads(before)


def test_job_environment_keeps_user_values(monkeypatch):
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    monkeypatch.delenv("TOKENIZERS_PARALLELISM", raising=False)
    job_environment()
    assert os.environ["OMP_WAIT_POLICY"] == "ACTIVE"
    assert os.environ["TOKENIZERS_PARALLELISM"] == "false"
