"""The served backend's HTTP side (:mod:`csbench.lm.served`): the endpoint, its errors, and
:class:`ServedClient`, which sends requests (retried with exponential backoff on 429, 5xx,
timeouts and refused connections; the other refusals mapped to a :class:`ServedError` that
names the endpoint and what to check) and runs units of work concurrently up to
``max_concurrency``. The API key is read from the environment and sent only in the
``Authorization`` header, only to the origin (scheme, host, port) of ``base_url``: a redirect to
another origin is refused, naming both URLs. The key's value is masked (:data:`MASK`) in every
answer and error text before anything reads it, so no message, log, table or provenance holds
it. An answer is read in chunks, at most ``max_answer_bytes``; a longer one fails at once."""
from __future__ import annotations

import hashlib
import http.client
import json
import logging
import os
import re
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass

from ..config import default

log = logging.getLogger(__name__)
MASK = "<api key masked>"
CHUNK = 1 << 20
MAX_REDIRECTS = 5
MAX_ANSWER_BYTES = default("lm.served")["max_answer_bytes"]

FEATURES = {
    "loglikelihood": "echo with logprobs on /completions (log-likelihood scoring)",
    "sampling": "sampling on /completions (temperature, top_p, max_tokens, stop)",
    "chat_sampling": "sampling on /chat/completions (the server applies the model's chat "
                     "template)",
}


