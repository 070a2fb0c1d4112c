"""Raw-data layer: fetch a source's files from its official URL or a local mirror, verify sha256.

Files land atomically (a partial file never appears under its final name). From a mirror, a file
is read from ``<mirror>/<source>/<file>`` or, failing that, ``<mirror>/<source>/<file>.gz``
(decompressed on the way; the hash is that of the decompressed file). The configured hash may be
null: then the actual hash is only recorded (in the returned manifest and the log).
"""
from __future__ import annotations

import gzip
import hashlib
import logging
import shutil
import tarfile
import tempfile
import urllib.request
import zipfile
from pathlib import Path

from .errors import ChecksumError, InputError
from .io import atomic_path

log = logging.getLogger(__name__)
SKIP = "skip"
CHUNK = 1 << 20


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def wanted_files(source_cfg: dict) -> dict[str, str | None]:
    """The files of a source that are to be fetched (entries set to 'skip' are left out)."""
    return {f: h for f, h in source_cfg.get("files", {}).items() if h != SKIP}


def _verify(tmp: Path, final: Path, expected: str | None, origin: str) -> str:
    if tmp.stat().st_size == 0:
        raise InputError(origin, "file is empty")
    actual = sha256_file(tmp)
    if expected and actual != expected:
        raise ChecksumError(origin, expected, actual)
    log.info("%s: sha256 %s%s", final, actual, " (verified)" if expected else " (recorded, not checked)")
    return actual


def copy_from_mirror(mirror: str | Path, source: str, name: str, dest: str | Path,
                     expected: str | None) -> str:
    """Copy ``<mirror>/<source>/<name>`` (or ``.gz``) to ``dest``; verify; return the sha256."""
    plain = Path(mirror) / source / name
    gz = plain.with_name(plain.name + ".gz")
    dest = Path(dest)
    with atomic_path(dest) as tmp:
        if plain.exists():
            shutil.copyfile(plain, tmp)
            origin = plain
        elif gz.exists():
            try:
                with gzip.open(gz, "rb") as src, open(tmp, "wb") as out:
                    shutil.copyfileobj(src, out, CHUNK)
            except (OSError, EOFError) as exc:
                raise InputError(gz, f"corrupt gzip file ({exc})") from None
            origin = gz
        else:
            raise InputError(
                plain, f"missing from the mirror (also tried {gz.name}); expected sha256 "
                f"{expected or 'unknown'}"
            )
        return _verify(tmp, dest, expected, str(origin))


def _download(url: str, dest: Path, timeout: int = 60) -> None:
    log.info("downloading %s", url)
    req = urllib.request.Request(url, headers={"User-Agent": "csbench"})
    with urllib.request.urlopen(req, timeout=timeout) as resp, open(dest, "wb") as out:
        shutil.copyfileobj(resp, out, CHUNK)


def _extract_member(archive: Path, kind: str, name: str, dest: Path) -> None:
    """Extract the member whose path ends with ``name`` from a zip or tar.gz archive."""
    suffix = "/" + name
    if kind == "zip":
        with zipfile.ZipFile(archive) as zf:
            members = [m for m in zf.namelist() if m == name or m.endswith(suffix)]
            if not members:
                raise InputError(archive, f"archive has no member {name}")
            with zf.open(members[0]) as src, open(dest, "wb") as out:
                shutil.copyfileobj(src, out, CHUNK)
    else:
        with tarfile.open(archive, "r:*") as tf:
            members = [m for m in tf.getmembers() if m.isfile() and (m.name == name or m.name.endswith(suffix))]
            if not members:
                raise InputError(archive, f"archive has no member {name}")
            with tf.extractfile(members[0]) as src, open(dest, "wb") as out:
                shutil.copyfileobj(src, out, CHUNK)


def fetch_source(source: str, source_cfg: dict, outdir: str | Path, mirror: str | None = None) -> dict[str, str]:
    """Fetch every wanted file of ``source`` into ``outdir``; return ``{file: sha256}``.

    On any failure, files fetched by this call are removed, so no partial set remains.
    """
    outdir = Path(outdir)
    files = wanted_files(source_cfg)
    done: dict[str, str] = {}
    try:
        if mirror:
            for name, expected in files.items():
                done[name] = copy_from_mirror(mirror, source, name, outdir / name, expected)
            return done
        archive_kind = source_cfg.get("archive")
        with tempfile.TemporaryDirectory(dir=outdir.parent if outdir.parent.exists() else None) as td:
            archive = None
            if archive_kind:
                archive = Path(td) / "archive"
                _download(source_cfg["url"], archive)
            for name, expected in files.items():
                dest = outdir / name
                with atomic_path(dest) as tmp:
                    if archive is not None:
                        _extract_member(archive, archive_kind, name, tmp)
                    else:
                        url = source_cfg.get("urls", {}).get(name) or _join(source_cfg["url"], name)
                        _download(url, tmp)
                    done[name] = _verify(tmp, dest, expected, f"{source}/{name} ({source_cfg['url']})")
        return done
    except BaseException:
        for name in done:
            (outdir / name).unlink(missing_ok=True)
        raise


def _join(base: str, name: str) -> str:
    if base.endswith("/"):
        return base + name
    if base.rsplit("/", 1)[-1] == name:
        return base
    return base + "/" + name
