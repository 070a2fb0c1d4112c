"""The local backend: :class:`LMScorer` runs the model with PyTorch (see the package docstring
for the API; :func:`csbench.lm.open_scorer` makes one). It is a facade over the engine's parts:
request encoding and the window check (:mod:`csbench.lm.tokens`), the dtype
(:mod:`csbench.lm.precision`), the execution of encoded requests (:mod:`csbench.lm.engine`:
batching, forward passes, tree attention, KV reuse), the cache lookup
(:class:`csbench.lm.base.Scorer`) and the cache itself (:mod:`csbench.lm.cache`).

Window (as lm-evaluation-harness 0.4, ``HFLM._loglikelihood_tokens``): a request feeds the last
``max_length + 1`` tokens of context + continuation (less the last one), so a too-long context is
left-truncated; such requests are counted (``stats["truncated"]``) and one warning per call says
how many. A continuation longer than ``max_length`` tokens cannot be scored (the harness asserts
it never happens): a :class:`~csbench.lm.base.RequestError` naming the request and the lengths,
before anything is scored."""
from __future__ import annotations

import functools
import gc
import logging

from .base import RequestError, Scorer, cut_at_stop, describe_request
from .cache import ScoreCache, model_fingerprint, score_problem
from .engine import Engine
from .plan import model_window
from .precision import Precision
from .prompt import Formatter, PromptFormat
from .tokens import Encoder, check_window

log = logging.getLogger(__name__)


