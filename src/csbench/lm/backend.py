"""One entry point for every task, test and benchmark: :func:`open_scorer` gives the backend a
model directory stands for (``resources/models/<name>/``): the local PyTorch engine
(:class:`csbench.lm.score.LMScorer`) or, for an ``openai`` spec, the served one
(:class:`csbench.lm.served.ServedScorer`). Both take ``loglikelihood(requests, keys)``,
``generate(...)`` and ``compute()``; a served model's features are checked
here, before any work, so a job fails at its start naming what the server lacks."""
from __future__ import annotations

import os
from pathlib import Path


def served_spec(model_dir) -> dict | None:
    """The ``openai`` spec of a materialised served model, else None."""
    from ..provenance import provenance

    spec = provenance(model_dir).get("spec")
    if isinstance(spec, dict) and spec.get("kind") == "openai":
        return spec
    return None


def open_scorer(model_dir, lm: dict | None = None, cache_dir: str | Path | None = None,
                needs=("loglikelihood",), **kw):
    """The scorer of a model directory with the ``lm`` config section's settings (``device``,
    ``dtype``, ``batch_size``, ``max_batch_size``, ``served``, ``refresh_cache``: read no cache
    entry, recompute and store them anew; ``chat_template`` and ``system_instruction``: the
    prompt format, :mod:`csbench.lm.prompt`; a workflow job's are its rule's ``params.lm`` over
    the section, :mod:`csbench.lm.route`; keys left out take the schema's defaults); a served
    model is checked for ``needs`` now. ``kw``: the local engine's options
    (:class:`csbench.lm.score.LMScorer`: ``max_length``, ``share_prefix``, ...)."""
    from .prompt import PromptFormat

    lm = lm_settings(lm)
    fmt = PromptFormat.of(lm)
    spec = served_spec(model_dir)
    if spec is not None:
        from .served import from_spec

        scorer = from_spec(spec, lm, cache_dir, model_dir)
        scorer.check(*needs)
        return scorer
    from .score import LMScorer

    return LMScorer(model_dir, device=lm["device"], dtype=lm["dtype"], batch_size=lm["batch_size"],
                    max_batch_size=lm["max_batch_size"], cache_dir=cache_dir,
                    refresh_cache=lm["refresh_cache"], prompt_format=fmt, **kw)


def lm_settings(lm: dict | None) -> dict:
    """The ``lm`` settings given, over the schema's defaults (``served`` merged key by key)."""
    from ..config import default

    out = {**default("lm"), **(lm or {})}
    out["served"] = {**default("lm.served"), **((lm or {}).get("served") or {})}
    return out


def sample(model_dir, prompts, num_samples: int, lm: dict | None = None, cache_dir=None,
           names=None, cut: list | None = None, scorer=None, **kw) -> list[list[str]]:
    """Sampled completions (``num_samples`` per prompt) from a model directory, through its
    scorer (:func:`open_scorer`, or ``scorer`` when one is open already): the local one
    samples with the model it loaded for scoring (:meth:`csbench.lm.score.LMScorer.sample`,
    given ``kw`` as they are), the served one with its endpoint (``max_new_tokens``,
    ``temperature``, ``top_p``, ``seed``; ``stop`` when it is a list of strings, else a newline;
    cached per request in ``cache_dir``). Prompts are texts or
    :class:`~csbench.lm.prompt.Prompt`, rendered in the ``lm`` settings' prompt format (a served
    model without its tokenizer samples a chat format through its chat endpoint). ``names``: one
    name per prompt (e.g. ``question <id>``) for error messages, such as a prompt that does not
    fit the window. ``cut`` (a list) receives per prompt one bool per sample: whether
    ``max_new_tokens`` ended it, before any stop string and the end of sequence (served:
    ``finish_reason`` "length")."""
    served = served_spec(model_dir) is not None
    if scorer is None:  # a local sampler keeps no cache: samples are not scores
        scorer = open_scorer(model_dir, lm, cache_dir if served else None, needs=("sampling",))
    if not served:
        return scorer.sample(prompts, num_samples, names=names, cut=cut, **kw)
    stop = kw.get("stop")
    if not (isinstance(stop, (list, tuple)) and all(isinstance(s, str) for s in stop)):
        stop = ("\n",)  # a pattern (the local sampler's) cannot be sent: cut at a newline
    return scorer.generate(prompts, max_new_tokens=kw.get("max_new_tokens", 16),
                           num_samples=num_samples, temperature=kw.get("temperature", 1.0),
                           top_p=kw.get("top_p", 1.0), seed=kw.get("seed", 0), stop=stop,
                           names=names, cut=cut)


def lm_cache_dir(config: dict, job: str | None = None):
    """The LM cache directory under the config's ``cache_dir``, with the job that writes to it
    (:func:`job_lm_cache`; part of the name of the file the job writes, see
    :mod:`csbench.lm.cache_files`)."""
    from .cache_files import CacheDir

    return CacheDir(os.path.join(config["cache_dir"], "lm"), job)


def job_lm_cache(snakemake):
    """The LM cache of a Snakemake job: :func:`lm_cache_dir` with the job named by its rule and
    wildcards (``winowhat_score.model=x.shard=0``)."""
    wc = getattr(snakemake, "wildcards", None)
    job = ".".join([snakemake.rule] + [f"{k}={v}" for k, v in sorted(wc.items() if wc else [])])
    return lm_cache_dir(snakemake.config, job)
