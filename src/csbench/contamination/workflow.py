"""Snakemake-side planning of the contamination task (kept out of the .smk so rules stay rules).

:class:`Plan` cuts every corpus into shards once at DAG-build time,
and names the inputs and targets of the rules in ``workflow/rules/contamination.smk``.
"""
from __future__ import annotations

from .corpus import COMPRESSED, expand_paths, plan_shards
from .items import BENCHMARKS, TASK_TABLES

ROOT = "results/contamination"


class Plan:
    def __init__(self, config: dict, models: list[str] | None = None):
        """``config``: the whole config, validated (defaults filled) by the Snakefile; ``models``:
        the models WinoWhat scores (the effect and the signals read their per-item results;
        default: every model under ``models.lm``)."""
        self.cfg = config["contamination"]
        self.tasks = list(config["tasks"])
        self.models = list(config["models"]["lm"]) if models is None else list(models)
        self.lexical = [m for m in self.cfg["methods"] if m in ("exact", "ngram")]
        # benchmark -> its entry of the `datasets` registry (every benchmark but the task tables
        # of BENCHMARKS), checked here at parse time
        from ..datasets import TEXT_ROLES, of_kind

        self.datasets = {b: of_kind(config, b, TEXT_ROLES, "contamination.benchmarks")
                         for b in self.cfg["benchmarks"] if b not in BENCHMARKS}
        self.shards = {}
        for corpus, c in self.cfg["corpora"].items():
            files = expand_paths(corpus, c["paths"])
            for kind, mb in (("lexical", self.cfg["shard_mb"]),
                             ("semantic", self.cfg["semantic"]["shard_mb"])):
                self.shards[(corpus, kind)] = plan_shards(files, c["format"], int(mb * 1e6))

    def table_path(self, benchmark: str, data_table) -> str:
        """Input file of a benchmark: its data set's file, a task's table, else
        ``data_table(source, table)``."""
        if benchmark in self.datasets:
            from ..datasets import input_path

            return input_path(self.datasets[benchmark], data_table)
        if benchmark in TASK_TABLES:
            return TASK_TABLES[benchmark]
        return data_table(*BENCHMARKS[benchmark][:2])

    def dataset_params(self) -> dict[str, dict]:
        """Benchmark -> how its data set is read (kind, columns, settings): the probes' params."""
        from ..datasets import read_params

        return {b: read_params(e) for b, e in self.datasets.items()}

    def shard(self, corpus: str, kind: str, index) -> list:
        return self.shards[(corpus, kind)][int(index)]

    def shard_files(self, corpus: str, kind: str, index) -> list[str]:
        return sorted({p for p, _, _ in self.shard(corpus, kind, index)})

    def read_ahead(self, corpus: str, index) -> bool:
        """Whether the lexical scan of a shard decompresses in a second thread (``read_ahead``:
        JSON lines with a compressed piece)."""
        return (self.cfg["read_ahead"] and self.cfg["corpora"][corpus]["format"] == "jsonl"
                and any(p.endswith(COMPRESSED) for p in self.shard_files(corpus, "lexical", index)))

    def scan_threads(self, corpus: str, index) -> int:
        return 2 if self.read_ahead(corpus, index) else 1

    def semantic_on(self, corpus: str) -> bool:
        wanted = self.cfg["semantic"]["corpora"]
        return "semantic" in self.cfg["methods"] and (wanted is None or corpus in wanted)

    def methods(self, corpus: str) -> list[str]:
        return [m for m in self.cfg["methods"] if m != "semantic" or self.semantic_on(corpus)]

    def shard_outputs(self, corpus: str) -> list[str]:
        out = []
        if self.lexical:
            n = len(self.shards[(corpus, "lexical")])
            out += [f"{ROOT}/scan/{corpus}/lexical/{i}.parquet" for i in range(n)]
        if self.semantic_on(corpus):
            n = len(self.shards[(corpus, "semantic")])
            out += [f"{ROOT}/scan/{corpus}/semantic/{i}.parquet" for i in range(n)]
        return out

    def items_tables(self) -> dict[str, str]:
        return {f"{b}__{c}": f"{ROOT}/{b}/{c}/items.parquet"
                for b in self.cfg["benchmarks"] for c in self.cfg["corpora"]}

    def effect_benchmarks(self) -> list[str]:
        return [b for b in self.cfg["effect"]["benchmarks"] if b in self.cfg["benchmarks"]]

    def effect_inputs(self) -> dict[str, str]:
        flags = {f"flags__{b}__{c}": f"{ROOT}/{b}/{c}/items.parquet"
                 for b in self.effect_benchmarks() for c in self.cfg["corpora"]}
        results = {f"results__{m}": f"results/winowhat/{m}/items.parquet" for m in self.models}
        return {**flags, **results}

    def signals_models(self) -> list[str]:
        """The models whose membership signals are computed (none when they are disabled)."""
        sig = self.cfg["signals"]
        if not sig["enabled"]:
            return []
        wanted = sig["models"]
        for m in wanted or []:
            if m not in self.models:
                raise ValueError(f"contamination.signals.models: {m!r} is not among the models WinoWhat "
                                 f"scores (winowhat.models: {self.models}); its signals are read against "
                                 "its WinoWhat results")
        return [m for m in self.models if wanted is None or m in wanted]

    def signals_stats_inputs(self) -> dict[str, str]:
        """Per model its signals table and its WinoWhat per-item results."""
        out = {}
        for m in self.signals_models():
            out[f"signals__{m}"] = f"{ROOT}/signals/{m}.parquet"
            out[f"results__{m}"] = f"results/winowhat/{m}/items.parquet"
        return out

    def signals_targets(self) -> list[str]:
        if not self.signals_models():
            return []
        return [f"{ROOT}/signals/{m}.parquet" for m in self.signals_models()] + [
            f"{ROOT}/signals/{x}" for x in ("auroc.tsv", "mannwhitney.tsv", "quartiles.tsv",
                                            "signals.png")]

    def targets(self) -> list[str]:
        if not self.cfg["corpora"]:
            return self.signals_targets()
        out = list(self.items_tables().values()) + [f"{ROOT}/summary.tsv"]
        out += self.signals_targets()
        if (self.cfg["effect"]["enabled"] and self.effect_benchmarks() and "winowhat" in self.tasks
                and self.models):
            out.append(f"{ROOT}/effect.tsv")
        return out
