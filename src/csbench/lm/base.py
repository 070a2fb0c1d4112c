"""The interface every LM backend implements, and the part they share: request checks, the
cache lookup and the statistics. A backend implements ``_score_todo`` (score the requests the
cache did not answer, fill ``results`` and the cache) and ``generate``."""
from __future__ import annotations

import time

from .cache import request_fingerprint


class Scorer:
    """Summed continuation log-probabilities; see :mod:`csbench.lm` for the API."""

    cache = None  # a csbench.lm.cache.ScoreCache, or None
    backend = "?"

    def __init__(self):
        self.stats = dict(requests=0, unique=0, cached=0, seconds=0.0)

    def loglikelihood(self, requests, keys=None) -> list[tuple[float, int]]:
        """``[(context, continuation)] -> [(summed log-prob, n continuation tokens)]``."""
        requests = [(str(c), str(x)) for c, x in requests]
        if keys is not None and len(keys) != len(requests):
            raise ValueError("keys must have one entry per request")
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
        todo = [i for i, r in enumerate(results) if r is None]
        if todo:
            self._score_todo(requests, todo, results, ckeys)
        self.stats["seconds"] += time.perf_counter() - t0
        return results  # type: ignore[return-value]

    def _score_todo(self, requests, todo, results, ckeys) -> None:  # pragma: no cover
        raise NotImplementedError

    def loglikelihood_rolling(self, texts) -> list[tuple[float, int]]:
        """Log-probability of whole texts (conditioned on the start-of-text token)."""
        return self.loglikelihood([("", t) for t in texts])

    def generate(self, prompts, max_new_tokens: int = 16, num_samples: int = 1,
                 temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0, seed: int = 0,
                 stop=("\n",)) -> list[list[str]]:  # pragma: no cover
        raise NotImplementedError

    def describe(self) -> str:
        """One line for logs: backend and where it runs."""
        return self.backend


def cut_at_stop(texts, stop) -> list[str]:
    """Cut each text at its first stop string."""
    out = []
    for t in texts:
        for st in stop or ():
            if st in t:
                t = t[:t.index(st)]
        out.append(t)
    return out
