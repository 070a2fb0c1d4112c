"""Log-likelihoods from a served model (:mod:`csbench.lm.served`): the prompt ``context +
continuation`` is sent with ``max_tokens=1, echo=true, logprobs=1`` (as lm-evaluation-harness's
``local-completions`` does), and the echoed prompt tokens whose text reaches past the context
are the continuation's (``text_offset``, read as a position in the prompt as sent:
:func:`sent_positions`; a prompt that begins with the start token is sent once as it is). Every
echoed log-probability that enters a score is checked
(:func:`csbench.lm.cache.logprob_problem`); values in (0, ``LOGPROB_TOLERANCE``] count as 0. The start-of-job check (:meth:`EchoScoring.check`) finds whether the echoed log-probs are
aligned, or aligned only after the model's start token (start-token mode: ``empty_context`` is
then sent before every scored prompt)."""
from __future__ import annotations

import logging
import threading

from .cache import LOGPROB_TOLERANCE, logprob_problem
from .plan import split_pair
from .served_http import ServedClient, ServedError, for_request

log = logging.getLogger(__name__)


class EchoScoring:
    """(summed log-prob, n tokens) of requests through ``/completions`` echo. ``request``: the
    scorer's door for every request (:meth:`csbench.lm.served.ServedScorer._request`)."""

    def __init__(self, client: ServedClient, request, specials=()):
        self.client = client
        self.endpoint = client.endpoint
        self.request = request
        self.prefix = ""  # sent before every scored prompt (start-token mode, see check)
        # special-token texts a server may leave out of its echo (sent_positions): the start
        # token, and those of the tokenizer that renders the prompt format, by first character
        self._unechoed: dict[str, list[str]] = {}
        for text in sorted({*specials, self.endpoint.empty_context or ""} - {""}, key=len,
                           reverse=True):
            self._unechoed.setdefault(text[0], []).append(text)
        self._start_dist: dict | None = None
        self._lock = threading.Lock()

    def check(self) -> None:
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
            self.prefix = start
            if self._aligned(prompt):
                log.warning("%s: echoed log-probs are aligned only after the start token: every "
                            "scored prompt is sent after %r", self.endpoint.label(), start)
                return
            self.prefix = ""
        raise self.endpoint.lacks(
            "loglikelihood", "the echoed log-prob of a token differs from the log-prob the "
            "server gives the same token when it generates it (shifted by a position?)"
            + ("" if start else "; if the server needs the model's start token first, set "
               "empty_context in the spec to it"))

    def _aligned(self, prompt: str) -> bool:
        got = self.request("/completions", {"model": self.endpoint.model,
                                            "prompt": self.prefix + prompt, "max_tokens": 1,
                                            "temperature": 0.0, "logprobs": 1})
        choice = (got.get("choices") or [{}])[0]
        text = choice.get("text") or ""
        lps = (choice.get("logprobs") or {}).get("token_logprobs") or [None]
        lp, n = self.score(prompt, text or " x", probe=True)
        if not text.strip() or lps[0] is None or n != 1:
            log.warning("%s: echoed log-probs could not be checked against a generated token",
                        self.endpoint.label())
            return True
        greedy = self.logprob(lps[0], "the probe's generated token", text, len(prompt))
        return abs(lp - greedy) <= 0.05 + 0.01 * abs(greedy)

    def logprob(self, value, what: str, token, offset) -> float:
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
            self.client.count("clamped_logprobs")
            return 0.0
        return float(value)

    def score(self, context: str, continuation: str, probe: bool = False,
              what: str | None = None) -> tuple[float, int]:
        """(summed log-prob, n tokens) of one request (``what``: the request, for messages)."""
        vals = self.token_logprobs(context, continuation, probe, what)
        return sum(vals), len(vals)

    def token_logprobs(self, context: str, continuation: str, probe: bool = False,
                       what: str | None = None) -> list[float]:
        """The continuation's echoed token log-probs, in order (see :meth:`score`)."""
        what = what or "the start-of-job probe"
        context, continuation = split_pair(context, continuation)
        first_after_start = context == "" and bool(self.prefix)  # start-token mode: as is
        if context == "" and not first_after_start:
            if self.endpoint.empty_context is None:
                raise ServedError(f"{self.endpoint.label()}: a request has an empty context; the "
                                  "server gives no log-prob to a prompt's first token, so set "
                                  "empty_context in the spec (the model's start token)")
            context = self.endpoint.empty_context
        prompt = context + continuation
        # a prompt that begins with the start token (a chat template's output) gets no second
        # one, as the harness tokenises it (csbench.lm.plan.special_tokens)
        added = "" if prompt.startswith(self.prefix) else self.prefix
        try:
            got = self.request("/completions", {"model": self.endpoint.model,
                                                "prompt": added + prompt, "max_tokens": 1,
                                                "temperature": 0.0, "echo": True, "logprobs": 1})
        except ServedError as exc:
            raise for_request(exc, what, "the prompt (context + continuation)") from None
        choice = (got.get("choices") or [{}])[0]
        lp = choice.get("logprobs") or {}
        offsets, tlp = lp.get("text_offset"), lp.get("token_logprobs")
        if not offsets or not tlp or len(offsets) != len(tlp):
            raise self.endpoint.lacks("loglikelihood", "an echoed prompt came back without "
                                      "token_logprobs/text_offset (the server must support "
                                      "echo=true with logprobs)")
        toks = list(lp.get("tokens") or [])
        if len(toks) == len(offsets):  # positions in the prompt (the server's count may skip
            starts = [p - len(added) for p in  # special tokens and the start token)
                      sent_positions(added + prompt, offsets, toks, self._unechoed)]
        else:
            starts = list(offsets)
        ends = starts[1:] + [len(prompt)]
        vals: list[float] = []
        for i, (off, end, v) in enumerate(zip(starts, ends, tlp)):
            if off >= len(prompt) or max(end, off + 1) <= len(context):
                continue  # a context token, or the one generated token
            if v is None and i == 0 and first_after_start:
                v = self._after_start((toks or [""])[0])
            if v is None:
                raise self.endpoint.lacks("loglikelihood", "no log-prob for a continuation "
                                          f"token at offset {off}")
            token = toks[i] if i < len(toks) else prompt[off:end]
            if (i < len(toks) and isinstance(token, str) and token.isascii()
                    and not prompt.startswith(token, off)):
                raise ServedError(
                    f"{self.endpoint.label()}: {what}: the server echoed the token {token!r} "
                    f"where the prompt has {prompt[off:off + len(token)]!r} (offset {off}): its "
                    "text offsets do not count the prompt as sent (special tokens it echoes "
                    "differently?), so the continuation's tokens cannot be told; nothing of this "
                    "answer was cached")
            vals.append(self.logprob(v, what, token, off))
        if not vals:
            if probe:
                raise self.endpoint.lacks("loglikelihood",
                                          "the echoed prompt holds no continuation token")
            raise ServedError(f"{self.endpoint.label()}: the continuation {continuation!r} "
                              "has no tokens in the server's answer")
        return vals

    def _after_start(self, token: str) -> float | None:
        """log p(token | start token) from one request for every token's log-prob after the
        start token (asked once per scorer): in start-token mode the server gives the first
        token after it no echoed log-prob."""
        with self._lock:
            dist = self._start_dist
        if dist is None:
            got = self.request("/completions", {"model": self.endpoint.model,
                                                "prompt": self.prefix, "max_tokens": 1,
                                                "temperature": 0.0, "logprobs": 1 << 20})
            top = ((got.get("choices") or [{}])[0].get("logprobs") or {}).get("top_logprobs")
            dist = dict(top[0]) if top and isinstance(top[0], dict) else {}
            with self._lock:
                self._start_dist = dist
        return dist.get(token)


