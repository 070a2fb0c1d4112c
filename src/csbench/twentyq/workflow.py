"""Parse-time helpers of workflow/rules/twentyq.smk (kept out of the Snakefile)."""
from __future__ import annotations

import re

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
# scores/<model>/ and metrics.tsv sit under this directory (20Q itself: ROOT; a yes/no data set
# of the `datasets` section: ROOT/<name>). The rules take the part after ROOT as the {yesno}
# wildcard ("" for 20Q itself, "csqa2/" for CSQA2 dev).
def bench_dir(name: str) -> str:
    return ROOT if name == "twentyq" else f"{ROOT}/{name}"


def yesno_names(datasets: dict) -> list[str]:
    """What twentyq.benchmarks may name: twentyq and every yes/no data set."""
    return ["twentyq"] + [n for n, e in datasets.items() if e["kind"] == "yesno"]


def benchmarks(tq: dict, datasets: dict) -> list[str]:
    """twentyq.benchmarks, each checked to be twentyq or a yes/no data set (parse time)."""
    known = yesno_names(datasets)
    for b in tq["benchmarks"]:
        if b not in known:
            what = f"a {datasets[b]['kind']} data set" if b in datasets else "not under datasets"
            raise ValueError(f"twentyq.benchmarks: {b!r} is {what}; 20Q scores twentyq or a yesno "
                             f"data set ({', '.join(known)})")
    return list(tq["benchmarks"])


def fewshot(datasets: dict, name: str, of):
    """``of(<name of the data set's few-shot pool>)``, or [] without one (an input, a param)."""
    pool = datasets[name]["settings"]["fewshot"]
    return of(pool) if pool else []


def yesno_wildcard(names) -> str:
    return "|".join("" if n == "twentyq" else re.escape(n) + "/" for n in names)


def dataset_wildcard(names) -> str:
    return "|".join(re.escape(n) for n in names if n != "twentyq")


# The fine-tuned arm's training tables: results/data/<FT_SOURCE>/<benchmark>.parquet, named by a
# finetune spec as `data: twentyq_ft/<benchmark>` (csbench.twentyq.finetune); the admission counts
# beside the task's other outputs.
FT_SOURCE = "twentyq_ft"


def finetune_data(table: str) -> str:
    return f"results/data/{FT_SOURCE}/{table}.parquet"


def finetune_admission(table: str) -> str:
    return f"{ROOT}/finetune/{table}.admission_counts.tsv"


def finetune_tables(specs: dict, names) -> list[str]:
    """The benchmarks (of ``names``) whose fine-tuning table a configured finetune spec trains on."""
    out = []
    for spec in specs.values():
        data = dict(spec.finetune).get("data", "") if spec.kind == "finetune" else ""
        src, _, table = data.partition("/")
        if src == FT_SOURCE and table in names and table not in out:
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
            out += [f"{bench_dir(b)}/metrics.tsv", f"{bench_dir(b)}/nll_by_topic_frequency.png"]
    return out
