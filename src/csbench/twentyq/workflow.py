"""Parse-time helpers of workflow/rules/twentyq.smk (kept out of the Snakefile)."""
from __future__ import annotations

ROOT = "results/twentyq"


def scoring_models(tq: dict, lm_models: dict) -> list[str]:
    names = tq["scoring"]["models"]
    names = list(lm_models) if names is None else list(names)
    for n in names:
        if n not in lm_models:
            raise ValueError(f"twentyq.scoring.models: {n!r} is not under models.lm")
    return names


def reference_lm(tq: dict, lm_models: dict) -> str | None:
    ref = tq["scoring"]["reference_lm"] or next(iter(lm_models), None)
    if ref is not None and ref not in lm_models:
        raise ValueError(f"twentyq.scoring.reference_lm: {ref!r} is not under models.lm")
    return ref


# Where each yes/no test set lives: its split/{train,test}.parquet, topic_frequency.parquet,
# scores/<model>/ and metrics.tsv sit under this directory. The rules take the part after ROOT
# as the {yesno} wildcard ("" for 20Q itself, "csqa2/" for CSQA2 dev).
BENCHMARK_DIRS = {"twentyq": ROOT, "csqa2": f"{ROOT}/csqa2"}
YESNO_WILDCARD = "|".join(d[len(ROOT) + 1:] + "/" if d != ROOT else "" for d in BENCHMARK_DIRS.values())


# The fine-tuned arm's training tables: results/data/<FT_SOURCE>/<benchmark>.parquet, named by a
# finetune spec as `data: twentyq_ft/<benchmark>` (csbench.twentyq.finetune); the admission counts
# beside the task's other outputs.
FT_SOURCE = "twentyq_ft"


def finetune_data(table: str) -> str:
    return f"results/data/{FT_SOURCE}/{table}.parquet"


def finetune_admission(table: str) -> str:
    return f"{ROOT}/finetune/{table}.admission_counts.tsv"


def finetune_tables(specs: dict) -> list[str]:
    """The benchmarks whose fine-tuning table a configured finetune spec trains on."""
    out = []
    for spec in specs.values():
        data = dict(spec.finetune).get("data", "") if spec.kind == "finetune" else ""
        src, _, table = data.partition("/")
        if src == FT_SOURCE and table in BENCHMARK_DIRS and table not in out:
            out.append(table)
    return out


def is_fine_tuned(specs: dict, name: str) -> bool:
    spec = specs.get(name)
    return spec is not None and spec.kind == "finetune"


def targets(models: list[str], benchmarks=("twentyq",), ft_tables=()) -> list[str]:
    out = [finetune_admission(t) for t in ft_tables]
    if "twentyq" in benchmarks:  # building the 20Q split needs the 20Q raw data
        out += [f"{ROOT}/cleaning_counts.tsv", f"{ROOT}/split/statistics.tsv",
                f"{ROOT}/split/admission_counts.tsv"]
    if models:
        for b in benchmarks:
            out += [f"{BENCHMARK_DIRS[b]}/metrics.tsv", f"{BENCHMARK_DIRS[b]}/nll_by_topic_frequency.png"]
    return out
