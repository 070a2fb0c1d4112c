"""Helpers of workflow/rules/winowhat.smk (kept here so the rule file holds rules only)."""
from __future__ import annotations


def models(config: dict, section: dict) -> list[str]:
    """Model names to score: ``winowhat.models`` or every model under ``models.lm``."""
    names = section["models"]
    names = list(config["models"]["lm"]) if names is None else names
    for n in names:
        if n not in config["models"]["lm"]:
            raise ValueError(f"winowhat.models: {n!r} is not under models.lm")
    return names


BUILTIN = ("winogrande_dev", "winogrande_test", "wsc")  # built by their own rules (items.py)


def user_sets(section: dict, datasets: dict) -> list[str]:
    """The winograd data sets of ``winowhat.datasets`` besides the built-ins, each checked to be
    a winograd data set (parse time)."""
    for n in section["datasets"]:
        kind = datasets[n]["kind"] if n in datasets else None
        if kind != "winograd":
            what = f"a {kind} data set" if kind else "not under datasets"
            raise ValueError(f"winowhat.datasets: {n!r} is {what}; WinoWhat scores winograd data "
                             f"sets ({', '.join(k for k, e in datasets.items() if e['kind'] == 'winograd')})")
    return [n for n in section["datasets"] if n not in BUILTIN]


def inputs(section: dict, data_table, datasets: dict | None = None, dataset_input=None) -> dict[str, str]:
    """Named inputs of the item-table rule (data tables, user files and user data sets)."""
    out = {"dev": data_table("winogrande", "dev"), "winowhat": data_table("winowhat", "winowhat")}
    if "winogrande_test" in section["datasets"]:
        out["test"] = data_table("winogrande", "test")
    if "wsc" in section["datasets"]:
        out["wsc"] = data_table("wsc273", "wsc")
    out.update({f"user_{k}": v for k, v in section["user_files"].items() if v})
    for n in user_sets(section, datasets or {}):
        out[f"set_{n}"] = dataset_input(n)
    return out


def datasets_param(section: dict, datasets: dict, dataset_params) -> list:
    """The item rule's ``datasets`` param: the names, a user data set's with what its reading
    depends on (``{name: {kind, columns, settings}}``), so a built-in-only config keeps its params."""
    users = set(user_sets(section, datasets))
    return [{n: dataset_params(n)} if n in users else n for n in section["datasets"]]
