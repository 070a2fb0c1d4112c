# Shared helpers: wildcard constraints, path helpers and the target registry behind `rule all`.
import re

import csbench.data
import csbench.compute
import csbench.datasets
from csbench.fetch import mirror_file, wanted_files
from csbench.lm.route import lm_params
from csbench.finetune import settings as finetune_settings
from csbench.modelspec import check_config_models, without_prompt_keys


# Names that become paths are plain names (no slash, no leading dot, so never . or ..): a
# model named '..' once made a job's directory output resources/models/.., which Snakemake
# removes before the job runs. The schema refuses such names in the config too.
PLAIN_NAME = r"[A-Za-z0-9_-][A-Za-z0-9._-]*"


wildcard_constraints:
    source="|".join(csbench.data.SOURCES),
    table=PLAIN_NAME,
    model=PLAIN_NAME,
    dataset=r"[A-Za-z0-9_]+",
    variant=r"[A-Za-z0-9_]+",
    shard=r"\d+",
    name=PLAIN_NAME,


RAW = "results/raw"
DATA = "results/data"
MODELS = "resources/models"
CACHE = config["cache_dir"]
EMBED_CACHE = f"{CACHE}/embeddings"


def raw_files(source):
    """Configured (not skipped) raw files of a source, as paths under results/raw."""
    return [f"{RAW}/{source}/{f}" for f in wanted_files(config["sources"][source])]


def mirror_inputs(source):
    """The mirror's files of a source's configured files (none without a mirror)."""
    if not config["mirror"]:
        return []
    found = (mirror_file(config["mirror"], source, f) for f in wanted_files(config["sources"][source]))
    return [str(p) for p in found if p is not None]


def source_tables(source):
    """Table name -> raw files it needs, for the configured files of a source."""
    return csbench.data.tables(source, list(wanted_files(config["sources"][source])))


def data_table(source, table):
    """Path of a normalised Parquet table. Whether the configured files can build it is checked
    when a job needs it (normalise_inputs), so unselected tasks never fail the parse."""
    return f"{DATA}/{source}/{table}.parquet"


# Every model spec is parsed and checked here, at parse time: a local path that does not exist,
# a bare owner/name that is not a directory, a malformed wheel spec fail a dry run.
MODEL_SPECS = check_config_models(config)


# Every data set entry (csbench.datasets) is checked here, at parse time: a kind or path not set,
# a file that does not exist, a role its kind does not have, a column not in the file's header.
DATASETS = csbench.datasets.check_config(config)


def dataset_input(name):
    """The file read for data set ``name``; editing it reruns the rules that read it."""
    return csbench.datasets.input_path(DATASETS[name], data_table)


def dataset_params(name):
    """What reading data set ``name`` depends on besides its file (kind, columns, limit and
    seed: csbench.datasets.read_params); its jobs read it with exactly these."""
    return csbench.datasets.read_params(DATASETS[name])


def model_dir(name):
    """The materialised directory of a model: its own, or for a `weights: <entry>` spec (the
    same weights in another prompt format) that entry's."""
    spec = MODEL_SPECS.get(name)
    return f"{MODELS}/{spec.weights if spec is not None and spec.weights else name}"


# Names of the fine-tuned causal LMs, as a regex alternation (the finetune_model rule's wildcard).
FINETUNED = "|".join(re.escape(n) for n, s in MODEL_SPECS.items() if s.kind == "finetune" and not s.weights)


def finetune_table(name, key):
    """The normalised table a fine-tuned model trains on (key data) or is checked on (dev)."""
    ref = dict(MODEL_SPECS[name].finetune).get(key)
    return data_table(*ref.split("/", 1)) if ref else []


def embedder_spec():
    """What jobs pass to csbench.embed.Embedder: the materialised directory for specs that need
    materialising (GGUF, wheels, hub ids), else the spec itself (a directory or an offline alias)."""
    spec = MODEL_SPECS.get("embedder")
    if spec is not None and spec.needs_materialise:
        return model_dir("embedder")
    return config["models"]["embedder"]


def embedder_input():
    """The materialised embedder directory as a job input, where there is one."""
    spec = MODEL_SPECS.get("embedder")
    return [model_dir("embedder")] if spec is not None and spec.needs_materialise else []


def model_spec(name):
    """What materialising a model depends on: its spec without the prompt-format keys."""
    for group in ("lm", "qa"):
        if name in config["models"][group]:
            return without_prompt_keys(config["models"][group][name])
    if name == "embedder":
        return config["models"]["embedder"]
    raise WorkflowError(f"model {name!r} is not configured under models.lm or models.qa")


def pick(section, *keys):
    """The settings of a config section that a rule's output depends on: a rule's ``params`` hold
    exactly these (Snakemake reruns a job when a param changes). Settings that cannot change a
    number (batch sizes, memory, threads, served timeouts, cache locations) stay out of params and
    reach the script through ``snakemake.config``; each schema key says which rules depend on it
    (``x-reruns``, docs/ARCHITECTURE.md)."""
    return {k: section[k] for k in keys}


def lm_result(name, prompt=True):
    """An LM rule's ``params.lm``: the settings its outputs depend on, built by the library call
    its script computes with (csbench.lm.route: ``lm_params`` here, ``LMJob.of`` in the job), so
    the rerun trigger is the computing value. ``prompt=False`` for rules whose requests have
    empty contexts, which no format changes."""
    return lm_params(config, name, prompt)


def model_where(name):
    """The config key of a model name, for error messages."""
    for group in ("lm", "qa"):
        if name in config["models"][group]:
            return f"models.{group}.{name}"
    return "models.embedder"


def normalise_inputs(wildcards):
    tables = source_tables(wildcards.source)
    files = tables.get(wildcards.table)
    if files is None:
        raise WorkflowError(
            f"source {wildcards.source!r} cannot build table {wildcards.table!r} from the configured "
            f"files (it can build: {sorted(tables)}); check sources.{wildcards.source}.files"
        )
    return {f: f"{RAW}/{wildcards.source}/{f}" for f in files}


def all_data_tables():
    return [
        f"{DATA}/{s}/{t}.parquet" for s in csbench.data.SOURCES for t in source_tables(s)
    ]


# Target registry: each task's .smk registers a function returning its final outputs.
TARGETS = {}


def register_targets(task, func):
    TARGETS[task] = func


def all_targets():
    out = []
    for task in config["tasks"]:
        if task in TARGETS:
            out.extend(TARGETS[task]())
    return out


# GPUs a job asks for (`resources: gpu`), derived from the configured device, never hard-coded:
# the SLURM profile turns gpu=1 into `--gpus=1` on a GPU partition, gpu=0 keeps a job on CPU nodes.
def device_gpus(device):
    """cuda[:N] -> 1, cpu -> 0, auto -> 1 only when the host that builds the DAG can open an
    NVIDIA GPU (cheap: no torch import at parse time). On a cluster whose submit host has no GPU,
    `auto` therefore means CPU jobs: set the device to `cuda` to send GPU-capable rules to GPUs."""
    device = str(device)
    if device.startswith("cuda"):
        return 1
    if device == "auto":
        return int(csbench.compute.host_has_gpu())
    return 0


LM_GPU = device_gpus(config["lm"]["device"])  # LM rules: lm.device
