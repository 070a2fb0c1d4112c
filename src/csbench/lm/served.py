"""The served backend: scores and samples through an OpenAI-compatible ``/v1/completions``
endpoint (llama-cpp-python's server, vLLM, ...). Spec (``models.lm.<name>``)::

    openai:
      base_url: http://127.0.0.1:8000/v1   # the API root; /completions and /models are under it
      model: smollm2                       # the model name the server serves
      api_key_env: MY_KEY                  # optional: the environment variable holding the key
      empty_context: "<|im_start|>"        # optional: text sent for an empty context
      tokenizer: models/smollm2-tokenizer  # optional: its tokenizer (saved with the model)

A chat prompt format (``lm.chat_template: on``, :mod:`csbench.lm.prompt`) is rendered here with
the saved tokenizer's chat template and sent to ``/completions`` like any text; without a
tokenizer, samples come from ``/chat/completions`` (the messages; the server applies its
template) and log-likelihoods cannot be carried (the chat endpoint gives no prompt log-probs):
such a job fails at its start, naming the ``tokenizer`` key.

The key is read from the environment at run time and sent only in the ``Authorization`` header;
it is never logged, cached or written to a result or a provenance file.

Log-likelihoods use ``echo`` with ``logprobs`` (as lm-evaluation-harness's ``local-completions``
does): the prompt ``context + continuation`` is sent with ``max_tokens=1, echo=true,
logprobs=1``, and the echoed prompt tokens whose text reaches past the context are the
continuation's (``text_offset``). The first token of a prompt has no log-probability, so an
empty context is replaced by ``empty_context`` (the model's start token, as the local backend
uses), or fails. Sampling sends ``n``, ``temperature``, ``top_p``, ``max_tokens``, ``stop`` and a
per-prompt ``seed``; a server that ignores ``n`` gets one request per sample (seeds
``seed + i``).

Requests run concurrently up to ``max_concurrency``, are retried with exponential backoff on
429, 5xx, timeouts and refused connections, and every answer is cached as it arrives (the LM
cache, keyed by endpoint and model), so a rerun or a resumed run sends nothing twice. Errors
that retrying cannot fix (401/403, 404, a server that gives no log-probs, a model it does not
serve) fail at once with a :class:`ServedError` naming the endpoint and the missing feature.

Every echoed log-probability that enters a score must be a number, finite and <= 0; values in
(0, ``LOGPROB_TOLERANCE`` = 1e-4] (rounding of a probability of 1) count as 0. Anything else (NaN,
±inf, a positive number, a string) fails the job with a :class:`ServedError` naming the endpoint,
the request and the value; nothing of that answer is cached. A request the server refuses as
too long for its context (an HTTP 400, as llama.cpp and vLLM answer) fails naming the request:
the server's window is not known here, so nothing is truncated or checked before sending.
"""
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
from .base import Scorer, cut_at_stop, describe_prompt, describe_request
from .cache import LOGPROB_TOLERANCE, ScoreCache, logprob_problem
from .plan import split_pair, text_order
from .prompt import Formatter, PromptFormat

log = logging.getLogger(__name__)
SERVED = default("lm.served")  # the schema's defaults of lm.served, for callers without a config

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


def _for_request(exc: ServedError, what: str, fits: str) -> ServedError:
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

    def api_key(self) -> str | None:
        if not self.api_key_env:
            return None
        key = os.environ.get(self.api_key_env)
        if not key:
            raise ServedError(f"{self.label()}: the environment variable {self.api_key_env} "
                              "(api_key_env of the spec) that should hold the API key is not set")
        return key


