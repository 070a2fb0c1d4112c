"""ProtoQA: scoring ranked answer lists against crowd answer clusters, and the sampling baseline.

* :mod:`.data`: target questions with their answer clusters (from the normalised table or a
  ProtoQA ``.jsonl``) and predictions files in both formats of the release.
* :mod:`.matching`: answer-cluster similarity (exact, WordNet, embedding) as score matrices.
* :mod:`.scoring`: Hungarian assignment, Max Answers@k / Max Incorrect@k, per-file evaluation.
* :mod:`.baseline`: question -> completion prompt rules and ranked lists from samples.

This module itself holds the metric names and the helpers the rules use to list the configured
predictions files and generation models.

The numbers follow the reference evaluator iesl/protoqa-evaluator (see docs/protoqa.md).
"""
from __future__ import annotations

METRICS = (
    "max_answers@1", "max_answers@3", "max_answers@5", "max_answers@10", "max_answers@all",
    "max_incorrect@1", "max_incorrect@3", "max_incorrect@5", "max_incorrect@all",
)
# summary.tsv's rows about each sampling baseline's samples, below its provenance rows: samples
# drawn, the share that max_new_tokens cut (before a stop string or EOS), the cut policy, the
# recipe (protoqa.generation.recipe)
SAMPLING_ROWS = ("samples", "samples_cut_share", "cut_policy", "recipe")
TRIVIAL = "trivial"  # the predictions name of the trivial ranked list (protoqa_trivial)


def metric_limits(metric: str) -> tuple[int | None, int | None]:
    """``metric`` name -> (max_answers, max_incorrect)."""
    kind, k = metric.split("@")
    k = None if k == "all" else int(k)
    return (k, None) if kind == "max_answers" else (None, k)


def generation_models(pq: dict, lm_models: dict) -> list[str]:
    """Names of the causal LMs the generation baseline samples from (validated)."""
    g = pq["generation"]
    if not g["enabled"]:
        return []
    names = g["models"] if g["models"] is not None else list(lm_models)
    bad = [n for n in names if n not in lm_models]
    if bad:
        raise ValueError(f"protoqa.generation.models: {bad} not under models.lm")
    return list(names)


def predictions_files(pq: dict, sets, mirror, lm_models: dict,
                      results: str = "results/protoqa", warn=print) -> dict[str, dict[str, str]]:
    """Question set -> predictions name -> file, for each set of ``sets`` (``protoqa.targets``,
    in order): the configured files (``{mirror}`` substituted; entries that need a mirror are
    skipped with a warning when none is set) for the first set only (they answer its questions),
    and for every set its trivial ranked list (:data:`TRIVIAL`, :mod:`.trivial`) and
    ``gen-<model>`` per LM, under ``<results>/<set>/``."""
    configured = {}
    for name, path in pq["predictions"].items():
        if "{mirror}" in path:
            if not mirror:
                warn(f"protoqa.predictions.{name}: no mirror set, skipped ({path})")
                continue
            path = path.replace("{mirror}", str(mirror))
        configured[name] = path
    if TRIVIAL in configured:
        raise ValueError(f"protoqa.predictions: name {TRIVIAL} is reserved for the trivial list")
    models = generation_models(pq, lm_models)
    for m in models:
        if f"gen-{m}" in configured:
            raise ValueError(f"protoqa.predictions: name gen-{m} is reserved for generation")
    out = {}
    for i, s in enumerate(sets):
        files = dict(configured) if i == 0 else {}
        files[TRIVIAL] = f"{results}/{s}/trivial/ranked.json"
        for m in models:
            files[f"gen-{m}"] = f"{results}/{s}/generated/{m}/ranked.json"
        out[s] = files
    return out


def check_targets(config: dict) -> dict[str, dict]:
    """The data sets ``protoqa.targets`` names (one name or a list), in order: name -> entry,
    checked at parse time (each a ``protoqa`` entry of ``datasets``, none twice)."""
    from ..datasets import list_of_kind

    return list_of_kind(config, config["protoqa"]["targets"], ("protoqa",), "protoqa.targets")