class LMScorer(Scorer):
    """Summed continuation log-probabilities from a local causal LM (see :mod:`csbench.lm`).

    ``device``, ``dtype``, ``batch_size``, ``max_batch_size``, ``refresh_cache``: the ``lm``
    settings; ``prompt_format``: how contexts become text (:mod:`csbench.lm.prompt`, with this
    model's chat template; None: raw); the engine's options: ``add_bos_token`` (None: the tokenizer's default),
    ``max_length`` (the window; None: the model's), ``share_prefix`` (tree attention / KV reuse
    for shared prefixes), ``min_shared_prefix`` (tokens a prefix group shares at least),
    ``min_common_prefix`` (header tokens a batch runs once), ``commit_every`` (with a cache,
    requests are scored and committed in chunks of this many, cut from the request list before
    the lookup, so a job killed mid-way keeps what it finished and a resumed run forms the same
    batches)."""

    backend = "local"

    def __init__(self, model_dir, *, device: str, dtype: str, batch_size: int | str,
                 max_batch_size: int, refresh_cache: bool = False, cache_dir=None,
                 prompt_format: PromptFormat | None = None,
                 add_bos_token: bool | None = None, max_length: int | None = None,
                 share_prefix: bool = True, min_shared_prefix: int = 4,
                 min_common_prefix: int = 8, commit_every: int = 1024):
        from ..models.load import load_causal_lm

        self.model, self.tokenizer = load_causal_lm(model_dir, device, dtype)
        self.precision = Precision(self.model)
        self.device, self.dtype = self.precision.device, self.precision.dtype
        self.encoder = Encoder(self.tokenizer, add_bos_token)
        self.formatter = Formatter(prompt_format, self.tokenizer, str(model_dir))
        self.max_length = int(max_length or model_window(self.model.config))
        self.commit_every = max(1, int(commit_every))
        self.model_key = model_fingerprint(model_dir) + ":" + self.precision.cache_tag
        self.cache = ScoreCache(cache_dir, self.model_key, refresh_cache) if cache_dir else None
        self.stats = dict(requests=0, unique=0, cached=0, cache_rejected=0, truncated=0,
                          rows=0, shared_groups=0, batches=0, forward_tokens=0, padded_tokens=0,
                          oom_backoffs=0, seconds=0.0)
        self._engine_args = (batch_size, max_batch_size, share_prefix, min_shared_prefix,
                             min_common_prefix)

    @functools.cached_property
    def engine(self) -> Engine:
        """The scoring engine, built on first use (sampling, :meth:`sample`, needs none)."""
        return Engine(self.model, self.precision, self.encoder.pad_token_id, self.stats,
                      self.max_length, *self._engine_args)

    def encode(self, context: str, continuation: str) -> tuple[list[int], list[int]]:
        return self.encoder.encode(context, continuation)

    def encode_many(self, requests) -> list[tuple[list[int], list[int]]]:
        return self.encoder.encode_many(requests)

    def describe(self) -> str:
        return f"local on {self.device} ({self.dtype})"

    def compute(self) -> dict:
        return self.precision.compute()

    def _loglikelihood(self, requests, keys) -> list[tuple[float, int]]:
        # The many small token lists would trigger cyclic-GC passes over the whole model's
        # objects; nothing here makes cycles, so pause the collector while scoring.
        gc_was = gc.isenabled()
        gc.disable()
        truncated, example = 0, None
        try:
            n = max(1, self.commit_every if self.cache is not None else len(requests))
            out: list[tuple[float, int]] = []
            for i in range(0, len(requests), n):
                part, pkeys = requests[i:i + n], None if keys is None else keys[i:i + n]
                enc = self.encoder.encode_many(part)  # every request, cached or not: checked
                cut, first = check_window(part, pkeys, enc, i, self.max_length)
                truncated += cut
                self.stats["truncated"] += cut
                example = example or first
                out += self._lookup_and_score(part, pkeys, enc, i)
            return out
        finally:
            if gc_was:
                gc.enable()
            if truncated:
                log.warning("%d of %d requests had their context left-truncated to fit the "
                            "model's window of %d tokens (lm-evaluation-harness truncates the "
                            "same way), e.g. %s", truncated, len(requests), self.max_length,
                            example)

    def _score_todo(self, requests, todo, results, ckeys, prep, offset) -> None:
        # Deduplicate identical token sequences (``prep``: every request's token ids).
        uniq: dict[tuple, int] = {}
        enc: list[tuple[list[int], list[int]]] = []
        where: list[int] = []
        for i in todo:
            ctx, cont = prep[i]
            k = (tuple(ctx), tuple(cont))
            if k not in uniq:
                uniq[k] = len(enc)
                enc.append((ctx, cont))
            where.append(uniq[k])
        self.stats["unique"] += len(enc)
        scores = self.engine.score(enc)
        new = []
        for i, u in zip(todo, where):
            why = score_problem(*scores[u])
            if why is not None:
                raise RequestError(
                    f"{describe_request(offset + i, ckeys[i][0], *requests[i])}: the model gave "
                    f"log-prob {scores[u][0]!r}: {why} ({self.precision.overflow_hint()}); "
                    "nothing of it was cached")
            results[i] = (min(scores[u][0], 0.0), scores[u][1])  # as the cache stores it
            new.append((ckeys[i][0], ckeys[i][1], *results[i]))
        if self.cache is not None and new:
            self.cache.put(new)

    def _token_stats_todo(self, texts, keys, full_vocab: bool) -> list:
        # a text as an empty-context request: the start token, then the text's tokens without
        # special tokens (csbench.lm.plan.empty_context_pair), as loglikelihood_rolling
        requests = [("", t) for t in texts]
        enc = self.encoder.encode_many(requests)
        check_window(requests, keys, enc, 0, self.max_length)
        gc_was = gc.isenabled()
        gc.disable()
        try:
            return self.engine.score(enc, per_token=True)
        finally:
            if gc_was:
                gc.enable()

    def sample(self, prompts, num_samples: int, **kw) -> list[list[str]]:
        """Sampled completions from this scorer's model, as loaded for scoring (one load path for
        scores and samples): the prompts (texts or :class:`~csbench.lm.prompt.Prompt`) rendered
        in the scorer's prompt format, then :func:`csbench.lm.generate.sample_completions` with
        ``kw`` as given (``window``: the scorer's, unless given)."""
        from .generate import sample_completions

        kw.setdefault("window", self.max_length)
        return sample_completions(self.model, self.tokenizer,
                                  [self.formatter.text(p) for p in prompts], num_samples, **kw)

    def generate(self, prompts, max_new_tokens: int = 16, num_samples: int = 1,
                 temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0, seed: int = 0,
                 stop=("\n",), names=None, cut: list | None = None) -> list[list[str]]:
        """Sample continuations with this scorer's model (:meth:`sample`); each text is cut at
        the first stop string (sampling stops there too). A prompt whose tokens plus
        ``max_new_tokens`` exceed the window is refused (``names``: one name per prompt for the
        message). ``cut`` (a list) receives per prompt one bool per sample: whether
        ``max_new_tokens`` ended it."""
        texts = self.sample(prompts, num_samples, max_new_tokens=max_new_tokens,
                            temperature=temperature, top_p=top_p, top_k=top_k, seed=seed,
                            stop=list(stop) if stop else None, names=names, cut=cut)
        return [cut_at_stop(samples, stop) for samples in texts]
