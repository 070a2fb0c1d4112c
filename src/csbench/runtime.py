"""Process set-up for workflow jobs: CPU thread limits that match the rule's ``threads``, and
the check that a CPU can compute in the half-precision dtype a job asks for.

Snakemake schedules jobs by their declared ``threads``; libraries that start their own thread
pools (torch/OpenMP, MKL, OpenBLAS, numba, faiss) would otherwise use every core of the machine in
every job, and several such jobs on one machine oversubscribe it. Measured on this 2-core machine
with one core busy elsewhere: scoring one WinoWhat shard with torch at its default (2 threads,
spinning OpenMP workers) took 9-20 s instead of 0.9 s; with ``OMP_WAIT_POLICY=PASSIVE`` or one
thread, 0.9 s.
"""
from __future__ import annotations

import importlib

import logging
import os
import sys

log = logging.getLogger(__name__)

THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS",
               "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")


def job_environment() -> None:
    """Defaults exported to every job (called by the Snakefile): idle OpenMP workers sleep
    instead of spinning (``OMP_WAIT_POLICY=PASSIVE``), tokenizers do not fork thread pools.
    Values already set by the user win."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def host_has_gpu() -> bool:
    """Whether this process can open an NVIDIA GPU, cheaply (no torch import at parse time): what
    ``device: auto`` means for the ``gpu`` resource rules ask for (workflow/rules/common.smk).
    A GPU hidden from the process (the device cgroup of a SLURM job without GPUs) cannot be
    opened and does not count."""
    import glob

    for dev in sorted(glob.glob("/dev/nvidia[0-9]*")):
        try:
            os.close(os.open(dev, os.O_RDWR))
            return True
        except OSError:
            continue
    return False


def limit_threads(n) -> int | None:
    """Cap the thread pools of this process at ``n`` (a rule's ``threads``): environment variables
    for libraries not loaded yet, and the live setting of torch and faiss when they are."""
    try:
        n = int(n)
    except (TypeError, ValueError):
        return None
    if n < 1:
        return None
    for var in THREAD_VARS:
        os.environ[var] = str(n)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(n)
    faiss = sys.modules.get("faiss")
    if faiss is not None and hasattr(faiss, "omp_set_num_threads"):
        faiss.omp_set_num_threads(n)
    return n


# The CPU instructions that make a half-precision matmul fast in PyTorch (oneDNN kernels): a CPU
# without them converts to float32 around every product, and a bf16/fp16 model then runs several
# times slower than in float32 (measured on an AMD EPYC with avx512_bf16 but no avx512_fp16, 2
# threads, bench/lm_bf16.py: a 512^3 float16 matmul 20-50x slower than float32, 2048^3 bfloat16
# 2.2-2.3x faster). Linux names them in /proc/cpuinfo's ``flags`` (x86) or ``Features`` (Arm:
# ``bf16``; ``fphp``/``asimdhp`` for fp16).
HALF_CPU_FLAGS = {"bfloat16": ("avx512_bf16", "amx_bf16", "bf16"),
                  "float16": ("avx512_fp16", "amx_fp16", "fphp", "asimdhp")}
CPUINFO = "/proc/cpuinfo"
_warned: set = set()


def cpu_flags(path: str = CPUINFO) -> frozenset | None:
    """The CPU's feature flags (the first ``flags`` or ``Features`` line of ``/proc/cpuinfo``),
    None where there is no such file (not Linux)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                key, sep, value = line.partition(":")
                if sep and key.strip() in ("flags", "Features"):
                    return frozenset(value.split())
    except OSError:
        return None
    return frozenset()


def cpu_half_support(dtype: str) -> bool | None:
    """Whether this CPU has matrix instructions for ``dtype`` (``bfloat16``/``float16``; True for
    any other dtype): from :func:`cpu_flags`, else from PyTorch's own CPU detection; None when
    neither can tell."""
    want = HALF_CPU_FLAGS.get(dtype)
    if want is None:
        return True
    flags = cpu_flags()
    if flags is not None:
        return any(f in flags for f in want)
    try:  # no /proc/cpuinfo: ask torch if it is installed (private helpers; x86 only)
        tc = importlib.import_module("torch.cpu")  # optional: no env needs torch for this

        checks = {"bfloat16": ("_is_avx512_bf16_supported", "_is_amx_tile_supported"),
                  "float16": ("_is_amx_fp16_supported",)}[dtype]
        return any(getattr(tc, c)() for c in checks if hasattr(tc, c))
    except Exception:  # noqa: BLE001 - no torch, or helpers of another version: unknown
        return None


def check_cpu_dtype(dtype: str, device: str) -> bool:
    """Warn (once per dtype and process) when a model is to compute in ``dtype`` (a resolved
    name: ``float32``, ``bfloat16``, ``float16``) on a CPU without matrix instructions for it,
    which would run several times slower than float32 instead of faster. Returns False when it
    warned."""
    if not str(device).startswith("cpu") or cpu_half_support(dtype) is not False:
        return True
    if dtype not in _warned:
        _warned.add(dtype)
        log.warning("%s on this CPU: it has no %s matrix instructions (%s lists none of %s), so "
                    "PyTorch converts to float32 around every matrix product and the model runs "
                    "several times SLOWER than in float32; set the dtype (lm.dtype, qads.qa.dtype) "
                    "to float32 or auto on this machine", dtype, dtype, CPUINFO,
                    ", ".join(HALF_CPU_FLAGS[dtype]))
    return False
