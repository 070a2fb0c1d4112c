"""The ``openai`` form of a model spec: a model served behind an OpenAI-compatible endpoint."""
from __future__ import annotations

import re
from pathlib import Path

from ..errors import ConfigError
from .spec import ModelSpec, absolute, existing, sole_mapping

SERVED_KEYS = {"base_url": "the API root, e.g. http://127.0.0.1:8000/v1",
               "model": "the model name the server serves",
               "api_key_env": "the name of the environment variable holding the API key",
               "empty_context": "text sent in place of an empty context (the start token)",
               "tokenizer": "a local directory with the served model's tokenizer, whose chat "
                            "template is applied here (lm.chat_template: on)"}
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def parse_served(m, where: str, base: Path) -> ModelSpec:
    """``{openai: {base_url, model, api_key_env?, empty_context?, tokenizer?}}``: a served
    model."""
    o, w = sole_mapping(m, "openai", where, f"{sorted(SERVED_KEYS)}")
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
        found = existing(tok, base) if isinstance(tok, str) and tok.strip() else None
        if found is None or not (found / "tokenizer_config.json").is_file():
            raise ConfigError(f"model spec {w}.tokenizer: {tok!r} is not a directory with a "
                              f"tokenizer (no tokenizer_config.json in {absolute(str(tok), base)})")
        served["tokenizer"] = str(found)
    return ModelSpec("openai", url.rstrip("/"), served=tuple(sorted(served.items())), raw=m)
