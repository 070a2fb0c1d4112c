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

The key is read from the environment at run time and sent only in the ``Authorization`` header,
to ``base_url``'s origin only (a redirect elsewhere is refused); it is never logged, cached or
written to a result or a provenance file, and a server that sends it back has it masked
(:class:`~csbench.lm.served_http.ServedClient`).

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

import logging

from ..config import default
from .base import Scorer, describe_request
from .cache import ScoreCache
from .plan import split_pair, text_order
from .prompt import Formatter, PromptFormat
from .served_http import FEATURES, Endpoint, ServedClient, ServedError
from .served_sample import ServedSampler
from .served_score import EchoScoring, special_texts

log = logging.getLogger(__name__)
SERVED = default("lm.served")  # the schema's defaults of lm.served, for callers without a config


class ServedScorer(Scorer):
    """Log-likelihoods and samples from a served model (same API as the local LMScorer): a
    facade over the transport (:class:`~csbench.lm.served_http.ServedClient`), the echoed
    log-likelihoods (:class:`~csbench.lm.served_score.EchoScoring`) and the sampler
    (:class:`~csbench.lm.served_sample.ServedSampler`)."""

    backend = "served"

    def __init__(self, endpoint: Endpoint, cache_dir=None,
                 max_concurrency: int = SERVED["max_concurrency"], timeout: float = SERVED["timeout"],
                 retries: int = SERVED["retries"], backoff: float = SERVED["backoff"],
                 max_answer_bytes: int = SERVED["max_answer_bytes"], refresh_cache: bool = False,
                 prompt_format: PromptFormat | None = None, tokenizer=None):
        super().__init__()
        self.endpoint = endpoint
        # the prompt format: rendered here where the model's tokenizer is at hand (or raw); a
        # chat format without it samples through /chat/completions and cannot be scored
        self.formatter = Formatter(prompt_format, tokenizer, endpoint.label())
        self.model_key = endpoint.key()
        if self.formatter.format.chat and self.formatter.renders_here:
            # chat scores from before the start token was sent once and offsets were counted
            # past the special tokens a server leaves out of its echo are not read back
            self.model_key += ":chat-echo2"
        self.cache = ScoreCache(cache_dir, self.model_key, refresh_cache) if cache_dir else None
        self.stats.update(http_requests=0, retries=0, samples_cached=0, clamped_logprobs=0)
        # fails now when the key's variable is missing
        self.client = ServedClient(endpoint, self.stats, max_concurrency, timeout, retries, backoff,
                                   max_answer_bytes)
        self.echo = EchoScoring(self.client, self._request, special_texts(tokenizer))
        self.sampler = ServedSampler(self.client, self._request, self.formatter, self.cache)
        self._checked: set[str] = set()

    def describe(self) -> str:
        return (f"served {self.endpoint.label()} (up to {self.client.max_concurrency} concurrent "
                "requests)")

    def compute(self) -> dict:
        from ..provenance import SERVED_COMPUTE

        return dict(SERVED_COMPUTE)

    def _request(self, path: str, body: dict | None = None) -> dict:
        """Every request of this scorer goes through here (the one place to watch them)."""
        return self.client.request(path, body)

    @property
    def _prefix(self) -> str:
        """What is sent before every scored prompt ("" unless in start-token mode)."""
        return self.echo.prefix

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
        checks = {"loglikelihood": self.echo.check, "sampling": self.sampler.check,
                  "chat_sampling": lambda: self.sampler.check(chat=True)}
        for f in todo:
            if f not in FEATURES:
                raise ValueError(f"unknown feature {f!r}; known: {sorted(FEATURES)}")
            checks[f]()
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

    # ------------------------------------------------------------------ log-likelihood
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
            return self.echo.score(*pairs[u], what=describe_request(offset + i, ckeys[i][0],
                                                                      *requests[i]))

        self.client.run(order, one, done, "LM scoring (served)")

    def _token_stats_todo(self, texts, keys, full_vocab: bool) -> list:
        """Echoed token log-probs of each text after the start token (the empty-context request
        of each text); a server returns no full-vocabulary distribution per position, so
        ``full_vocab`` is refused."""
        from .tokenstats import TokenStats

        if full_vocab:
            raise self.endpoint.lacks(
                "loglikelihood", "full-vocabulary statistics per position (Min-K%++'s mean and "
                "deviation) are not returned by a /completions endpoint, only the echoed "
                "tokens' log-probs")
        self.check("loglikelihood")
        out: list = [None] * len(texts)

        def one(u):
            return self.echo.token_logprobs("", texts[u], what=describe_request(
                u, keys[u], "", texts[u]))

        def done(u, vals):
            out[u] = TokenStats(list(vals))

        self.client.run(text_order(list(texts)), one, done, "LM token statistics (served)")
        return out

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
        if top_k:
            raise ServedError(f"{self.endpoint.label()}: top_k is not part of the OpenAI "
                              "completions API; use top_p")
        self.check("sampling")
        return self.sampler.generate(prompts, max_new_tokens, num_samples, temperature, top_p,
                                     seed, stop, names, cut)


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
        from ..models.load import load_tokenizer

        tokenizer = load_tokenizer(model_dir)
    return ServedScorer(Endpoint.from_spec(spec), cache_dir=cache_dir,
                        refresh_cache=bool((lm or {}).get("refresh_cache", False)),
                        prompt_format=fmt, tokenizer=tokenizer, **opts)
