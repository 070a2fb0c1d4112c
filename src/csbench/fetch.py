"""Raw-data layer: fetch a source's files from its official URL or a local mirror, verify sha256.

Files land atomically (a partial file never appears under its final name). From a mirror, a file
is read from ``<mirror>/<source>/<file>`` or, failing that, ``<mirror>/<source>/<file>.gz``
(decompressed on the way; the hash is that of the decompressed file). The configured hash may be
null: then the actual hash is only recorded (in the returned manifest and the log).

Retry policy: only transient network failures (connection refused/reset, timeouts, HTTP 408, 429
and 5xx) are retried, here, with a back-off (``ATTEMPTS`` tries in all); a deterministic failure
(HTTP 404, a hash mismatch, a missing or empty file, a corrupt archive) fails at once, with one
message, and the download rule itself is not retried by Snakemake. Archive members larger than
``MAX_MEMBER_BYTES`` (declared or actual) are refused: a decompression bomb stops there. A
download is read in chunks and refused past ``MAX_DOWNLOAD_BYTES`` (declared by its
Content-Length or read: a pinned sha256 says nothing of the size, and an endless answer would
fill the disk), naming the URL and the limit; not retried.
"""
from __future__ import annotations

import gzip
import http.client
import logging
import re
import shutil
import socket
import ssl
import tarfile
import tempfile
import urllib.error
import urllib.request
import zipfile
import zlib
from pathlib import Path

from .errors import ChecksumError, InputError
from .io import atomic_path, sha256_file
from .retry import ATTEMPTS, BACKOFF_S, TRANSIENT_HTTP, with_retries

log = logging.getLogger(__name__)
SKIP = "skip"
CHUNK = 1 << 20
MAX_MEMBER_BYTES = 4 << 30       # largest archive member extracted (decompression bombs)
MAX_DOWNLOAD_BYTES = 1 << 30     # largest download (every source file today is under 100 MB)
# file keys of sources.<s>.files: relative paths whose segments do not start with a dot (no '..',
# no absolute paths, nothing outside results/raw/<source>/); the schema holds the same pattern
FILE_NAME = re.compile(r"^[A-Za-z0-9_+-][A-Za-z0-9._+-]*(/[A-Za-z0-9_+-][A-Za-z0-9._+-]*)*$")


def wanted_files(source_cfg: dict) -> dict[str, str | None]:
    """The files of a source that are to be fetched (entries set to 'skip' are left out)."""
    out = {f: h for f, h in source_cfg.get("files", {}).items() if h != SKIP}
    for f in out:
        if not FILE_NAME.match(f):
            from .errors import ConfigError

            raise ConfigError(f"file name {f!r}: must be a relative path of plain names "
                              "(no '..', no leading '/' or '.')")
    return out


def _verify(tmp: Path, final: Path, expected: str | None, origin: str) -> str:
    if tmp.stat().st_size == 0:
        raise InputError(origin, "file is empty")
    actual = sha256_file(tmp)
    if expected and actual != expected:
        raise ChecksumError(origin, expected, actual)
    log.info("%s: sha256 %s%s", final, actual, " (verified)" if expected else " (recorded, not checked)")
    return actual


def mirror_file(mirror: str | Path, source: str, name: str) -> Path | None:
    """The file a mirror holds for ``<source>/<name>``: ``<mirror>/<source>/<name>``, else its
    ``.gz``; None when it has neither. The download rules take it as an input, so editing a
    mirror file reruns its download (and what reads it)."""
    plain = Path(mirror) / source / name
    gz = plain.with_name(plain.name + ".gz")
    return plain if plain.exists() else gz if gz.exists() else None


def copy_from_mirror(mirror: str | Path, source: str, name: str, dest: str | Path,
                     expected: str | None) -> str:
    """Copy ``<mirror>/<source>/<name>`` (or ``.gz``) to ``dest``; verify; return the sha256."""
    plain = Path(mirror) / source / name
    gz = plain.with_name(plain.name + ".gz")
    origin = mirror_file(mirror, source, name)
    dest = Path(dest)
    with atomic_path(dest) as tmp:
        if origin == plain:
            shutil.copyfile(plain, tmp)
        elif origin == gz:
            try:
                with gzip.open(gz, "rb") as src:
                    _copy_limited(src, tmp, MAX_MEMBER_BYTES, _bomb(gz, name, MAX_MEMBER_BYTES))
            except (OSError, EOFError, zlib.error) as exc:
                raise InputError(gz, f"corrupt gzip file ({exc})") from None
        else:
            raise InputError(
                plain, f"missing from the mirror (also tried {gz.name}); expected sha256 "
                f"{expected or 'unknown'}"
            )
        return _verify(tmp, dest, expected, str(origin))


