"""GGUF files: a bounds-checked header walk that refuses a truncated or corrupt file before
any reader touches it (:func:`check_gguf`), the file's quantisation
(:func:`gguf_quantisation`), and its conversion into a plain Hugging Face directory
(:func:`convert_gguf`, :func:`convert_checked`)."""
from __future__ import annotations

import contextlib
import functools
import logging
import math
import mmap
import struct
from pathlib import Path

from ..errors import InputError

log = logging.getLogger(__name__)

_GGUF_SCALAR_BYTES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
_GGUF_STRING, _GGUF_ARRAY, _GGUF_UINT32 = 8, 9, 4
_GGUF_MAX_DIMS = 4
_FACTS = ("general.architecture", "general.name", "general.file_type")  # gguf_quantisation's


class GGUFHeader:
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
    return len(_walk(path, shown)[1])


def _walk(path: str | Path, shown: str | None) -> tuple[dict, list]:
    """The checked header walk of :func:`check_gguf`: (the values of the keys in ``_FACTS``,
    the tensor infos as (name, dims, type, offset))."""
    import gguf

    path = Path(path)
    shown = shown or str(path)
    size = path.stat().st_size
    if size < 24:
        raise InputError(shown, f"GGUF file truncated: {size} bytes, shorter than a GGUF header "
                         "(24 bytes)")
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        h = GGUFHeader(buf, size, shown)
        if bytes(buf[:4]) != b"GGUF":
            raise InputError(shown, f"not a GGUF file (it starts with {bytes(buf[:4])!r}, not "
                             "b'GGUF')")
        h.pos = 4
        version = h.u32("the version")
        if version not in (2, 3):
            raise h.corrupt(f"version {version} (readable: 2, 3; big-endian files are not)")
        n_tensors, n_kv = h.u64("the tensor count"), h.u64("the key/value count")
        align = gguf.GGUF_DEFAULT_ALIGNMENT
        facts = {}
        for i in range(n_kv):       # each pair takes >= 12 bytes: bounded by the file size
            key = h.string(f"key {i + 1} of {n_kv}")
            what = f"the value of {key!r}"
            vtype = h.u32(what)
            if key == "general.alignment" and vtype == _GGUF_UINT32:
                align = h.u32(what)
            elif key in _FACTS and vtype == _GGUF_STRING:
                facts[key] = h.string(what)
            elif key in _FACTS and vtype == _GGUF_UINT32:
                facts[key] = h.u32(what)
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
    return facts, tensors


def gguf_quantisation(path: str | Path, shown: str | None = None) -> dict:
    """Architecture, file type (quantisation) and tensor types of a GGUF file, from the checked
    header walk (``gguf.GGUFReader`` would parse every vocabulary string first: seconds)."""
    from collections import Counter

    import gguf

    facts, tensors = _walk(path, shown)
    ftype = facts.get("general.file_type")
    try:
        ftype_name = gguf.LlamaFileType(ftype).name.replace("MOSTLY_", "") if ftype is not None \
            else None
    except ValueError:
        ftype_name = str(ftype)
    types = Counter(gguf.GGMLQuantizationType(t).name for _, _, t, _ in tensors)
    return {"architecture": facts.get("general.architecture"), "name": facts.get("general.name"),
            "file_type": ftype_name, "tensor_types": dict(types)}


@contextlib.contextmanager
def _quick_gguf_reading():
    """transformers' GGUF loading as it is, with gguf-py read faster (the same bytes out):
    transformers opens a new ``GGUFReader`` for the model and again for the tokenizer, and
    builds ``get_tensor_name_map`` once per module of the model (397 times for SmolLM2); here
    one reader per file and one map per architecture serve them all, and the reader slices
    its file as a plain array view of the memory map (slicing ``np.memmap`` itself runs Python
    code per slice, millions of times for a 49k-token vocabulary). SmolLM2-135M's conversion:
    23.8 -> 9.4 CPU s, the same six output files byte for byte. Left alone (the plain, slower
    conversion) where gguf-py does not have the two names this replaces."""
    import gguf
    import numpy as np

    if not (isinstance(getattr(gguf, "GGUFReader", None), type)
            and callable(getattr(gguf, "get_tensor_name_map", None))):
        yield
        return

    class Reader(gguf.GGUFReader):
        @property
        def data(self):
            return self._array

        @data.setter
        def data(self, mapped):  # GGUFReader.__init__ assigns its np.memmap here
            self._array = mapped.view(np.ndarray)

    readers: dict = {}

    def reader(path, mode="r"):
        key = (str(Path(path).resolve()), mode)
        if key not in readers:
            readers[key] = Reader(path, mode)
        return readers[key]

    saved = gguf.GGUFReader, gguf.get_tensor_name_map
    gguf.GGUFReader = reader
    gguf.get_tensor_name_map = functools.lru_cache(maxsize=None)(saved[1])
    try:
        yield
    finally:
        gguf.GGUFReader, gguf.get_tensor_name_map = saved


def convert_gguf(gguf_path: str | Path, outdir: str | Path) -> int:
    """Dequantise a GGUF causal LM once into a plain Hugging Face directory (safetensors, fp32,
    tokenizer); returns the parameter count."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf_path = Path(gguf_path)
    kw = dict(gguf_file=gguf_path.name)
    with _quick_gguf_reading():
        model = AutoModelForCausalLM.from_pretrained(str(gguf_path.parent), **kw)
        tok = AutoTokenizer.from_pretrained(str(gguf_path.parent), **kw)
    # the weights are dequantised: save them as plain fp32 tensors, not as a "gguf" model
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.hf_quantizer = None
    model.save_pretrained(str(outdir))
    tok.save_pretrained(str(outdir))
    return sum(p.numel() for p in model.parameters())


def convert_checked(gguf_file: Path, outdir: Path, shown: str, label: str) -> dict:
    """Check a GGUF file (:func:`check_gguf`) and convert it into ``outdir``; returns its
    provenance entries. A file that passes the check but that the readers still refuse is named
    with their error."""
    q = gguf_quantisation(gguf_file, shown)   # the checked walk: refuses a damaged file first
    try:
        log.info("converting %s (%s, %s) to a Hugging Face directory", label,
                 q["architecture"], q["file_type"])
        params = convert_gguf(gguf_file, outdir)
    except Exception as exc:  # noqa: BLE001 - gguf/transformers raise many types; named here
        raise InputError(shown, f"GGUF file could not be read or converted "
                         f"({type(exc).__name__}: {exc})") from exc
    return {"quantisation": q["file_type"], "gguf": q, "parameters": params,
            "dtype": "float32 (dequantised)"}
