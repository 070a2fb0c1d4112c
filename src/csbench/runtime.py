"""Process set-up for workflow jobs: CPU thread limits that match the rule's ``threads`` (the
device and dtype policy, with the CPU instruction checks, is :mod:`csbench.compute`).

Snakemake schedules jobs by their declared ``threads``; libraries that start their own thread
pools (torch/OpenMP, MKL, OpenBLAS, numba, faiss) would otherwise use every core of the machine in
every job, and several such jobs on one machine oversubscribe it. Measured on this 2-core machine
with one core busy elsewhere: scoring one WinoWhat shard with torch at its default (2 threads,
spinning OpenMP workers) took 9-20 s instead of 0.9 s; with ``OMP_WAIT_POLICY=PASSIVE`` or one
thread, 0.9 s.
"""
from __future__ import annotations

import os
import sys

THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS",
               "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")


def job_environment() -> None:
    """Defaults exported to every job (called by the Snakefile): idle OpenMP workers sleep
    instead of spinning (``OMP_WAIT_POLICY=PASSIVE``), tokenizers do not fork thread pools.
    Values already set by the user win."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


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
