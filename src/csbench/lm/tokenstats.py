"""Per-token statistics of a text scored as one sequence (the ``token_stats`` request kind of
:class:`csbench.lm.base.Scorer`), as lm-evaluation-harness's ``loglikelihood_rolling`` scores a
text that fits the window: the text's tokens (no special tokens) after the model's start token
(BOS, else EOS), every text token scored. Per token ``t``:

* ``lp[t] = log p(x_t | x_<t)``;
* ``mu[t] = sum_z p(z | x_<t) log p(z | x_<t)`` and
  ``sigma[t] = sqrt(sum_z p(z | x_<t) log p(z | x_<t)^2 - mu[t]^2)``, over the whole
  vocabulary in fp32 (Min-K%++'s normalisers); only where the backend sees the whole
  distribution (local weights), else None.

Cached through the LM cache's public samples API (:meth:`csbench.lm.cache.ScoreCache.get_samples`
/ ``put_samples``): one row per text under its own request hash (:func:`stats_fingerprint`,
which no log-likelihood or sampling request can have), the statistics as one JSON text; a row
that fails :func:`blob_problem` is a miss (recomputed)."""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass

from .cache import LOGPROB_TOLERANCE

# The version of the statistics' definition, part of their cache hash.
STATS_VERSION = 1


@dataclass
class TokenStats:
    """One text's per-token statistics (see the module docstring)."""
    lp: list[float]
    mu: list[float] | None = None
    sigma: list[float] | None = None

    @property
    def n(self) -> int:
        return len(self.lp)

    def blob(self) -> str:
        return json.dumps({"lp": self.lp, "mu": self.mu, "sigma": self.sigma})

    @classmethod
    def from_blob(cls, blob: str) -> "TokenStats":
        d = json.loads(blob)
        return cls(d["lp"], d["mu"], d["sigma"])


def stats_fingerprint(text: str, full_vocab: bool) -> str:
    """The cache's request hash of a text's statistics (the 0xff byte: no UTF-8 text, so no
    other request, has it)."""
    head = b"token-stats-v%d%s\xff" % (STATS_VERSION, b"-full" if full_vocab else b"")
    return hashlib.sha1(head + text.encode("utf-8")).hexdigest()


def stats_problem(st: TokenStats, full_vocab: bool) -> str | None:
    """Why ``st`` is not a valid set of statistics (None when it is)."""
    if not st.lp:
        return "no tokens"
    for name, vals, ok in (("lp", st.lp, lambda v: v <= LOGPROB_TOLERANCE),
                           ("mu", st.mu, lambda v: v <= LOGPROB_TOLERANCE),
                           ("sigma", st.sigma, lambda v: v >= 0)):
        if vals is None:
            if name != "lp" and not full_vocab:
                continue
            return f"no {name}"
        if len(vals) != len(st.lp):
            return f"{name} has {len(vals)} values for {len(st.lp)} tokens"
        for v in vals:
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
                    or not ok(v):
                return f"{name} holds {v!r}"
    return None


def blob_problem(texts, full_vocab: bool) -> str | None:
    """Why a cached samples row (a list holding one JSON text) is not valid statistics."""
    if not isinstance(texts, list) or len(texts) != 1:
        return "not one JSON text"
    try:
        st = TokenStats.from_blob(texts[0])
    except (ValueError, KeyError, TypeError):
        return "not the statistics' JSON"
    return stats_problem(st, full_vocab)
