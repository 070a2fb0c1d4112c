"""One route per LM job: the settings a causal-LM job computes with are built once, by
:func:`lm_params`, and that one value is both the rule's ``params.lm`` (what Snakemake reruns a
job on) and what the job's script computes with (:class:`LMJob`), so the rerun trigger *is* the
computing value by construction.

* **Parse time** (workflow/rules/common.smk, ``lm_result``): :func:`lm_params` gives the ``lm``
  settings a model's outputs depend on: ``device`` and ``dtype`` for local weights (none for a
  served model: its endpoint computes them) and, for requests a prompt format renders
  (``prompt=True``), the model's format (:func:`csbench.lm.prompt.model_format`: only when it is
  not the default raw one, so runs made before formats existed keep their params).
* **Job time** (the scripts): :meth:`LMJob.of` takes ``params.lm`` as the settings that change a
  number, over the config's ``lm`` section for those that cannot (batch sizes, served timeouts),
  opens the scorer once (local engine or served endpoint, :func:`csbench.lm.open_scorer`),
  samples through that same scorer (:func:`csbench.lm.backend.sample`), and stamps the outputs
  with the provenance, the compute device and dtype the scorer reports and the prompt columns of
  the format it used (:meth:`LMJob.stamp`).
"""
from __future__ import annotations

from pathlib import Path

from ..modelspec import lm_spec
from .prompt import PromptFormat, model_format

# the keys of params.lm that are a prompt format (absent: the raw format)
FORMAT_KEYS = ("chat_template", "system_instruction")


def lm_params(config: dict, name: str, prompt: bool = True) -> dict:
    """The ``lm`` settings the outputs of model ``name`` (``models.lm.<name>``) depend on: what
    an LM rule's ``params.lm`` hold and what its job computes with (:class:`LMJob`). ``prompt``:
    whether the job's requests are rendered in a prompt format (False for requests with empty
    contexts, e.g. a topic's cross-entropy or an item text's signals, which no format changes:
    they are scored raw)."""
    served = lm_spec(config, name).kind == "openai"
    lm = config["lm"]
    out = {} if served else {"device": lm["device"], "dtype": lm["dtype"]}
    if prompt:
        out.update(model_format(config, name).params())
    return out


class LMJob:
    """Everything an LM job computes with, from its rule's ``params.lm`` (:func:`lm_params`) and
    the config's ``lm`` section: the model directory, the settings, the prompt format, the
    scorer (opened once, on first use) and the columns every output carries."""

    def __init__(self, model_dir, params_lm: dict, config_lm: dict | None = None,
                 cache_dir=None, prompt: bool = True):
        from .backend import lm_settings

        settings = lm_settings(config_lm)
        for key in FORMAT_KEYS:      # the format is params.lm's alone: raw where it names none
            settings.pop(key, None)
        settings.update(params_lm)
        self.model_dir, self.settings, self.cache_dir = model_dir, settings, cache_dir
        self.format = PromptFormat.of(settings)
        self.prompt = prompt
        self._scorer = None

    @classmethod
    def of(cls, snakemake, prompt: bool = True) -> "LMJob":
        """The route of a Snakemake job: ``input.model``, ``params.lm``, the config's ``lm``
        section and the job's LM cache (:func:`csbench.lm.backend.job_lm_cache`). ``prompt``:
        as the rule's :func:`lm_params` call (whether the outputs carry prompt columns)."""
        from .backend import job_lm_cache

        return cls(snakemake.input.model, dict(snakemake.params.lm), snakemake.config.get("lm"),
                   job_lm_cache(snakemake), prompt)

    @property
    def served(self) -> bool:
        from .backend import served_spec

        return served_spec(self.model_dir) is not None

    def scorer(self, needs=("loglikelihood",)):
        """The model's scorer (:func:`csbench.lm.open_scorer`), opened on first use."""
        if self._scorer is None:
            from .backend import open_scorer

            cache = self.cache_dir if (self.served or "loglikelihood" in needs) else None
            self._scorer = open_scorer(self.model_dir, self.settings, cache, needs=needs)
        return self._scorer

    def sample(self, prompts, num_samples: int, **kw) -> list[list[str]]:
        """Sampled completions through the scorer (:func:`csbench.lm.backend.sample`; local:
        the model the scorer loaded, served: its endpoint)."""
        from .backend import sample

        return sample(self.model_dir, prompts, num_samples, lm=self.settings,
                      cache_dir=self.cache_dir, scorer=self.scorer(needs=("sampling",)), **kw)

    def compute(self) -> dict:
        """The compute device and dtype, as the scorer reports them."""
        return self.scorer().compute()

    def prompt_columns(self) -> list[dict]:
        """The prompt columns the outputs carry (none for a job without a prompt format)."""
        return [self.format.columns()] if self.prompt else []

    def columns(self) -> dict:
        """Every provenance column of the outputs (:func:`csbench.provenance.stamp` of nothing)."""
        return self.stamp({})

    def stamp(self, table):
        """``table`` with the provenance columns of the weights, the compute columns of the
        scorer and the prompt columns (:func:`csbench.provenance.stamp`)."""
        from ..provenance import stamp

        return stamp(table, self.model_dir, self.compute(), *self.prompt_columns())

    def describe(self) -> str:
        return f"{Path(str(self.model_dir)).name}, {self.scorer().describe()}"
