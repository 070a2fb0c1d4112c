"""Thread limits for workflow jobs (csbench.runtime); the CPU instruction checks and dtype
resolution (csbench.compute)."""
from __future__ import annotations

import logging
import os
import sys
from types import SimpleNamespace

import pytest
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


# ---------------------------------------------------------------- half precision on a CPU (issue 27)
X86_BF16 = "processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu sse avx2 avx512f avx512_bf16\n"


def test_cpu_flags_read_x86_and_arm_cpuinfo(tmp_path):
    from csbench.compute import cpu_flags

    (tmp_path / "x86").write_text(X86_BF16 + "\nprocessor\t: 1\nflags\t\t: fpu\n")
    (tmp_path / "arm").write_text("processor\t: 0\nFeatures\t: fp asimd bf16 asimdhp\n")
    assert cpu_flags(str(tmp_path / "x86")) == {"fpu", "sse", "avx2", "avx512f", "avx512_bf16"}
    assert "bf16" in cpu_flags(str(tmp_path / "arm"))
    assert cpu_flags(str(tmp_path / "absent")) is None


@pytest.mark.parametrize("flags, warns", [({"avx2", "avx512f"}, True), ({"avx512_bf16"}, False),
                                          ({"amx_bf16", "amx_tile"}, False)])
def test_bf16_on_a_cpu_without_bf16_instructions_is_warned_about_once(monkeypatch, caplog, flags,
                                                                     warns):
    from csbench import compute
    from csbench.compute import pick_dtype

    monkeypatch.setattr(compute, "cpu_flags", lambda path=compute.CPUINFO: frozenset(flags))
    monkeypatch.setattr(compute, "_warned", set())
    with caplog.at_level(logging.WARNING, logger="csbench.compute"):
        assert pick_dtype("bfloat16", "cpu") is torch.bfloat16  # still loads: a warning
        assert pick_dtype("bf16", "cpu") is torch.bfloat16
        assert pick_dtype("auto", "cpu") is torch.float32       # auto never asks for bf16 on CPU
        assert pick_dtype("bfloat16", "cuda:0") is torch.bfloat16  # a GPU is not this CPU
    said = [r.getMessage() for r in caplog.records if "SLOWER" in r.getMessage()]
    assert len(said) == (1 if warns else 0), said  # once per process, not per model load
    if warns:
        assert "bfloat16 on this CPU" in said[0] and "avx512_bf16" in said[0] and \
            "lm.dtype" in said[0], said[0]


def test_float16_needs_its_own_instructions(monkeypatch):
    from csbench import compute

    monkeypatch.setattr(compute, "cpu_flags", lambda path=compute.CPUINFO: frozenset({"avx512_bf16"}))
    monkeypatch.setattr(compute, "_warned", set())
    assert compute.cpu_half_support("bfloat16") is True
    assert compute.cpu_half_support("float16") is False
    assert compute.cpu_half_support("float32") is True
    assert compute.check_cpu_dtype("float16", "cpu") is False
    assert compute.check_cpu_dtype("float32", "cpu") is True


def test_compute_columns_resolve_the_settings_as_the_loaders_do():
    from csbench.compute import compute_columns, dtype_name


    assert compute_columns("cpu", "auto") == {"compute_device": "cpu", "compute_dtype": "float32"}
    assert compute_columns("cpu", "bf16") == {"compute_device": "cpu", "compute_dtype": "bfloat16"}
    if not torch.cuda.is_available():
        assert compute_columns("auto", "auto")["compute_device"] == "cpu"
    assert dtype_name("auto", "cuda:1") == "bfloat16" and dtype_name("fp16", "cpu") == "float16"
    with pytest.raises(ValueError, match="unknown dtype 'int8'"):
        dtype_name("int8", "cpu")