def sent_positions(sent: str, offsets, tokens, unechoed: dict[str, list[str]]) -> list[int]:
    """The position in ``sent`` (the prompt as sent) of each echoed token, from its
    ``text_offset``. A server counts offsets in the text it echoes, which may leave special
    tokens out: llama-cpp-python drops the start token from the echo and writes other control
    tokens as an entry with the text "" (or, for further start tokens, no entry). ``unechoed``:
    the texts that may be missing (by first character, longest first); one found where an entry
    begins and not echoed by it is counted in, before that entry, or as that entry when its text
    is ""."""
    out, shift = [], 0
    for off, token in zip(offsets, tokens):
        token = token if isinstance(token, str) else ""
        pos = off + shift
        while True:
            text = next((t for t in unechoed.get(sent[pos:pos + 1], ())
                         if sent.startswith(t, pos)), None)
            if text is None or token.startswith(text):
                break
            shift += len(text)
            if token == "":  # this entry is the special token, echoed as ""
                break
            pos += len(text)
        out.append(pos)
    return out


def special_texts(tokenizer) -> set[str]:
    """The texts of a tokenizer's special tokens (None: none)."""
    if tokenizer is None:
        return set()
    added = getattr(tokenizer, "added_tokens_decoder", None) or {}
    return ({t.content for t in added.values() if getattr(t, "special", False)}
            | set(getattr(tokenizer, "all_special_tokens", None) or ()))
