"""The ``finetune`` form of a model spec: another ``models.lm`` entry trained on a data table, and
the training settings such a spec may set (:data:`FINETUNE_SETTINGS`)."""
from __future__ import annotations

import re

from ..errors import ConfigError
from .spec import ModelSpec, sole_mapping

# Training settings of a `finetune` spec (defaults: the config's `finetune` section) -> a check of
# its value: (type(s), description of the allowed values, predicate).
_NUMBER = (int, float)
FINETUNE_SETTINGS: dict[str, tuple] = {
    "epochs": (int, "a whole number >= 1", lambda v: v >= 1),
    "lr": (_NUMBER, "a number > 0", lambda v: v > 0),
    "batch": (int, "a whole number >= 1", lambda v: v >= 1),
    "grad_accum": (int, "a whole number >= 1", lambda v: v >= 1),
    "seed": (int, "a whole number", lambda v: True),
    "fraction": (_NUMBER, "a number in (0, 1]", lambda v: 0 < v <= 1),
    "max_examples": ((int, type(None)), "a whole number >= 1 or null", lambda v: v is None or v >= 1),
    "max_dev_examples": ((int, type(None)), "a whole number >= 1 or null",
                         lambda v: v is None or v >= 1),
    "loss": (str, "completion or all", lambda v: v in ("completion", "all")),
    "dtype": (str, "bfloat16, float32 or auto", lambda v: v in ("bfloat16", "float32", "auto")),
    "warmup": (_NUMBER, "a number in [0, 1)", lambda v: 0 <= v < 1),
    "weight_decay": (_NUMBER, "a number >= 0", lambda v: v >= 0),
    "max_grad_norm": (_NUMBER, "a number >= 0 (0: no clipping)", lambda v: v >= 0),
    "max_length": (int, "a whole number >= 2", lambda v: v >= 2),
}
FINETUNE_DATA = re.compile(r"^[a-z0-9_]+/[A-Za-z0-9_-][A-Za-z0-9._-]*$")  # <source>/<table>


def parse_finetune(m: dict, where: str) -> ModelSpec:
    """``{finetune: {base, data, dev?, <training settings>}}``: checked here, the base entry by
    :func:`lm_spec` (it must be another ``models.lm`` entry with weights)."""
    f, w = sole_mapping(m, "finetune", where, "base, data and training settings "
                         f"({', '.join(FINETUNE_SETTINGS)})")
    unknown = set(f) - {"base", "data", "dev"} - set(FINETUNE_SETTINGS)
    if unknown:
        raise ConfigError(f"model spec {w}: unknown key(s) {sorted(unknown)}; allowed: base, "
                          f"data, dev, {', '.join(FINETUNE_SETTINGS)}")
    if not isinstance(f.get("base"), str) or not f["base"].strip():
        raise ConfigError(f"model spec {w}.base: expected the name of another models.lm entry")
    for key in ("data", "dev"):
        v = f.get(key)
        if (key == "data" or v is not None) and (not isinstance(v, str)
                                                 or not FINETUNE_DATA.match(v)):
            raise ConfigError(f"model spec {w}.{key}: {v!r} is not <source>/<table> (a "
                              "normalised data table with prompt and completion columns, e.g. "
                              "protoqa/finetune_train)")
    for key, (types, allowed, ok) in FINETUNE_SETTINGS.items():
        if key not in f:
            continue
        v = f[key]
        if isinstance(v, bool) or not isinstance(v, types) or not ok(v):
            raise ConfigError(f"model spec {w}.{key}: {v!r} is not {allowed}")
    return ModelSpec("finetune", f["base"], raw=m, finetune=tuple(sorted(f.items())))
