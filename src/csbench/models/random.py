"""Randomly initialised models (``random:<shape>`` specs): a byte-level BPE tokenizer trained
in-process on text available offline, and a model of a named shape
(:data:`csbench.modelspec.spec.RANDOM_SHAPES`) built from a seed. For demos, tests and speed
benchmarks; their outputs are meaningless and every output that comes from one says so."""
from __future__ import annotations

import json
from pathlib import Path

from ..modelspec.spec import RANDOM_PREFIX, RANDOM_SHAPES
from ..provenance import PROVENANCE


def builtin_corpus(n_glosses: int = 30000) -> list[str]:
    """English text available offline: WordNet glosses and examples (for tokenizer training)."""
    from ..wordnet import wordnet

    wn = wordnet()
    out: list[str] = []
    for s in wn.all_synsets():
        out.append(s.definition())
        out.extend(s.examples())
        if len(out) >= n_glosses:
            break
    return out


def train_tokenizer(texts, vocab_size: int = 2048, seed_text: str = ""):
    """Train a byte-level BPE tokenizer in-process; returns a ``PreTrainedTokenizerFast``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=["<|endoftext|>", "[PAD]", "[CLS]", "[SEP]", "[UNK]"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    texts = list(texts) + ([seed_text] if seed_text else [])
    tok.train_from_iterator(texts, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<|endoftext|>", eos_token="<|endoftext|>",
        unk_token="<|endoftext|>", pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]",
        mask_token="[UNK]",
    )


def build_random_model(shape: str, outdir: str | Path, texts=None, seed: int = 0,
                       vocab_size: int = 2048) -> Path:
    """Build and save a randomly initialised model of a named shape with a trained tokenizer."""
    import torch
    import transformers

    if shape not in RANDOM_SHAPES:
        raise ValueError(f"unknown random model shape {shape!r}; known: {sorted(RANDOM_SHAPES)}")
    kw = dict(RANDOM_SHAPES[shape])
    model_type = kw.pop("model_type")
    tokenizer = train_tokenizer(texts if texts is not None else builtin_corpus(), vocab_size)
    cfg = transformers.AutoConfig.for_model(
        model_type, vocab_size=len(tokenizer), bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, **kw,
    )
    torch.manual_seed(seed)
    if model_type == "bert":
        model = transformers.AutoModelForQuestionAnswering.from_config(cfg)
    else:
        model = transformers.AutoModelForCausalLM.from_config(cfg)
    model.eval()
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(outdir)
    tokenizer.save_pretrained(outdir)
    spec = {"kind": "random", "label": RANDOM_PREFIX + shape, "ref": shape}
    (outdir / PROVENANCE).write_text(json.dumps({"spec": spec, "random": True, "seed": seed},
                                                indent=1))
    return outdir
