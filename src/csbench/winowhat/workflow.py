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


def inputs(section: dict, data_table) -> dict[str, str]:
    """Named inputs of the item-table rule (data tables and user files)."""
    out = {"dev": data_table("winogrande", "dev"), "winowhat": data_table("winowhat", "winowhat")}
    if "winogrande_test" in section["datasets"]:
        out["test"] = data_table("winogrande", "test")
    if "wsc" in section["datasets"]:
        out["wsc"] = data_table("wsc273", "wsc")
    out.update({f"user_{k}": v for k, v in section["user_files"].items() if v})
    return out
