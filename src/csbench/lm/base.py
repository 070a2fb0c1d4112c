"""The interface every LM backend implements, and the part they share: request checks, the
cache lookup and the statistics. A backend implements ``_score_todo`` (score the requests the
cache did not answer, fill ``results`` and the cache), ``generate`` and ``compute``."""
from __future__ import annotations

import time

from ..errors import CsbenchError
from .cache import request_fingerprint
from .prompt import Formatter


class RequestError(CsbenchError, ValueError):
    """A request the model cannot answer as asked (a continuation longer than the model's
    window, a prompt that leaves no room to generate, a continuation without tokens); the message
    names the request."""


def describe_request(index: int, key: str | None, context: str, continuation: str) -> str:
    """``request <i> (key '<key>'): context '…<its end>', continuation '<its start>…'`` for
    error messages."""
    ctx = ("…" if len(context) > 40 else "") + repr(context[-40:])
    cont = repr(continuation[:40]) + ("…" if len(continuation) > 40 else "")
    return f"request {index}" + (f" (key {key!r})" if key else "") + f": context {ctx}, " \
        f"continuation {cont}"


def describe_prompt(index: int, name: str | None, prompt: str) -> str:
    """``prompt <i> (<name>) '<its start>…'`` for error messages."""
    text = repr(prompt[:60]) + ("…" if len(prompt) > 60 else "")
    return f"prompt {index}" + (f" ({name})" if name else "") + f" {text}"


class Scorer:
    """Summed continuation log-probabilities; see :mod:`csbench.lm` for the API."""

    cache = None  # a csbench.lm.cache.ScoreCache, or None
    backend = "?"
    formatter = Formatter()  # the prompt format (csbench.lm.prompt); each backend sets its own

    def __init__(self):
        self.stats = dict(requests=0, unique=0, cached=0, cache_rejected=0, seconds=0.0)

    def loglikelihood(self, requests, keys=None) -> list[tuple[float, int]]:
        """``[(context, continuation)] -> [(summed log-prob, n continuation tokens)]``; a context
        is a text or a :class:`~csbench.lm.prompt.Prompt`, rendered in the scorer's prompt format
        (the text scored, and cached, is the rendered one)."""
        requests = [self.formatter.request(c, x) for c, x in requests]
        if keys is not None:
            keys = list(keys)
            if len(keys) != len(requests):
                raise ValueError("keys must have one entry per request")
        return self._loglikelihood(requests, keys)

    def _loglikelihood(self, requests, keys) -> list[tuple[float, int]]:
        return self._lookup_and_score(requests, keys, None, 0)

    def _lookup_and_score(self, requests, keys, prep, offset: int) -> list[tuple[float, int]]:
        """Answer ``requests`` (``offset``: the index of the first in the caller's list, for
        messages) from the cache, then score the rest with ``_score_todo`` (``prep``: the
        backend's per-request preparation, e.g. token ids, or None)."""
        t0 = time.perf_counter()
        self.stats["requests"] += len(requests)
        results: list[tuple[float, int] | None] = [None] * len(requests)
        ckeys = [(keys[i] if keys is not None else "", request_fingerprint(*r))
                 for i, r in enumerate(requests)]
        if self.cache is not None:
            hit = self.cache.get(ckeys)
            for i, ck in enumerate(ckeys):
                if ck in hit:
                    results[i] = hit[ck]
            self.stats["cached"] += len(hit)
            self.stats["cache_rejected"] = self.cache.rejected
        todo = [i for i, r in enumerate(results) if r is None]
        if todo:
            self._score_todo(requests, todo, results, ckeys, prep, offset)
        self.stats["seconds"] += time.perf_counter() - t0
        return results  # type: ignore[return-value]

    def _score_todo(self, requests, todo, results, ckeys, prep,
                    offset) -> None:  # pragma: no cover
        raise NotImplementedError

    def token_stats(self, texts, keys=None, full_vocab: bool = True) -> list:
        """Per-token statistics of each text scored as one sequence after the model's start
        token, as lm-evaluation-harness's ``loglikelihood_rolling`` (raw text: no prompt format):
        ``[csbench.lm.tokenstats.TokenStats]`` in text order. ``full_vocab``: also Min-K%++'s
        full-vocabulary mean and deviation per position (a backend that cannot see the whole
        distribution refuses). ``keys``: one name per text for messages. Cached per text (each
        distinct text computed once), committed in chunks."""
        from .tokenstats import TokenStats, blob_problem, stats_fingerprint

        t0 = time.perf_counter()
        texts = list(texts)
        keys = list(keys) if keys is not None else [None] * len(texts)
        if len(keys) != len(texts):
            raise ValueError("keys must have one entry per text")
        self.stats["requests"] += len(texts)
        reqs = [stats_fingerprint(t, full_vocab) for t in texts]
        got: dict[str, TokenStats] = {}
        for req in dict.fromkeys(reqs):
            row = self.cache.get_samples(req) if self.cache is not None else None
            if row is not None and blob_problem(row, full_vocab) is None:
                got[req] = TokenStats.from_blob(row[0])
            elif row is not None:
                self.stats["cache_rejected"] += 1
        self.stats["cached"] += sum(r in got for r in reqs)
        first: dict[str, int] = {}
        for i, r in enumerate(reqs):
            if r not in got:
                first.setdefault(r, i)
        todo = list(first.values())
        self.stats["unique"] += len(todo)
        step = max(1, getattr(self, "commit_every", 1024))
        for a in range(0, len(todo), step):
            part = todo[a:a + step]
            new = self._token_stats_todo([texts[i] for i in part], [keys[i] for i in part],
                                         full_vocab)
            for i, st in zip(part, new):
                got[reqs[i]] = st
                if self.cache is not None:
                    self.cache.put_samples(reqs[i], [st.blob()])
        self.stats["seconds"] += time.perf_counter() - t0
        return [got[r] for r in reqs]

    def _token_stats_todo(self, texts, keys, full_vocab: bool) -> list:  # pragma: no cover
        """The statistics of texts the cache did not answer (see :meth:`token_stats`)."""
        raise NotImplementedError

    def generate(self, prompts, max_new_tokens: int = 16, num_samples: int = 1,
                 temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0, seed: int = 0,
                 stop=("\n",), names=None,
                 cut: list | None = None) -> list[list[str]]:  # pragma: no cover
        """Sampled continuations per prompt, each cut at its first stop string; ``cut`` (a
        list) receives per prompt one bool per sample: whether ``max_new_tokens`` ended it
        (no stop string, no end of sequence)."""
        raise NotImplementedError

    def describe(self) -> str:
        """One line for logs: backend and where it runs."""
        return self.backend

    def compute(self) -> dict:  # pragma: no cover
        """What computes the scores, for the provenance columns of every table made from them
        (:func:`csbench.provenance.stamp`): ``{"compute_device": "cpu" | "cuda:0" | "served",
        "compute_dtype": "float32" | "bfloat16" | "float16" | "served"}``, the resolved values."""
        raise NotImplementedError


def cut_at_stop(texts, stop) -> list[str]:
    """Cut each text at its first stop string."""
    out = []
    for t in texts:
        for st in stop or ():
            if st in t:
                t = t[:t.index(st)]
        out.append(t)
    return out