class ServedError(RuntimeError):
    """A served model failed in a way retrying cannot fix (or retries ran out); ``status``: the
    HTTP status of a refused request, where there was one."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


# HTTP statuses that refuse one request (not the endpoint): the error names the request.
_REQUEST_STATUSES = (400, 413, 422)
_CONTEXT_WORDS = re.compile(r"context|too long|maximum.{0,40}length|exceed", re.I)


def for_request(exc: ServedError, what: str, fits: str) -> ServedError:
    """``exc`` (a refused request) with the request named, and what to check when the server
    says the request is too long."""
    if exc.status not in _REQUEST_STATUSES:
        return exc
    hint = ""
    if _CONTEXT_WORDS.search(str(exc)):
        hint = (f"; {fits} seems not to fit in the server's context window: shorten it or "
                "serve the model with a larger context")
    return ServedError(f"{exc}: {what}{hint}", exc.status)


@dataclass(frozen=True)
class Endpoint:
    base_url: str
    model: str
    api_key_env: str | None = None
    empty_context: str | None = None

    @classmethod
    def from_spec(cls, d: dict) -> "Endpoint":
        return cls(str(d["base_url"]).rstrip("/"), str(d["model"]), d.get("api_key_env"),
                   d.get("empty_context"))

    def key(self) -> str:
        """Cache key: endpoint, model and empty_context (not the API key)."""
        return "served:" + hashlib.sha256(
            f"openai\0{self.base_url}\0{self.model}\0{self.empty_context}".encode()).hexdigest()

    def label(self) -> str:
        return f"openai:{self.model}@{self.base_url}"

    def lacks(self, feature: str, why: str) -> ServedError:
        """The error of a server that lacks ``feature`` (a :data:`FEATURES` key), and why."""
        return ServedError(f"{self.label()}: lacks {FEATURES[feature]}: {why}")

    def api_key(self) -> str | None:
        if not self.api_key_env:
            return None
        key = os.environ.get(self.api_key_env)
        if not key:
            raise ServedError(f"{self.label()}: the environment variable {self.api_key_env} "
                              "(api_key_env of the spec) that should hold the API key is not set")
        return key


def _origin(url: str) -> tuple:
    """(scheme, host, port) of ``url``, the port filled in for http and https."""
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    port = parts.port or {"http": 80, "https": 443}.get(scheme)
    return scheme, (parts.hostname or "").lower(), port


class _SameOrigin(urllib.request.HTTPRedirectHandler):
    """Follows a redirect (at most :data:`MAX_REDIRECTS`) only within ``base_url``'s origin, so
    the ``Authorization`` header (which urllib copies onto the redirected request) goes nowhere
    else; a redirect to another origin is refused, naming both URLs."""

    max_redirections = MAX_REDIRECTS

    def __init__(self, base_url: str):
        self.base_url = base_url

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        if _origin(newurl) != _origin(self.base_url):
            fp.close()
            raise ServedError(
                f"{req.full_url}: HTTP {code} redirects to {newurl}, another origin (scheme, "
                f"host, port) than base_url {self.base_url}: refused, the API key is sent to "
                "base_url's origin only (if the new address is the server's, make it base_url)")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


class ServedClient:
    """Requests to one endpoint and the concurrent runner; counts ``http_requests`` and
    ``retries`` in ``stats`` (the scorer's, shared: :meth:`count` adds to it thread-safely)."""

    def __init__(self, endpoint: Endpoint, stats: dict, max_concurrency: int, timeout: float,
                 retries: int, backoff: float, max_answer_bytes: int = MAX_ANSWER_BYTES):
        self.endpoint = endpoint
        self.stats = stats
        self.max_concurrency = max(1, int(max_concurrency))
        self.timeout = float(timeout)
        self.retries = max(0, int(retries))
        self.backoff = float(backoff)
        self.max_answer_bytes = int(max_answer_bytes)
        self._key = endpoint.api_key()  # fails now when the variable is missing
        self._lock = threading.Lock()
        self._warned = False
        host = urllib.parse.urlsplit(endpoint.base_url).hostname or ""
        # proxies from the environment apply, except to this machine
        local = host in ("127.0.0.1", "localhost", "::1")
        self._open = urllib.request.build_opener(
            *([urllib.request.ProxyHandler({})] if local else []),
            _SameOrigin(endpoint.base_url)).open

    def count(self, stat: str, n: int = 1) -> None:
        with self._lock:
            self.stats[stat] += n

    def mask(self, text: str) -> str:
        """``text`` with the API key's value replaced by :data:`MASK` (warned once)."""
        if not self._key or self._key not in text:
            return text
        if not self._warned:
            self._warned = True
            log.warning("%s: an answer or error held the value of $%s (the API key): masked",
                        self.endpoint.base_url, self.endpoint.api_key_env)
        return text.replace(self._key, MASK)

    def _scrub(self, obj):
        """A JSON answer with :meth:`mask` applied to every string in it."""
        if not self._key:
            return obj
        if isinstance(obj, str):
            return self.mask(obj)
        if isinstance(obj, list):
            return [self._scrub(v) for v in obj]
        if isinstance(obj, dict):
            return {self.mask(k): self._scrub(v) for k, v in obj.items()}
        return obj

    def request(self, path: str, body: dict | None = None) -> dict:
        """The JSON answer of a GET (``body`` None) or POST to ``base_url + path``. The one place
        where the server's text comes in: the answer, and the text of every error raised, are
        masked (:meth:`mask`)."""
        try:
            return self._scrub(self._send(path, body))
        except ServedError as exc:
            raise ServedError(self.mask(str(exc)), exc.status) from None

    def _read(self, resp, url: str) -> bytes:
        """At most ``max_answer_bytes`` of an answer, read in chunks; more (declared or read)
        fails at once."""
        limit = self.max_answer_bytes
        declared = (resp.headers.get("Content-Length") or "").strip()
        buf = bytearray()
        if not (declared.isdigit() and int(declared) > limit):
            while block := resp.read(min(CHUNK, limit + 1 - len(buf))):
                buf += block
                if len(buf) > limit:
                    break
            else:
                return bytes(buf)
        raise ServedError(f"{url}: the answer is longer than lm.served.max_answer_bytes "
                          f"({limit:,} bytes): refused, not read further")

    def _send(self, path: str, body: dict | None) -> dict:
        url = self.endpoint.base_url + path
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        data = None if body is None else json.dumps(body).encode("utf-8")
        last = ""
        for attempt in range(self.retries + 1):
            wait_s = self.backoff * (2 ** attempt)
            try:
                req = urllib.request.Request(url, data=data, headers=headers,
                                             method="GET" if body is None else "POST")
                self.count("http_requests")
                with self._open(req, timeout=self.timeout) as resp:
                    raw = self._read(resp, url)
                try:
                    return json.loads(raw)
                except ValueError:
                    raise ServedError(f"{url}: the answer is not JSON: {raw[:200]!r}") from None
            except urllib.error.HTTPError as exc:
                status = exc.code
                detail = _body_text(exc)
                if status == 429 or status >= 500:
                    last = f"HTTP {status} {detail}".strip()
                    after = exc.headers.get("Retry-After") if exc.headers else None
                    if after and after.strip().isdigit():
                        wait_s = max(wait_s, min(60.0, float(after)))
                elif status in (401, 403):
                    who = (f"the key in ${self.endpoint.api_key_env}" if self.endpoint.api_key_env
                           else "no key was sent (set api_key_env in the spec)")
                    raise ServedError(f"{url}: HTTP {status} (unauthorised): {who} was refused"
                                      ) from None
                elif status == 404:
                    raise ServedError(f"{url}: HTTP 404 not found {detail} (is base_url the API "
                                      "root, usually ending in /v1, and the model name right?)"
                                      ) from None
                else:
                    raise ServedError(f"{url}: HTTP {status} {detail}".strip(), status) from None
            except (urllib.error.URLError, http.client.HTTPException, ConnectionError,
                    socket.timeout, TimeoutError, OSError) as exc:
                reason = getattr(exc, "reason", None) or exc
                last = f"{type(exc).__name__}: {reason}"
            if attempt < self.retries:
                self.count("retries")
                log.warning("%s: %s; retrying in %.1fs (%d/%d)", url, self.mask(last), wait_s,
                            attempt + 1, self.retries)
                time.sleep(wait_s)
        raise ServedError(f"{url}: no answer after {self.retries + 1} tries (last: {last}); is "
                          "the server running and base_url right?")

    def run(self, units, fn, done, desc) -> None:
        """``fn`` on each unit, up to ``max_concurrency`` at once, ``done`` on each result in the
        calling thread as results arrive. After a failure nothing new starts, the requests in
        flight are still recorded (so a resumed run need not send them again), then it raises."""
        from ..logs import progress

        prog = progress(len(units), desc, unit="requests")
        it = iter(units)
        failure: BaseException | None = None
        with ThreadPoolExecutor(self.max_concurrency) as pool:
            pending: dict = {}

            def refill():
                for u in it:
                    pending[pool.submit(fn, u)] = u
                    if len(pending) >= 2 * self.max_concurrency:
                        break

            refill()
            while pending:
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                for fut in finished:
                    u = pending.pop(fut)
                    if fut.cancelled():
                        continue
                    exc = fut.exception()
                    if exc is not None:
                        if failure is None:
                            failure = exc
                            for f in pending:
                                f.cancel()
                        continue
                    done(u, fut.result())
                    prog.update(1)
                if failure is None:
                    refill()
        prog.close()
        if failure is not None:
            raise failure


def _body_text(exc: urllib.error.HTTPError) -> str:
    try:
        body = exc.read(300).decode("utf-8", "replace")  # bounded: the start is enough
    except Exception:  # noqa: BLE001
        return ""
    return f"({body.strip()})" if body.strip() else ""
