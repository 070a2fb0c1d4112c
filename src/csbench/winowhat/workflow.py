"""Helpers of workflow/rules/winowhat.smk (kept here so the rule file holds rules only)."""
from __future__ import annotations

from .items import ADDED


def models(config: dict, section: dict) -> list[str]:
    """Model names to score: ``winowhat.models`` or every model under ``models.lm``."""
    names = section["models"]
    names = list(config["models"]["lm"]) if names is None else names
    for n in names:
        if n not in config["models"]["lm"]:
            raise ValueError(f"winowhat.models: {n!r} is not under models.lm")
    return names


def sets(section: dict, datasets: dict) -> list[str]:
    """The data sets the item table is built from, each checked to be a winograd data set (parse
    time): ``winogrande_dev`` (always: WinoWhat's paraphrases belong to it), then the others of
    ``winowhat.datasets`` in their order."""
    names = ["winogrande_dev"] + [n for n in section["datasets"] if n != "winogrande_dev"]
    for n in names:
        kind = datasets[n]["kind"] if n in datasets else None
        if kind != "winograd":
            what = f"a {kind} data set" if kind else "not under datasets"
            raise ValueError(f"winowhat.datasets: {n!r} is {what}; WinoWhat scores winograd data "
                             f"sets ({', '.join(k for k, e in datasets.items() if e['kind'] == 'winograd')})")
        mapped = [r for r in ("paraphrase", "categories") if r in datasets[n]["columns"]]
        if n in ADDED and mapped:
            raise ValueError(f"datasets.{n}.columns.{mapped[0]}: WinoWhat takes {n}'s paraphrases "
                             f"and categories from {ADDED[n]}")
    return names


def inputs(section: dict, names: list[str], data_table, dataset_input) -> dict[str, str]:
    """Named inputs of the item-table rule: the WinoWhat table, each data set's file
    (``set_<name>``, ``names`` from :func:`sets`) and the user files of the samples
    (``user_<name>``)."""
    out = {"winowhat": data_table("winowhat", "winowhat")}
    out.update({f"set_{n}": dataset_input(n) for n in names})
    out.update({f"user_{k}": v for k, v in section["user_files"].items() if v})
    return out