class ServedScorer(Scorer):
    """Log-likelihoods and samples from a served model (same API as the local LMScorer)."""

    backend = "served"

    def __init__(self, endpoint: Endpoint, cache_dir=None,
                 max_concurrency: int = SERVED["max_concurrency"], timeout: float = SERVED["timeout"],
                 retries: int = SERVED["retries"], backoff: float = SERVED["backoff"],
                 refresh_cache: bool = False, prompt_format: PromptFormat | None = None,
                 tokenizer=None):
        super().__init__()
        self.endpoint = endpoint
        # the prompt format: rendered here where the model's tokenizer is at hand (or raw); a
        # chat format without it samples through /chat/completions and cannot be scored
        self.formatter = Formatter(prompt_format, tokenizer, endpoint.label())
        self.max_concurrency = max(1, int(max_concurrency))
        self.timeout = float(timeout)
        self.retries = max(0, int(retries))
        self.backoff = float(backoff)
        self.model_key = endpoint.key()
        self.cache = ScoreCache(cache_dir, self.model_key, refresh_cache) if cache_dir else None
        self._key = endpoint.api_key()  # fails now when the variable is missing
        self._checked: set[str] = set()
        self._n_ok: bool | None = None  # does the server honour n?
        self._prefix = ""  # sent before every scored prompt (start-token mode, see check)
        self._lock = threading.Lock()
        host = urllib.parse.urlsplit(endpoint.base_url).hostname or ""
        # proxies from the environment apply, except to this machine
        self._open = (urllib.request.build_opener(urllib.request.ProxyHandler({})).open
                      if host in ("127.0.0.1", "localhost", "::1") else urllib.request.urlopen)
        self.stats.update(http_requests=0, retries=0, samples_cached=0, clamped_logprobs=0)

    def describe(self) -> str:
        return f"served {self.endpoint.label()} (up to {self.max_concurrency} concurrent requests)"

    def compute(self) -> dict:
        from ..provenance import SERVED_COMPUTE

        return dict(SERVED_COMPUTE)

    # ------------------------------------------------------------------ HTTP
    def _request(self, path: str, body: dict | None = None) -> dict:
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
                with self._lock:
                    self.stats["http_requests"] += 1
                with self._open(req, timeout=self.timeout) as resp:
                    raw = resp.read()
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
                with self._lock:
                    self.stats["retries"] += 1
                log.warning("%s: %s; retrying in %.1fs (%d/%d)", url, last, wait_s, attempt + 1,
                            self.retries)
                time.sleep(wait_s)
        raise ServedError(f"{url}: no answer after {self.retries + 1} tries (last: {last}); is "
                          "the server running and base_url right?")

    # ------------------------------------------------------------------ checks
    def check(self, *features: str) -> None:
        """Fail now, naming the feature, if the server cannot do what the task needs:
        the model must be served (``/models``, where the server has it), ``loglikelihood``
        needs echoed prompt log-probs, ``sampling`` needs completions."""
        if not self.formatter.renders_here:
            if "loglikelihood" in features:
                raise ServedError(
                    f"{self.endpoint.label()}: lm.chat_template is on, but log-likelihoods of a "
                    "chat prompt can only go through /completions with the model's chat "
                    "template applied here (the chat endpoint returns no prompt log-probs), "
                    "and this served model has no tokenizer: add tokenizer: <a local directory "
                    "with the served model's tokenizer> to its openai spec, or set "
                    "chat_template: off for it")
            features = tuple("chat_sampling" if f == "sampling" else f for f in features)
        todo = [f for f in features if f not in self._checked]
        if not todo:
            return
        if "models" not in self._checked:
            self._check_model()
            self._checked.add("models")
        for f in todo:
            if f not in FEATURES:
                raise ValueError(f"unknown feature {f!r}; known: {sorted(FEATURES)}")
            getattr(self, f"_check_{f}")()
            self._checked.add(f)
            log.info("%s: %s: ok", self.endpoint.label(), FEATURES[f])

    def _check_model(self) -> None:
        try:
            got = self._request("/models")
        except ServedError as exc:
            if "HTTP 404" not in str(exc):
                raise
            log.warning("%s: no /models listing; the model name is not checked", self.endpoint.label())
            return
        ids = [m.get("id") for m in (got.get("data") or []) if isinstance(m, dict)]
        if ids and self.endpoint.model not in ids:
            raise ServedError(f"{self.endpoint.label()}: the server does not serve model "
                              f"{self.endpoint.model!r}; it serves: {', '.join(map(str, ids))}")

    def _check_loglikelihood(self) -> None:
        """Echoed log-probs must be those of the echoed tokens: the greedy next token of a prompt
        and its log-prob (a plain completion) must come back with the same log-prob when echoed.
        Some servers shift echoed log-probs by one position unless the prompt starts with the
        model's start token (llama-cpp-python 0.3 with models that add none, e.g. SmolLM2); with
        ``empty_context`` set, that start token is then sent before every scored prompt."""
        prompt = "The sun rises in the east and sets in the"
        if self._aligned(prompt):
            return
        start = self.endpoint.empty_context
        if start:
            self._prefix = start
            if self._aligned(prompt):
                log.warning("%s: echoed log-probs are aligned only after the start token: every "
                            "scored prompt is sent after %r", self.endpoint.label(), start)
                return
            self._prefix = ""
        raise ServedError(
            f"{self.endpoint.label()}: lacks {FEATURES['loglikelihood']}: the echoed log-prob "
            "of a token differs from the log-prob the server gives the same token when it "
            "generates it (shifted by a position?)"
            + ("" if start else "; if the server needs the model's start token first, set "
               "empty_context in the spec to it"))

    def _aligned(self, prompt: str) -> bool:
        got = self._request("/completions", {"model": self.endpoint.model,
                                             "prompt": self._prefix + prompt, "max_tokens": 1,
                                             "temperature": 0.0, "logprobs": 1})
        choice = (got.get("choices") or [{}])[0]
        text = choice.get("text") or ""
        lps = (choice.get("logprobs") or {}).get("token_logprobs") or [None]
        lp, n = self._score_one(prompt, text or " x", probe=True)
        if not text.strip() or lps[0] is None or n != 1:
            log.warning("%s: echoed log-probs could not be checked against a generated token",
                        self.endpoint.label())
            return True
        greedy = self._logprob(lps[0], "the probe's generated token", text, len(prompt))
        return abs(lp - greedy) <= 0.05 + 0.01 * abs(greedy)

    def _logprob(self, value, what: str, token, offset) -> float:
        """A log-probability from the server, checked: finite, <= 0 (values up to
        LOGPROB_TOLERANCE count as 0); a ServedError naming the endpoint, the request and the
        value otherwise."""
        why = logprob_problem(value)
        if why is not None:
            raise ServedError(
                f"{self.endpoint.label()}: {what}: the server gave the log-prob {value!r} to the "
                f"token {token!r} at offset {offset}: {why}; a log-probability must be a finite "
                f"number <= 0 (values up to {LOGPROB_TOLERANCE:g} count as 0); nothing of this "
                "answer was cached")
        if value > 0:
            with self._lock:
                self.stats["clamped_logprobs"] += 1
            return 0.0
        return float(value)

    def _check_sampling(self, chat: bool = False) -> None:
        what = FEATURES["chat_sampling" if chat else "sampling"]
        body = {"model": self.endpoint.model, "max_tokens": 2, "temperature": 1.0, "top_p": 1.0,
                "n": 2, "seed": 1, "stop": ["\n"]}
        if chat:
            body["messages"] = [{"role": "user", "content": "One, two,"}]
        else:
            body["prompt"] = "One, two,"
        got = self._request("/chat/completions" if chat else "/completions", body)
        choices = got.get("choices") or []
        if not choices or not isinstance(_choice_text(choices[0], chat), str):
            field = "choices[].message.content" if chat else "choices[].text"
            raise ServedError(f"{self.endpoint.label()}: lacks {what}: the answer has no "
                              f"{field}: {str(got)[:200]}")
        self._n_ok = len(choices) == 2
        if not self._n_ok:
            log.warning("%s: the server ignores n (%d choice for n=2): one request per sample",
                        self.endpoint.label(), len(choices))

    def _check_chat_sampling(self) -> None:
        self._check_sampling(chat=True)

    # ------------------------------------------------------------------ log-likelihood
    def _score_one(self, context: str, continuation: str, probe: bool = False,
                   what: str | None = None):
        """(summed log-prob, n tokens) of one request (``what``: the request, for messages)."""
        what = what or "the start-of-job probe"
        context, continuation = split_pair(context, continuation)
        first_after_start = context == "" and bool(self._prefix)  # start-token mode: as is
        if context == "" and not first_after_start:
            if self.endpoint.empty_context is None:
                raise ServedError(f"{self.endpoint.label()}: a request has an empty context; the "
                                  "server gives no log-prob to a prompt's first token, so set "
                                  "empty_context in the spec (the model's start token)")
            context = self.endpoint.empty_context
        prompt = context + continuation
        try:
            got = self._request("/completions", {"model": self.endpoint.model,
                                                 "prompt": self._prefix + prompt, "max_tokens": 1,
                                                 "temperature": 0.0, "echo": True, "logprobs": 1})
        except ServedError as exc:
            raise _for_request(exc, what, "the prompt (context + continuation)") from None
        choice = (got.get("choices") or [{}])[0]
        lp = choice.get("logprobs") or {}
        offsets, tlp = lp.get("text_offset"), lp.get("token_logprobs")
        if not offsets or not tlp or len(offsets) != len(tlp):
            raise ServedError(f"{self.endpoint.label()}: lacks {FEATURES['loglikelihood']}: an "
                              "echoed prompt came back without token_logprobs/text_offset (the "
                              "server must support echo=true with logprobs)")
        if self._prefix and "".join(lp.get("tokens") or []).startswith(self._prefix):
            offsets = [o - len(self._prefix) for o in offsets]  # the server echoes the prefix
        ends = list(offsets[1:]) + [len(prompt)]
        toks = list(lp.get("tokens") or [])
        total, n = 0.0, 0
        for i, (off, end, v) in enumerate(zip(offsets, ends, tlp)):
            if off >= len(prompt) or max(end, off + 1) <= len(context):
                continue  # a context token, or the one generated token
            if v is None and i == 0 and first_after_start:
                v = self._after_start((toks or [""])[0])
            if v is None:
                raise ServedError(f"{self.endpoint.label()}: lacks {FEATURES['loglikelihood']}: "
                                  f"no log-prob for a continuation token at offset {off}")
            total += self._logprob(v, what, toks[i] if i < len(toks) else prompt[off:end], off)
            n += 1
        if n == 0:
            if probe:
                raise ServedError(f"{self.endpoint.label()}: lacks {FEATURES['loglikelihood']}: "
                                  "the echoed prompt holds no continuation token")
            raise ServedError(f"{self.endpoint.label()}: the continuation {continuation!r} "
                              "has no tokens in the server's answer")
        return total, n

    def _after_start(self, token: str) -> float | None:
        """log p(token | start token) from one request for every token's log-prob after the
        start token (asked once per scorer): in start-token mode the server gives the first
        token after it no echoed log-prob."""
        with self._lock:
            dist = getattr(self, "_start_dist", None)
        if dist is None:
            got = self._request("/completions", {"model": self.endpoint.model,
                                                 "prompt": self._prefix, "max_tokens": 1,
                                                 "temperature": 0.0, "logprobs": 1 << 20})
            top = ((got.get("choices") or [{}])[0].get("logprobs") or {}).get("top_logprobs")
            dist = dict(top[0]) if top and isinstance(top[0], dict) else {}
            with self._lock:
                self._start_dist = dist
        return dist.get(token)

    def _score_todo(self, requests, todo, results, ckeys, prep, offset) -> None:
        self.check("loglikelihood")
        uniq: dict[tuple[str, str], list[int]] = {}
        for i in todo:
            uniq.setdefault(split_pair(*requests[i]), []).append(i)
        pairs = list(uniq)
        first = [uniq[p][0] for p in pairs]
        self.stats["unique"] += len(pairs)
        order = text_order([c + x for c, x in pairs])

        def done(u, score):
            for i in uniq[pairs[u]]:
                results[i] = score
            if self.cache is not None:
                self.cache.put([(ckeys[i][0], ckeys[i][1], score[0], score[1])
                                for i in uniq[pairs[u]]])

        def one(u):
            i = first[u]
            return self._score_one(*pairs[u], what=describe_request(offset + i, ckeys[i][0],
                                                                      *requests[i]))

        self._run(order, one, done, "LM scoring (served)")

    def _run(self, units, fn, done, desc) -> None:
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

    # ------------------------------------------------------------------ sampling
    def generate(self, prompts, max_new_tokens: int = 16, num_samples: int = 1,
                 temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0, seed: int = 0,
                 stop=("\n",), names=None, cut: list | None = None) -> list[list[str]]:
        """``num_samples`` sampled continuations per prompt (each cut at its first stop string);
        cached per (endpoint, model, prompt, settings). Prompts are texts or
        :class:`~csbench.lm.prompt.Prompt`, rendered in the scorer's prompt format; a chat format
        without the model's tokenizer is sent as messages to ``/chat/completions``. ``top_k`` is
        not sent (0 only). ``names``: one name per prompt for messages (a prompt the server
        refuses). ``cut`` (a list) receives per prompt one bool per sample: whether
        ``max_new_tokens`` ended it (the choice's ``finish_reason`` is "length" and no stop string
        is in its text); a cached entry stored without these flags is asked again."""
        from .generate import prompt_seed

        if top_k:
            raise ServedError(f"{self.endpoint.label()}: top_k is not part of the OpenAI "
                              "completions API; use top_p")
        self.check("sampling")
        chat = not self.formatter.renders_here
        # what is sent of each prompt: its text (completions) or its messages (chat endpoint)
        sent = [{"messages": self.formatter.messages(p)} if chat
                else {"prompt": self.formatter.text(p)} for p in prompts]
        prompts = [json.dumps(x["messages"]) if chat else x["prompt"] for x in sent]
        path = "/chat/completions" if chat else "/completions"
        stop = [s for s in (stop or ()) if s]
        sent_stop = stop[:4]  # the API takes at most 4; the others cut the text here (cut_at_stop)
        settings = dict(n=int(num_samples), temperature=float(temperature), top_p=float(top_p),
                        max_tokens=int(max_new_tokens), stop=stop, seed=int(seed))
        out: list[list[str] | None] = [None] * len(prompts)
        flags: list[list[bool] | None] = [None] * len(prompts)
        reqs = [hashlib.sha1(json.dumps({**x, **settings}, sort_keys=True)
                             .encode("utf-8")).hexdigest() for x in sent]
        todo = []
        for i, r in enumerate(reqs):
            got = self.cache.get_samples(r, with_cut=True) if self.cache is not None else None
            if got is not None and (cut is None or got[1] is not None):
                out[i], flags[i] = got
                self.stats["samples_cached"] += 1
            else:
                todo.append(i)
        if self.cache is not None:
            self.stats["cache_rejected"] = self.cache.rejected

        def one(i):
            try:
                return sample_one(i)
            except ServedError as exc:
                what = describe_prompt(i, None if names is None else names[i], prompts[i])
                raise _for_request(exc, what, "the prompt plus max_tokens") from None

        def sample_one(i):
            base = {"model": self.endpoint.model, **sent[i],
                    "temperature": settings["temperature"], "top_p": settings["top_p"],
                    "max_tokens": settings["max_tokens"], "stop": sent_stop}
            s = prompt_seed(seed, prompts[i])
            if self._n_ok:
                got = self._request(path, {**base, "n": settings["n"], "seed": s})
                choices = sorted(got.get("choices") or [], key=lambda c: c.get("index", 0))
            else:
                choices = [(self._request(path, {**base, "seed": s + k})
                            .get("choices") or [{}])[0] for k in range(settings["n"])]
            texts = [_choice_text(c, chat) for c in choices]
            if len(texts) != settings["n"]:
                raise ServedError(f"{self.endpoint.label()}: asked for {settings['n']} samples, "
                                  f"got {len(texts)}")
            bad = [t for t in texts if not isinstance(t, str)]
            if bad:
                what = describe_prompt(i, None if names is None else names[i], prompts[i])
                raise ServedError(f"{self.endpoint.label()}: {what}: a sample's text is "
                                  f"{bad[0]!r}, not a string; nothing of this answer was cached")
            reasons = [c.get("finish_reason") for c in choices]
            ended = None                     # per sample: max_tokens ended it (None: unknown)
            if all(r in ("stop", "length") for r in reasons):
                ended = [r == "length" and not any(st in t for st in stop)
                         for r, t in zip(reasons, texts)]
            elif cut is not None:
                what = describe_prompt(i, None if names is None else names[i], prompts[i])
                raise ServedError(f"{self.endpoint.label()}: {what}: a sample's finish_reason is "
                                  f"{next(r for r in reasons if r not in ('stop', 'length'))!r}, "
                                  "not 'stop' or 'length', so the samples that max_tokens cut "
                                  "cannot be told; nothing of this answer was cached")
            return cut_at_stop(texts, stop), ended

        def done(i, got):
            out[i], flags[i] = got
            if self.cache is not None:
                self.cache.put_samples(reqs[i], *got)

        self._run(todo, one, done, "sampling (served)")
        if cut is not None:
            cut.extend(flags)
        return out  # type: ignore[return-value]


