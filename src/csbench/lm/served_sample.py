"""Sampling from a served model (:mod:`csbench.lm.served`): ``n``, ``temperature``, ``top_p``,
``max_tokens``, ``stop`` and a per-prompt ``seed`` on ``/completions`` (a prompt rendered here)
or ``/chat/completions`` (a chat format without the model's tokenizer: the messages, the server
applies its template); a server that ignores ``n`` gets one request per sample (seeds
``seed + i``). Every answer is cached as it arrives."""
from __future__ import annotations

import hashlib
import json
import logging

from .base import cut_at_stop, describe_prompt
from .prompt import Formatter
from .served_http import ServedClient, ServedError, for_request

log = logging.getLogger(__name__)


class ServedSampler:
    """Samples through a served model's completions. ``request``: the scorer's door for every
    request (:meth:`csbench.lm.served.ServedScorer._request`); ``cache``: its LM cache or None."""

    def __init__(self, client: ServedClient, request, formatter: Formatter, cache=None):
        self.client = client
        self.endpoint = client.endpoint
        self.request = request
        self.formatter = formatter
        self.cache = cache
        self.n_ok: bool | None = None  # does the server honour n? (known after check)

    def check(self, chat: bool = False) -> None:
        """The server must sample on ``/completions`` (``chat``: on ``/chat/completions``);
        finds whether it honours ``n``."""
        feature = "chat_sampling" if chat else "sampling"
        body = {"model": self.endpoint.model, "max_tokens": 2, "temperature": 1.0, "top_p": 1.0,
                "n": 2, "seed": 1, "stop": ["\n"]}
        if chat:
            body["messages"] = [{"role": "user", "content": "One, two,"}]
        else:
            body["prompt"] = "One, two,"
        got = self.request("/chat/completions" if chat else "/completions", body)
        choices = got.get("choices") or []
        if not choices or not isinstance(_choice_text(choices[0], chat), str):
            field = "choices[].message.content" if chat else "choices[].text"
            raise self.endpoint.lacks(feature, f"the answer has no {field}: {str(got)[:200]}")
        self.n_ok = len(choices) == 2
        if not self.n_ok:
            log.warning("%s: the server ignores n (%d choice for n=2): one request per sample",
                        self.endpoint.label(), len(choices))

    def generate(self, prompts, max_new_tokens: int = 16, num_samples: int = 1,
                 temperature: float = 1.0, top_p: float = 1.0, seed: int = 0,
                 stop=("\n",), names=None, cut: list | None = None) -> list[list[str]]:
        """:meth:`csbench.lm.served.ServedScorer.generate`, once the sampling feature is
        checked."""
        from .generate import prompt_seed

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
                self.client.stats["samples_cached"] += 1
            else:
                todo.append(i)
        if self.cache is not None:
            self.client.stats["cache_rejected"] = self.cache.rejected

        def what(i):
            return describe_prompt(i, None if names is None else names[i], prompts[i])

        def one(i):
            try:
                return sample_one(i)
            except ServedError as exc:
                raise for_request(exc, what(i), "the prompt plus max_tokens") from None

        def sample_one(i):
            base = {"model": self.endpoint.model, **sent[i],
                    "temperature": settings["temperature"], "top_p": settings["top_p"],
                    "max_tokens": settings["max_tokens"], "stop": sent_stop}
            s = prompt_seed(seed, prompts[i])
            if self.n_ok:
                got = self.request(path, {**base, "n": settings["n"], "seed": s})
                choices = sorted(got.get("choices") or [], key=lambda c: c.get("index", 0))
            else:
                choices = [(self.request(path, {**base, "seed": s + k})
                            .get("choices") or [{}])[0] for k in range(settings["n"])]
            texts = [_choice_text(c, chat) for c in choices]
            if len(texts) != settings["n"]:
                raise ServedError(f"{self.endpoint.label()}: asked for {settings['n']} samples, "
                                  f"got {len(texts)}")
            bad = [t for t in texts if not isinstance(t, str)]
            if bad:
                raise ServedError(f"{self.endpoint.label()}: {what(i)}: a sample's text is "
                                  f"{bad[0]!r}, not a string; nothing of this answer was cached")
            reasons = [c.get("finish_reason") for c in choices]
            ended = None                     # per sample: max_tokens ended it (None: unknown)
            if all(r in ("stop", "length") for r in reasons):
                ended = [r == "length" and not any(st in t for st in stop)
                         for r, t in zip(reasons, texts)]
            elif cut is not None:
                raise ServedError(f"{self.endpoint.label()}: {what(i)}: a sample's finish_reason "
                                  f"is {next(r for r in reasons if r not in ('stop', 'length'))!r}"
                                  ", not 'stop' or 'length', so the samples that max_tokens cut "
                                  "cannot be told; nothing of this answer was cached")
            return cut_at_stop(texts, stop), ended

        def done(i, got):
            out[i], flags[i] = got
            if self.cache is not None:
                self.cache.put_samples(reqs[i], *got)

        self.client.run(todo, one, done, "sampling (served)")
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
