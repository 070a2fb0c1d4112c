"""How every scan kernel is compiled (:func:`jit`) and what it may assume of the CPU
(:func:`cpu_has`)."""
from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path

try:  # pragma: no cover - exercised when numba is installed
    import numba
except Exception:  # noqa: BLE001 - any import failure means: use the numpy path
    numba = None


def jit(fn, inline: bool = False):
    """``numba.njit`` as every scan kernel is compiled: cached on disk, GIL released, and
    without reference counting (``_nrt=False``). The kernels allocate nothing (callers pass every
    array in), and numba's reference counting costs an atomic increment and decrement per array
    each time one is passed to a call or sliced: 45 of the 58 ns of a run-cache lookup, and a
    comparable share of each call per document, measured. ``inline``: inlined into its callers
    (numba IR), for the small helpers of hot loops."""
    disp = numba.njit(cache=True, nogil=True, _nrt=False,
                      inline="always" if inline else "never")(fn)
    # numba keeps a cached kernel while its own file is unchanged, but a kernel links in the
    # code of the kernels it calls and the constants it reads from the other modules: with
    # the stamp of the whole package in its cache index, any change there compiles it again
    cache_file = disp._cache._cache_file
    cache_file._source_stamp = (cache_file._source_stamp, sources_stamp())
    return disp


@functools.lru_cache(maxsize=None)
def sources_stamp(folder: Path | None = None) -> str:
    """A hash of the ``.py`` files under ``folder`` (default: the package
    :mod:`csbench.contamination`, these kernels included), part of every kernel's cache stamp
    (:func:`jit`): after a change to any of them, say a ``git pull`` in an editable install that
    touches only one module, no kernel is loaded with stale code linked in."""
    root = Path(folder or Path(__file__).parent.parent)
    h = hashlib.sha256()
    for f in sorted(root.rglob("*.py")):
        h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:16]


def cpu_has(*features: str) -> bool:
    """True when numba compiles for a CPU with all these LLVM features (e.g. ``avx512vbmi2``):
    the host's, or with ``NUMBA_CPU_NAME`` set, those named in ``NUMBA_CPU_FEATURES``."""
    if numba is None:
        return False
    if os.environ.get("NUMBA_CPU_NAME"):        # code compiled for a named CPU: its features
        named = os.environ.get("NUMBA_CPU_FEATURES", "").split(",")
        return all(f"+{f}" in named for f in features)
    try:
        import llvmlite.binding as llvm
        host = llvm.get_host_cpu_features()
        return all(bool(host.get(f)) for f in features)
    except Exception:  # noqa: BLE001 - unknown CPU: the portable path
        return False
