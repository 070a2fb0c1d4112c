"""One route per QA job (``qads_predict``, ``qads_finetune_fold``): the rule's ``params.qa`` are
built here (:func:`predict_params`, :func:`fold_params`) and the job computes with exactly them
(:class:`QAJob`): the model loaded on that device in that dtype, and the compute columns from
the same settings (:func:`csbench.compute.compute_columns`). The config's ``qads.qa`` section
adds only what cannot change a number (``batch_size``)."""
from __future__ import annotations

# the qads.qa settings each job's outputs depend on (not `models`: which jobs exist; not
# `batch_size`: speed; not `mem_mb`: a resource)
PREDICT_KEYS = ("device", "dtype", "max_length", "stride", "max_answer_len", "null_threshold")
# a fold trains in float32 on qa.device (computing in qads.finetune.dtype); its held-out
# predictions use the span settings
FOLD_KEYS = ("device", "max_answer_len", "null_threshold")


def predict_params(qa: dict) -> dict:
    """``params.qa`` of ``qads_predict``: the ``qads.qa`` settings the predictions depend on."""
    return {k: qa[k] for k in PREDICT_KEYS}


def fold_params(qa: dict) -> dict:
    """``params.qa`` of ``qads_finetune_fold``: the ``qads.qa`` settings a fold depends on."""
    return {k: qa[k] for k in FOLD_KEYS}


class QAJob:
    """What a QA job computes with: ``params.qa`` over the config's speed-only ``batch_size``;
    the compute dtype is ``qa.dtype`` for predictions, the fine-tuning's (``ft``) for a fold."""

    def __init__(self, model_dir, params_qa: dict, config_qa: dict, ft: dict | None = None):
        self.model_dir = model_dir
        self.qa = {"batch_size": config_qa["batch_size"], **params_qa}
        self.dtype = ft["dtype"] if ft is not None else params_qa["dtype"]

    @classmethod
    def of(cls, snakemake) -> "QAJob":
        """The route of a Snakemake job (``params.ft`` present: a fine-tuning fold)."""
        return cls(snakemake.input.model, dict(snakemake.params.qa),
                   snakemake.config["qads"]["qa"], getattr(snakemake.params, "ft", None))

    def load(self):
        """The QA model and tokenizer on the job's device, in its dtype."""
        from ..models.load import load_qa_model

        return load_qa_model(self.model_dir, device=self.qa["device"], dtype=self.dtype)

    def compute(self) -> dict:
        """The compute device and dtype of the job's settings (as :meth:`load` and
        :func:`csbench.compute.autocast` resolve them)."""
        from ..compute import compute_columns

        return compute_columns(self.qa["device"], self.dtype)
