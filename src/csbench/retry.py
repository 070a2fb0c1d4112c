"""Network trouble retried with a back-off, for every fetch (raw data, wheels, the hub).

A failure that ``is_transient(exc)`` calls network trouble is tried again (``ATTEMPTS`` tries in
all, waits of ``BACKOFF_S``, 2x, 4x ... seconds); any other failure fails at once, so a wrong
hash, version or file is reported once and never retried by Snakemake either.
"""
from __future__ import annotations

import logging
import time

log = logging.getLogger(__name__)

ATTEMPTS = 4                     # tries of a fetch that fails on network trouble
BACKOFF_S = 5.0                  # first wait between tries (doubles)
TRANSIENT_HTTP = {408, 425, 429, 500, 502, 503, 504}


def with_retries(call, is_transient, what: str, attempts: int | None = None,
                 backoff: float | None = None):
    """``call()``, tried again after a failure that ``is_transient(exc)`` calls network trouble;
    any other failure, or the last try's, is raised as it is."""
    attempts = ATTEMPTS if attempts is None else attempts
    backoff = BACKOFF_S if backoff is None else backoff
    for attempt in range(1, attempts + 1):
        try:
            return call()
        except Exception as exc:  # noqa: BLE001 - sorted into transient or not
            if attempt == attempts or not is_transient(exc):
                raise
            wait = backoff * 2 ** (attempt - 1)
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            log.warning("%s: try %d of %d failed on network trouble (%s); retrying in %.0f s",
                        what, attempt, attempts, first, wait)
            time.sleep(wait)
