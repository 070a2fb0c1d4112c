"""Device and dtype policy, in one module: what a ``device`` / ``dtype`` setting means, whether
the hardware can compute in a half-precision dtype, and the context a float32 model computes
in under a compute dtype. Used by the model loaders (:mod:`csbench.models.load`), the LM engine
and sampler (through those loaders; :mod:`csbench.lm.route`), QA inference and training
(:mod:`csbench.qads`) and causal-LM fine-tuning (:mod:`csbench.finetune`).

* **Device** (:func:`pick_device`, :func:`device_name`): ``auto`` is ``cuda`` when PyTorch
  sees a GPU, else ``cpu``; :func:`host_has_gpu` is the torch-free check the workflow uses at
  parse time (the ``gpu`` resource of a rule).
* **Dtype** of a model's weights (``lm.dtype``, ``qads.qa.dtype``; :func:`dtype_name`):
  ``auto`` is bfloat16 on a GPU and float32 on a CPU; other names are aliases of float32,
  bfloat16, float16.
* **Training dtype** (``finetune.dtype``; :func:`training_dtype`): ``auto`` is bfloat16 only
  where the hardware has bf16 matrix units (a CPU with ``avx512_bf16`` or AMX, an Arm CPU with
  ``bf16``; a CUDA GPU that PyTorch says supports bf16), float32 elsewhere.
* **CPU instructions** (:func:`cpu_flags`, :func:`cpu_half_support`, :func:`check_cpu_dtype`):
  a half-precision dtype on a CPU without matrix instructions for it runs several times slower
  than float32, so asking for one is warned about, once per dtype and process.
* **Autocast** (:func:`autocast`): a float32 model computing in bfloat16 (matrix products in
  bf16; weights, gradients, optimizer state and losses in float32).
* **Compute columns** (:func:`compute_columns`): the ``compute_device`` / ``compute_dtype``
  every output of a model carries (:func:`csbench.provenance.stamp`).
"""
from __future__ import annotations

import contextlib
import glob
import importlib
import logging
import os

log = logging.getLogger(__name__)


def host_has_gpu() -> bool:
    """Whether this process can open an NVIDIA GPU, cheaply (no torch import at parse time): what
    ``device: auto`` means for the ``gpu`` resource rules ask for (workflow/rules/common.smk).
    A GPU hidden from the process (the device cgroup of a SLURM job without GPUs) cannot be
    opened and does not count."""
    for dev in sorted(glob.glob("/dev/nvidia[0-9]*")):
        try:
            os.close(os.open(dev, os.O_RDWR))
            return True
        except OSError:
            continue
    return False


def pick_device(device: str = "auto") -> str:
    """The device setting with ``auto`` resolved (``cuda`` when PyTorch sees a GPU, else
    ``cpu``)."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def device_name(device: str = "auto") -> str:
    """The device a model loaded with the ``device`` setting computes on, as PyTorch names it
    (``cpu``, ``cuda:0``): ``auto`` and ``cuda`` resolved as the loaders do."""
    import torch

    d = torch.device(pick_device(device))
    if d.type == "cuda" and d.index is None:
        d = torch.device("cuda", torch.cuda.current_device())
    return str(d)


DTYPE_NAMES = {"float32": "float32", "fp32": "float32", "bfloat16": "bfloat16",
               "bf16": "bfloat16", "float16": "float16", "fp16": "float16"}


def dtype_name(dtype: str, device: str) -> str:
    """The dtype a model computes in with the ``dtype`` setting on a resolved ``device``:
    ``auto`` means bf16 on GPU, fp32 on CPU (no torch needed)."""
    if dtype == "auto":
        return "bfloat16" if str(device).startswith("cuda") else "float32"
    if dtype not in DTYPE_NAMES:
        raise ValueError(f"unknown dtype {dtype!r}: one of auto, {', '.join(DTYPE_NAMES)}")
    return DTYPE_NAMES[dtype]


def pick_dtype(dtype: str, device: str):
    """The torch dtype of the ``dtype`` setting on ``device`` (:func:`dtype_name`); a
    half-precision dtype on a CPU without matrix instructions for it is warned about
    (:func:`check_cpu_dtype`: it would run slower than float32, not faster)."""
    import torch

    name = dtype_name(dtype, device)
    check_cpu_dtype(name, device)
    return getattr(torch, name)


def compute_columns(device: str = "auto", dtype: str = "auto") -> dict:
    """The compute device and dtype (``compute_device``: ``cpu``, ``cuda:0``; ``compute_dtype``:
    ``float32``, ``bfloat16``, ``float16``) of a model run with the ``device`` and ``dtype``
    settings, resolved as the loaders (:mod:`csbench.models.load`) and :func:`autocast` resolve
    them; a loaded scorer says the same with ``compute()``."""
    dev = device_name(device)
    return {"compute_device": dev, "compute_dtype": dtype_name(dtype, dev)}


def bf16_hardware(device: str) -> bool:
    """Whether ``device`` (a setting: ``auto``, ``cpu``, ``cuda[:N]``) has bf16 matrix units: a
    CPU with ``avx512_bf16``, AMX or Arm's ``bf16`` (:func:`cpu_half_support`); a CUDA GPU
    PyTorch says supports bf16. ``auto`` is a GPU where this process can open one
    (:func:`host_has_gpu`). torch is imported only for a GPU."""
    device = str(device)
    if device == "auto":
        device = "cuda" if host_has_gpu() else "cpu"
    if device.startswith("cuda"):
        import torch

        return bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())
    return cpu_half_support("bfloat16") is True


def training_dtype(dtype: str, device: str) -> str:
    """The compute dtype of a fine-tuning setting (``finetune.dtype``) on ``device``: ``auto`` is
    bfloat16 where the hardware has bf16 units (:func:`bf16_hardware`), else float32 (so on a
    CPU with AVX2 only, float32); other values by :func:`dtype_name`."""
    if dtype == "auto":
        return "bfloat16" if bf16_hardware(device) else "float32"
    return dtype_name(dtype, str(device))


def autocast(device, dtype: str = "float32"):
    """The context in which a float32 model computes in ``dtype``: ``torch.autocast`` for
    ``bfloat16`` (matrix products in bf16 on the CPU's or GPU's bf16 units; weights, gradients,
    optimizer state, reductions and losses such as cross-entropy stay float32), nothing for
    ``float32``. The dtype name is resolved (and, on a CPU without bf16 matrix instructions, warned
    about) by :func:`pick_dtype`."""
    import torch

    device = torch.device(device)
    dt = pick_dtype(dtype, str(device))
    if dt == torch.float32:
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=dt)


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
                    "several times SLOWER than in float32; set the dtype (lm.dtype, qads.qa.dtype, "
                    "finetune.dtype) to float32 or auto on this machine", dtype, dtype, CPUINFO,
                    ", ".join(HALF_CPU_FLAGS[dtype]))
    return False