def is_transient(exc: BaseException) -> bool:
    """Whether a download error is worth retrying (network trouble, not a wrong URL or file)."""
    if isinstance(exc, urllib.error.HTTPError):
        return exc.code in TRANSIENT_HTTP
    if isinstance(exc, urllib.error.URLError):
        reason = exc.reason
        if isinstance(reason, str):          # "unknown url type", "no host given", ...
            return False
        # a local file:// path that is not there, a certificate that does not verify: final
        return not isinstance(reason, (FileNotFoundError, PermissionError, ssl.SSLCertVerificationError))
    return isinstance(exc, (TimeoutError, socket.timeout, ConnectionError,
                            http.client.IncompleteRead, http.client.RemoteDisconnected))


def _download(url: str, dest: Path, timeout: int = 60, attempts: int = ATTEMPTS,
              backoff: float = BACKOFF_S, max_bytes: int = MAX_DOWNLOAD_BYTES) -> None:
    """Download ``url`` to ``dest`` (at most ``max_bytes``), retrying transient failures only
    (see the module doc)."""
    def once():
        log.info("downloading %s", url)
        req = urllib.request.Request(url, headers={"User-Agent": "csbench"})
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            declared = (resp.headers.get("Content-Length") or "").strip()
            length = f"Content-Length {declared}" if declared else "no Content-Length"
            over = InputError(url, f"over the download limit of {max_bytes:,} bytes (csbench."
                              f"fetch.MAX_DOWNLOAD_BYTES; {length}): refused, not read further")
            if declared.isdigit() and int(declared) > max_bytes:
                raise over
            _copy_limited(resp, dest, max_bytes, over)

    try:
        with_retries(once, is_transient, url, attempts, backoff)
    except Exception as exc:  # noqa: BLE001 - a final error, or the last try's network trouble
        if is_transient(exc):
            raise InputError(url, f"download failed {attempts} times, last: {exc}") from None
        if isinstance(exc, urllib.error.HTTPError):
            raise InputError(url, f"HTTP {exc.code} {exc.reason} (not retried)") from None
        raise


def _copy_limited(src, dest: Path, limit: int, refused: InputError) -> None:
    """Copy ``src`` to ``dest`` in chunks, raising ``refused`` past ``limit`` bytes (whatever a
    header said)."""
    n = 0
    with open(dest, "wb") as out:
        for block in iter(lambda: src.read(CHUNK), b""):
            n += len(block)
            if n > limit:
                raise refused
            out.write(block)


def _bomb(archive: Path, name: str, limit: int) -> InputError:
    return InputError(archive, f"member {name} exceeds {limit} bytes when decompressed "
                      "(refused: decompression bomb or wrong file)")


def _extract_member(archive: Path, kind: str, name: str, dest: Path,
                    max_bytes: int | None = None) -> None:
    """Extract the member whose path ends with ``name`` from a zip or tar.gz archive (at most
    ``max_bytes`` decompressed bytes, default ``MAX_MEMBER_BYTES``: the declared size is checked
    first, then the bytes read)."""
    max_bytes = MAX_MEMBER_BYTES if max_bytes is None else max_bytes
    suffix = "/" + name
    try:
        if kind == "zip":
            with zipfile.ZipFile(archive) as zf:
                members = [m for m in zf.infolist() if m.filename == name or m.filename.endswith(suffix)]
                if not members:
                    raise InputError(archive, f"archive has no member {name}")
                if members[0].file_size > max_bytes:
                    raise InputError(archive, f"member {name} declares {members[0].file_size} "
                                     f"bytes, over the limit of {max_bytes}")
                with zf.open(members[0]) as src:
                    _copy_limited(src, dest, max_bytes, _bomb(archive, name, max_bytes))
        else:
            with tarfile.open(archive, "r:*") as tf:
                members = [m for m in tf.getmembers() if m.isfile() and (m.name == name or m.name.endswith(suffix))]
                if not members:
                    raise InputError(archive, f"archive has no member {name}")
                if members[0].size > max_bytes:
                    raise InputError(archive, f"member {name} declares {members[0].size} bytes, "
                                     f"over the limit of {max_bytes}")
                with tf.extractfile(members[0]) as src:
                    _copy_limited(src, dest, max_bytes, _bomb(archive, name, max_bytes))
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise InputError(archive, f"corrupt {kind} archive ({exc})") from None


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