def _choice_text(choice: dict, chat: bool):
    """The text of one choice: ``text`` (completions) or ``message.content`` (chat); "" when
    missing, anything else as the server sent it (checked by the caller)."""
    if not chat:
        return choice.get("text", "")
    message = choice.get("message")
    return message.get("content", "") if isinstance(message, dict) else ""


def _body_text(exc: urllib.error.HTTPError) -> str:
    try:
        body = exc.read()[:300].decode("utf-8", "replace")
    except Exception:  # noqa: BLE001
        return ""
    return f"({body.strip()})" if body.strip() else ""


def from_spec(spec: dict, lm: dict | None = None, cache_dir=None,
              model_dir=None) -> ServedScorer:
    """A served scorer from an ``openai`` spec mapping and the ``lm`` settings (``served``, the
    prompt format); with a chat format, the tokenizer saved in ``model_dir`` (the served
    model's directory, where its spec names one) applies the chat template."""
    from pathlib import Path

    opts = {**SERVED, **((lm or {}).get("served") or {})}
    fmt = PromptFormat.of(lm)
    tokenizer = None
    if fmt.chat and model_dir is not None and (Path(model_dir) / "tokenizer_config.json").is_file():
        from ..models import load_tokenizer

        tokenizer = load_tokenizer(model_dir)
    return ServedScorer(Endpoint.from_spec(spec), cache_dir=cache_dir,
                        refresh_cache=bool((lm or {}).get("refresh_cache", False)),
                        prompt_format=fmt, tokenizer=tokenizer, **opts)
