"""Sampling generation for baselines (ProtoQA): many nucleus-sampled completions per prompt.

Models are loaded only through :func:`csbench.models.load_causal_lm`. Each prompt is sampled
on its own (no padding, so batching cannot change the text) with the torch RNG seeded from
``seed`` and the prompt text, so a prompt's samples do not depend on which other prompts are in
the run or on their order. ``chunk`` bounds how many sequences are decoded in one call.
"""
from __future__ import annotations

import logging
import zlib

log = logging.getLogger(__name__)


def prompt_seed(seed: int, prompt: str) -> int:
    return (int(seed) * 1_000_003 + zlib.crc32(prompt.encode("utf-8"))) % (2**31 - 1)


def sample_completions(model, tokenizer, prompts, num_samples: int, *, max_new_tokens: int = 20,
                       temperature: float = 1.0, top_p: float = 1.0, top_k: int = 0,
                       seed: int = 0, chunk: int = 100) -> list[list[str]]:
    """Return ``num_samples`` decoded continuations (prompt excluded) for each prompt."""
    import torch

    device = next(model.parameters()).device
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    out: list[list[str]] = []
    for prompt in prompts:
        ids = tokenizer.encode(prompt) or [tokenizer.eos_token_id]
        inp = torch.tensor([ids], device=device)
        torch.manual_seed(prompt_seed(seed, prompt))
        texts: list[str] = []
        left = int(num_samples)
        while left > 0:
            n = min(chunk, left)
            with torch.no_grad():
                gen = model.generate(
                    input_ids=inp, attention_mask=torch.ones_like(inp), do_sample=True,
                    temperature=temperature, top_p=top_p, top_k=top_k or None,
                    max_new_tokens=max_new_tokens, num_return_sequences=n, pad_token_id=pad,
                )
            texts.extend(tokenizer.batch_decode(gen[:, inp.shape[1]:], skip_special_tokens=True))
            left -= n
        out.append(texts)
    return out


def sample_from_dir(model_dir, prompts, num_samples: int, device: str = "auto",
                    dtype: str = "auto", **kw) -> list[list[str]]:
    """Load a causal LM from ``model_dir`` and sample (see :func:`sample_completions`)."""
    from ..models import load_causal_lm

    model, tokenizer = load_causal_lm(model_dir, device, dtype)
    return sample_completions(model, tokenizer, prompts, num_samples, **kw)
