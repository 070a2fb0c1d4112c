"""The local backend: :class:`LMScorer` runs the model with PyTorch (see the package docstring
for the API). Planning (rows, prefix groups, order) is :mod:`csbench.lm.plan`, the cache
:mod:`csbench.lm.cache`, the shared front (cache lookup, stats) :class:`csbench.lm.base.Scorer`;
this module executes: tokenising, batching with out-of-memory backoff, tree attention and the
KV-cache path, the last layer at scored positions, log-softmax at the continuation positions.

Window (as lm-evaluation-harness 0.4, ``HFLM._loglikelihood_tokens``): a request feeds the last
``max_length + 1`` tokens of context + continuation (less the last one), so a too-long context is
left-truncated; such requests are counted (``stats["truncated"]``) and one warning per call says
how many. A continuation longer than ``max_length`` tokens cannot be scored (the harness asserts
it never happens): a :class:`~csbench.lm.base.RequestError` naming the request and the lengths,
before anything is scored."""
from __future__ import annotations

import gc
import logging
from pathlib import Path

from ..config import default
from .base import RequestError, Scorer, cut_at_stop, describe_request
from .cache import ScoreCache, model_fingerprint, request_fingerprint, score_problem  # noqa: F401
from .plan import (GROUP_ORDER, Row, build_rows, encode_pair, group_prefixes, lcp,  # noqa: F401
                   model_window, truncated_tokens)

log = logging.getLogger(__name__)
LM = default("lm")  # the schema's defaults of the lm settings, for callers without a config

# Model families whose attention honours a custom 4-D mask and explicit position_ids (absolute
# learned or rotary positions), so a token trie can be scored in one pass (tree attention).
TREE_MODEL_TYPES = frozenset({
    "gpt2", "gpt_neox", "gptj", "llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3",
    "qwen3_moe", "gemma", "gemma2", "phi", "phi3", "olmo", "olmo2", "stablelm", "starcoder2",
    "granite", "smollm3"})

# CPU, automatic batch size: a batch holds at most 32 rows and about 32 * CPU_ROW_TOKENS tokens.
# Measured on the 20Q few-shot prompts (~200 tokens; SmolLM2-135M and Gemma-3-270m, 1 and 2
# threads): 8-16 rows per batch ran 1.15-1.2x faster than 32 (bench/lm_batch_tokens.py).
CPU_ROW_TOKENS = 100

# Config attributes of models whose logits are not simply lm_head(final hidden state).
_SPECIAL_LOGIT_ATTRS = ("final_logit_softcapping", "logit_scale", "logits_scaling",
                        "output_multiplier_scale")


def _is_oom(exc: BaseException) -> bool:
    import torch

    oom_types = tuple(t for t in (getattr(torch, "OutOfMemoryError", None),
                                  getattr(torch.cuda, "OutOfMemoryError", None)) if t)
    return isinstance(exc, oom_types) or "out of memory" in str(exc).lower()


class LMScorer(Scorer):
    """Summed continuation log-probabilities from a local causal LM (see :mod:`csbench.lm`)."""

    backend = "local"

    def __init__(self, model_dir, device: str = LM["device"], dtype: str = LM["dtype"],
                 batch_size: int | str = LM["batch_size"],
                 max_batch_size: int = LM["max_batch_size"],
                 cache_dir: str | Path | None = None, add_bos_token: bool | None = None,
                 max_length: int | None = None, share_prefix: bool = True,
                 min_shared_prefix: int = 4, min_common_prefix: int = 8,
                 commit_every: int = 1024, refresh_cache: bool = LM["refresh_cache"]):
        import torch

        from ..models import load_causal_lm, pick_dtype

        self.model, self.tokenizer = load_causal_lm(model_dir, device, dtype)
        self.device = next(self.model.parameters()).device
        self.dtype = next(self.model.parameters()).dtype
        if dtype == "auto":
            dtype = str(pick_dtype("auto", self.device.type)).replace("torch.", "")
        if batch_size != "auto":
            batch_size = int(batch_size)
            if batch_size < 1:
                raise ValueError("batch_size must be >= 1 or 'auto'")
        self.batch_size = batch_size
        self.max_batch_size = int(max_batch_size)
        self.add_bos_token = add_bos_token
        self.share_prefix = share_prefix
        self.min_shared_prefix = max(1, int(min_shared_prefix))
        # A batch whose rows all start with the same >= min_common_prefix tokens (an instruction
        # header) runs that prefix once, through the KV-cache path.
        self.min_common_prefix = max(1, int(min_common_prefix))
        # With a cache, requests are scored and committed in chunks of this many, so a job killed
        # mid-way keeps what it finished (chunks are cut from the request list, before the cache
        # lookup, so a resumed run forms the same batches).
        self.commit_every = max(1, int(commit_every))
        cfg = self.model.config
        self.max_length = int(max_length or model_window(cfg))
        tok = self.tokenizer
        self.prefix_token_id = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
        self.pad_token_id = tok.pad_token_id if tok.pad_token_id is not None else 0
        self.model_key = model_fingerprint(model_dir) + ":" + str(self.dtype)
        self.cache = ScoreCache(cache_dir, self.model_key, refresh_cache) if cache_dir else None
        _fuse_activations(self.model)
        self._head = self.model.get_output_embeddings()
        self._base = getattr(self.model, "base_model", None)
        self._partial_logits = (
            self._head is not None and self._base is not None and self._base is not self.model
            and not any(getattr(cfg, a, None) not in (None, 1, 1.0) for a in _SPECIAL_LOGIT_ATTRS))
        self._auto_bs = None  # batch size found by the OOM backoff
        self._attn_impl = getattr(cfg, "_attn_implementation", None) or "eager"
        # Tree attention needs a model that honours a custom 4-D mask and position_ids (no
        # ALiBi / mask-derived positions): known families, confirmed on first use.
        self._tree_attention = (self._attn_impl in ("sdpa", "eager")
                                and getattr(cfg, "model_type", "") in TREE_MODEL_TYPES)
        self._tree_checked = False
        # Last decoder layer only at the scored positions (csbench.lm.lastlayer); confirmed
        # against a full pass on first use.
        self._scored_only = self._partial_logits and self._attn_impl in ("sdpa", "eager")
        self._scored_checked = False
        self._tries: dict = {}
        self._backend_ok: bool | None = None  # backend tokenizer agrees with the wrapper
        self.stats = dict(requests=0, unique=0, cached=0, cache_rejected=0, truncated=0,
                          rows=0, shared_groups=0, batches=0, forward_tokens=0, padded_tokens=0,
                          oom_backoffs=0, seconds=0.0)

    # ------------------------------------------------------------------ public API
    def encode(self, context: str, continuation: str) -> tuple[list[int], list[int]]:
        return encode_pair(self.tokenizer, context, continuation, self.prefix_token_id,
                           self.add_bos_token)

    def encode_many(self, requests) -> list[tuple[list[int], list[int]]]:
        """:meth:`encode` for many requests with batched tokenizer calls (same token ids)."""
        kw = {} if self.add_bos_token is None else {"add_special_tokens": self.add_bos_token}
        pairs, texts = [], []
        for context, continuation in requests:
            if context == "":
                pairs.append(None)
                texts.append(continuation)
                continue
            n = len(context) - len(context.rstrip())
            if n:
                context, continuation = context[:-n], context[-n:] + continuation
            pairs.append(len(texts))
            texts += [context, context + continuation]
        uniq = list(dict.fromkeys(texts))  # tokenise each distinct text once
        got = dict(zip(uniq, self._tokenize(uniq, kw)))
        ids = [got[t] for t in texts]
        out, k = [], 0
        for p in pairs:
            if p is None:
                out.append(([self.prefix_token_id], list(ids[k])))
                k += 1
            else:
                ctx, whole = list(ids[k]), list(ids[k + 1])
                out.append((ctx, whole[len(ctx):]))
                k += 2
        return out

    def _tokenize(self, texts: list[str], kw: dict) -> list[list[int]]:
        """Token ids of texts as ``tokenizer(texts)``; fast tokenizers go straight to their
        Rust backend (no offsets, no Python wrapping), checked against the wrapper on a sample."""
        if not texts:
            return []
        backend = getattr(self.tokenizer, "_tokenizer", None)
        fast = getattr(backend, "encode_batch_fast", None)
        if self._backend_ok is None and fast is not None:
            sample = texts[:16]
            try:
                ok = ([e.ids for e in fast(sample, add_special_tokens=kw.get("add_special_tokens",
                                                                             True))]
                      == [list(x) for x in self.tokenizer(sample, **kw)["input_ids"]])
            except Exception:  # noqa: BLE001 - any surprise: use the wrapper
                ok = False
            self._backend_ok = ok
        if fast is not None and self._backend_ok:
            return [e.ids for e in fast(texts, add_special_tokens=kw.get("add_special_tokens",
                                                                         True))]
        return [list(x) for x in self.tokenizer(texts, **kw)["input_ids"]]

    def _loglikelihood(self, requests, keys) -> list[tuple[float, int]]:
        # The many small token lists would trigger cyclic-GC passes over the whole model's
        # objects; nothing here makes cycles, so pause the collector while scoring.
        gc_was = gc.isenabled()
        gc.disable()
        truncated = self.stats["truncated"]
        self._truncation_example = None
        try:
            n = max(1, self.commit_every if self.cache is not None else len(requests))
            out: list[tuple[float, int]] = []
            for i in range(0, len(requests), n):
                part, pkeys = requests[i:i + n], None if keys is None else keys[i:i + n]
                enc = self.encode_many(part)  # every request, cached or not: checked below
                self._check_window(part, pkeys, enc, i)
                out += self._lookup_and_score(part, pkeys, enc, i)
            return out
        finally:
            if gc_was:
                gc.enable()
            if self.stats["truncated"] > truncated:
                log.warning("%d of %d requests had their context left-truncated to fit the "
                            "model's window of %d tokens (lm-evaluation-harness truncates the "
                            "same way), e.g. %s", self.stats["truncated"] - truncated,
                            len(requests), self.max_length, self._truncation_example)

    def _check_window(self, requests, keys, enc, offset: int) -> None:
        """Refuse requests whose continuation has no tokens or does not fit in the window;
        count those whose context is left-truncated (``stats["truncated"]``)."""
        L = self.max_length

        def what(j):
            return describe_request(offset + j, None if keys is None else keys[j], *requests[j])

        over = []
        for j, (ctx, cont) in enumerate(enc):
            if not cont:
                raise RequestError(f"{what(j)}: the continuation has no tokens")
            if len(cont) > L:
                over.append(j)
                continue
            cut = truncated_tokens(len(ctx), len(cont), L)
            if cut:
                self.stats["truncated"] += 1
                if self._truncation_example is None:
                    self._truncation_example = (
                        f"{what(j)}: {len(ctx)} context + {len(cont)} continuation tokens, "
                        f"the first {cut} context tokens dropped")
        if over:
            j = over[0]
            more = f" ({len(over) - 1} more such requests among these)" if len(over) > 1 else ""
            raise RequestError(
                f"{what(j)}: the continuation is {len(enc[j][1])} tokens, longer than the "
                f"model's window of {L} tokens, so it cannot be scored (lm-evaluation-harness "
                f"refuses it too; context: {len(enc[j][0])} tokens){more}; shorten the item or "
                "use a model with a longer window")

    def describe(self) -> str:
        return f"local on {self.device} ({self.dtype})"

    def compute(self) -> dict:
        return {"compute_device": str(self.device),
                "compute_dtype": str(self.dtype).replace("torch.", "")}

    def _score_todo(self, requests, todo, results, ckeys, prep, offset) -> None:
        # Deduplicate identical token sequences (``prep``: every request's token ids).
        encoded = [prep[i] for i in todo] if prep is not None else \
            self.encode_many([requests[i] for i in todo])
        uniq: dict[tuple, int] = {}
        enc: list[tuple[list[int], list[int]]] = []
        where: list[int] = []
        for i, (ctx, cont) in zip(todo, encoded):
            k = (tuple(ctx), tuple(cont))
            if k not in uniq:
                uniq[k] = len(enc)
                enc.append((ctx, cont))
            where.append(uniq[k])
        self.stats["unique"] += len(enc)
        scores = self._score_encoded(enc)
        new = []
        for i, u in zip(todo, where):
            why = score_problem(*scores[u])
            if why is not None:
                raise RequestError(
                    f"{describe_request(offset + i, ckeys[i][0], *requests[i])}: the model gave "
                    f"log-prob {scores[u][0]!r}: {why} (an overflow in {self.dtype}? try "
                    "lm.dtype: float32); nothing of it was cached")
            results[i] = (min(scores[u][0], 0.0), scores[u][1])  # as the cache stores it
            new.append((ckeys[i][0], ckeys[i][1], *results[i]))
        if self.cache is not None and new:
            self.cache.put(new)

    def generate(self, prompts, max_new_tokens: int = 16, num_samples: int = 1,
                 temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0, seed: int = 0,
                 stop=("\n",), names=None) -> list[list[str]]:
        """Sample continuations with this scorer's model (the sampler of :mod:`csbench.lm.generate`);
        each text is cut at the first stop string (sampling stops there too). A prompt whose
        tokens plus ``max_new_tokens`` exceed the window is refused (``names``: one name per
        prompt for the message)."""
        from .generate import sample_completions

        texts = sample_completions(self.model, self.tokenizer, prompts, num_samples,
                                   max_new_tokens=max_new_tokens, temperature=temperature,
                                   top_p=top_p, top_k=top_k, seed=seed,
                                   stop=list(stop) if stop else None, names=names,
                                   window=self.max_length)
        return [cut_at_stop(samples, stop) for samples in texts]

    # ------------------------------------------------------------------ internals
    def _score_encoded(self, enc) -> list[tuple[float, int]]:
        import torch

        if not enc:
            return []
        with torch.inference_mode():
            return self._score_rows(enc)

    def _score_rows(self, enc) -> list[tuple[float, int]]:
        rows = build_rows(enc, self.max_length)
        self.stats["rows"] += len(rows)
        if self.share_prefix and self._partial_logits:
            groups, singles = group_prefixes(rows, self.min_shared_prefix,
                                              max_group=self._start_batch_size())
        else:
            groups, singles = [], rows
        out: list[tuple[float, int] | None] = [None] * len(enc)
        # Longest first (so an OOM shows up on the first batch); ties broken by content.
        singles.sort(key=lambda r: (-len(r.tokens), r.tokens))
        self._batched(singles, lambda b: self._run_batch(b, out), weight=self._row_weight,
                      count=lambda r: 1)
        # Tree attention: a group is one sequence (its trie), batched by sequences, largest
        # tries first (least padding). KV-cache path: groups longest first; a batch of groups
        # uses the shortest of their prefix lengths (scored positions stay in the suffix).
        tree = self._tree_attention
        if tree:
            groups.sort(key=lambda g: (-len(self._trie(g[1])[0]), g[1][0].tokens))
        else:
            groups.sort(key=lambda g: GROUP_ORDER(g))
        unshared = lambda b: self._batched(  # noqa: E731
            [r for _, g in b for r in g], lambda x: self._run_batch(x, out),
            weight=self._row_weight, count=lambda r: 1)
        try:
            self._batched(groups, lambda b: self._run_shared(min(p for p, _ in b),
                                                             [g for _, g in b], out),
                          weight=(lambda g: 1) if tree else (lambda g: len(g[1])),
                          fallback=unshared)
        except (AttributeError, NotImplementedError, TypeError) as exc:
            # A model whose cache cannot be reused this way: score those rows unshared.
            log.warning("prefix sharing unsupported by this model (%s); disabled", exc)
            self.share_prefix = False
            unshared([g for g in groups if any(out[u] is None for r in g[1]
                                               for u, _, _ in r.members)])
        finally:
            self._tries.clear()
        return out  # type: ignore[return-value]

    def _batched(self, units, fn, weight, fallback=None, count=None) -> None:
        """Run ``fn`` on consecutive chunks of ``units`` of total weight <= the batch size,
        halving the batch size on out-of-memory errors when it is automatic (a single unit
        that still does not fit goes to ``fallback``, e.g. a shared group run unshared); progress
        is counted by ``count`` (default: ``weight``)."""
        from ..logs import progress

        bs = self._start_batch_size()
        count = count or weight
        prog = progress(sum(count(u) for u in units), "LM scoring", unit="rows")
        i = 0
        while i < len(units):
            j, w = i, 0
            while j < len(units) and (j == i or w + weight(units[j]) <= bs):
                w += weight(units[j])
                j += 1
            try:
                fn(units[i:j])
            except Exception as exc:  # noqa: BLE001 - only OOM is handled
                if self.batch_size != "auto" or not _is_oom(exc):
                    raise
                self._free_memory()
                if j - i == 1 and (bs == 1 or weight(units[i]) > 1):
                    if fallback is None:
                        raise
                    self.stats["oom_backoffs"] += 1
                    fallback(units[i:j])
                    prog.update(count(units[i]))
                    i = j
                    continue
                bs = max(1, bs // 2)
                self._auto_bs = bs
                self.stats["oom_backoffs"] += 1
                log.warning("out of memory at batch size %d; retrying with %d", bs * 2, bs)
                continue
            prog.update(sum(count(u) for u in units[i:j]))
            i = j
        prog.close()

    def _row_weight(self, row: Row) -> float:
        """A row's share of a batch: 1, except on CPU with the automatic batch size, where a row
        counts as one per CPU_ROW_TOKENS tokens, so a batch of long rows holds fewer of them
        (the 32-row CPU batch is then at most ~32 * CPU_ROW_TOKENS tokens)."""
        if self.batch_size != "auto" or self.device.type != "cpu":
            return 1
        return max(1.0, len(row.tokens) / CPU_ROW_TOKENS)

    def _start_batch_size(self) -> int:
        if self.batch_size != "auto":
            return int(self.batch_size)
        if self._auto_bs is not None:
            return self._auto_bs
        if self.device.type == "cpu":
            return min(self.max_batch_size, 32)
        return self.max_batch_size

    def _free_memory(self):
        import gc

        import torch

        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()

    def _base_call(self, input_ids, keep=None, **kw):
        """One forward pass of the model body (every forward of the engine goes through here).

        ``keep``: one list per row of the positions whose final hidden states are needed (rows
        may differ in length); the last layer then runs only there (other positions of the
        result are zeros).
        """
        if keep is None or not self._scored_only:
            return self._base(input_ids=input_ids, **kw)
        import torch

        from .lastlayer import scored_only

        penalty = 64 if self.device.type == "cpu" else 1024
        try:
            with scored_only(self._base, keep, self._attn_impl, self.dtype, self.device,
                             penalty):
                out = self._base(input_ids=input_ids, **kw)
        except Exception as exc:  # noqa: BLE001 - any failure of the swap: full passes
            if _is_oom(exc):
                raise
            log.warning("running the last decoder layer at the scored positions only failed "
                        "for this model (%s: %s); full passes from now on", type(exc).__name__,
                        exc)
            self._scored_only = False
            return self._base(input_ids=input_ids, **kw)
        if not self._scored_checked:
            self._scored_checked = True
            full = self._base(input_ids=input_ids, **kw)
            bi = torch.tensor([b for b, p in enumerate(keep) for _ in p], device=self.device)
            ti = torch.tensor([t for p in keep for t in p], device=self.device)
            a = out.last_hidden_state[bi, ti].float()
            b = full.last_hidden_state[bi, ti].float()
            tol = 1e-4 if self.dtype == torch.float32 else 5e-2
            if not torch.allclose(a, b, atol=tol, rtol=tol):
                log.warning("last-layer-at-scored-positions disagrees with a full pass for this "
                            "model; disabled")
                self._scored_only = False
                return full
        return out

    def _forward_hidden(self, input_ids, keep=None):
        """Final hidden states [B, T, H] (or logits when the model needs its own head); with
        ``keep`` (see :meth:`_base_call`) valid only at those positions."""
        if self._partial_logits:
            return self._base_call(input_ids, keep=keep, use_cache=False).last_hidden_state
        return self.model(input_ids=input_ids, use_cache=False).logits

    def _common_prefix(self, batch: list[Row]) -> int:
        """Tokens that every row of ``batch`` starts with, before any scored position, when
        running them once pays (>= ``min_common_prefix`` and >= 1/16 of the mean row); else 0."""
        if not (self.share_prefix and self._partial_logits) or len(batch) < 2:
            return 0
        n = min(start for r in batch for _, start, _ in r.members)
        first = batch[0].tokens
        for r in batch[1:]:
            n = min(n, lcp(first, r.tokens))
            if n < self.min_common_prefix:
                return 0
        mean = sum(len(r.tokens) for r in batch) / len(batch)
        return n if 16 * n >= mean else 0

    def _run_batch(self, batch: list[Row], out) -> None:
        import torch

        plen = self._common_prefix(batch)
        if plen:
            try:
                return self._run_shared_kv(plen, [batch], out)
            except (AttributeError, NotImplementedError, TypeError) as exc:
                log.warning("common-prefix KV cache unsupported by this model (%s); disabled", exc)
                self.share_prefix = False

        width = max(len(r.tokens) for r in batch)
        ids = torch.full((len(batch), width), self.pad_token_id, dtype=torch.long)
        for b, r in enumerate(batch):
            ids[b, :len(r.tokens)] = torch.tensor(r.tokens, dtype=torch.long)
        keep = [sorted({p for _, start, tg in r.members for p in range(start, start + len(tg))})
                for r in batch]
        hidden = self._forward_hidden(ids.to(self.device), keep=keep)
        self._accumulate(hidden, batch, 0, out)
        self.stats["batches"] += 1
        self.stats["forward_tokens"] += sum(len(r.tokens) for r in batch)
        self.stats["padded_tokens"] += width * len(batch)

    def _run_shared(self, plen: int, groups: list[list[Row]], out) -> None:
        """Groups of rows sharing token prefixes, in ONE forward pass (tree attention): each
        group becomes one sequence holding the trie of its rows (every shared token once), with
        a 4-D mask letting each token attend to its ancestors and itself and position ids =
        depth; models without 4-D mask support use the KV-cache path."""
        if self._tree_attention and not self._tree_checked:
            self._tree_checked = True
            self._tree_attention = self._tree_agrees(groups[0])
        if not self._tree_attention:
            return self._run_shared_kv(plen, groups, out)
        hidden, members, posmap, tries = self._tree_forward(groups, scored=True)
        self._accumulate(hidden, members, 0, out, posmap=posmap)
        self.stats["batches"] += 1
        self.stats["shared_groups"] += len(groups)
        self.stats["forward_tokens"] += sum(len(t[0]) for t in tries)
        self.stats["padded_tokens"] += hidden.shape[0] * hidden.shape[1]

    def _tree_forward(self, groups: list[list[Row]], scored: bool = False):
        """Final hidden states of the groups' tries, one sequence per group (with ``scored``,
        valid only at the members' scored positions)."""
        import torch

        tries = [self._trie(g) for g in groups]
        members = [r for g in groups for r in sorted(g, key=lambda r: r.tokens)]
        B, T = len(tries), max(len(t[0]) for t in tries)
        pad_ids, pad_pos, pad_end, posmap = [], [], [], []
        for b, (toks, depth, ends, gpaths) in enumerate(tries):
            k = T - len(toks)
            pad_ids.append(toks + [self.pad_token_id] * k)
            pad_pos.append(depth + [0] * k)
            pad_end.append(ends + list(range(len(toks) + 1, T + 1)))  # padding: itself only
            posmap.extend((b, path) for path in gpaths)
        ids = torch.tensor(pad_ids, dtype=torch.long)
        pos = torch.tensor(pad_pos, dtype=torch.long)
        end = torch.tensor(pad_end, dtype=torch.long)
        # Nodes are in depth-first pre-order: key j is an ancestor-or-self of query i
        # iff j <= i < end[j] (end = one past j's subtree).
        qi = torch.arange(T)[:, None]
        allow = (torch.arange(T)[None, :] <= qi)[None] & (qi[None] < end[:, None, :])
        if self._attn_impl == "sdpa":
            mask = allow[:, None]
        else:  # additive mask (eager attention)
            mask = torch.zeros((B, 1, T, T), dtype=self.dtype)
            mask.masked_fill_(~allow[:, None], torch.finfo(self.dtype).min)
        keep = None
        if scored:
            need: list[set] = [set() for _ in tries]
            for r, (b, path) in zip(members, posmap):
                for _, start, tg in r.members:
                    need[b].update(path[start:start + len(tg)])
            keep = [sorted(s) for s in need]
        hidden = self._base_call(ids.to(self.device), keep=keep,
                                 attention_mask=mask.to(self.device),
                                 position_ids=pos.to(self.device),
                                 use_cache=False).last_hidden_state
        return hidden, members, posmap, tries

    def _tree_agrees(self, group: list[Row]) -> bool:
        """One-off check (hidden states only, two rows) that tree attention reproduces plain
        rows for this model."""
        import torch

        rows = sorted(group, key=lambda r: r.tokens)[:2]
        try:
            tree, _, posmap, _ = self._tree_forward([rows])
            width = max(len(r.tokens) for r in rows)
            ids = torch.full((len(rows), width), self.pad_token_id, dtype=torch.long)
            for i, r in enumerate(rows):
                ids[i, :len(r.tokens)] = torch.tensor(r.tokens, dtype=torch.long)
            plain = self._forward_hidden(ids.to(self.device))
        except Exception:
            self._tree_checked = False  # e.g. out of memory: check again next time
            raise
        tol = 1e-3 if self.dtype == torch.float32 else 5e-2
        ok = all(torch.allclose(tree[0, path].float(), plain[i, :len(path)].float(),
                                atol=tol, rtol=tol)
                 for i, (_, path) in enumerate(posmap))
        if not ok:
            log.warning("tree attention disagrees with plain rows for this model; "
                        "using the KV-cache path for shared prefixes")
        return ok

    def _trie(self, rows: list[Row]):
        """Token trie of rows (memoised per call): node tokens, depths, subtree ends and each
        row's node path, nodes numbered in depth-first pre-order (rows inserted sorted)."""
        got = self._tries.get(id(rows))
        if got is not None and got[0] is rows:
            return got[1]
        toks: list[int] = []
        depth: list[int] = []
        parent: list[int] = []
        paths: list[list[int]] = []
        prev: list[int] = []
        for r in sorted(rows, key=lambda r: r.tokens):
            # Sorted rows: the tokens after the common prefix with the previous row are new nodes.
            k = lcp(prev, r.tokens) if paths else 0
            path = paths[-1][:k] if paths else []
            for t in r.tokens[k:]:
                parent.append(path[-1] if path else -1)
                depth.append(len(path))
                path.append(len(toks))
                toks.append(t)
            paths.append(path)
            prev = r.tokens
        ends = list(range(1, len(toks) + 1))
        for i in range(len(toks) - 1, -1, -1):
            p = parent[i]
            if p >= 0 and ends[i] > ends[p]:
                ends[p] = ends[i]
        res = (toks, depth, ends, paths)
        self._tries[id(rows)] = (rows, res)
        return res

    def _run_shared_kv(self, plen: int, groups: list[list[Row]], out) -> None:
        """Groups of rows sharing their first ``plen`` tokens: the prefixes run once (KV cache),
        then every member's suffix runs on its group's cached prefix."""
        import torch

        prefix = torch.tensor([g[0].tokens[:plen] for g in groups], dtype=torch.long)
        cache = self._base_call(prefix.to(self.device), use_cache=True).past_key_values
        members = [r for g in groups for r in g]
        owner = [gi for gi, g in enumerate(groups) for _ in g]
        cache.batch_select_indices(torch.tensor(owner, device=self.device))
        width = max(len(r.tokens) - plen for r in members)
        ids = torch.full((len(members), width), self.pad_token_id, dtype=torch.long)
        for b, r in enumerate(members):
            ids[b, :len(r.tokens) - plen] = torch.tensor(r.tokens[plen:], dtype=torch.long)
        hidden = self._base_call(ids.to(self.device), past_key_values=cache,
                                 use_cache=True).last_hidden_state
        del cache
        self._accumulate(hidden, members, plen, out)
        self.stats["batches"] += 1
        self.stats["shared_groups"] += len(groups)
        self.stats["forward_tokens"] += plen * len(groups) + sum(len(r.tokens) - plen
                                                                 for r in members)
        self.stats["padded_tokens"] += plen * len(groups) + width * len(members)

    def _accumulate(self, hidden, batch: list[Row], offset: int, out, posmap=None) -> None:
        """Log-probs of the members' targets from hidden states (row b, position - offset;
        with ``posmap``, row i's position p is at hidden[posmap[i][0], posmap[i][1][p]])."""
        import torch

        bi, ti, tgt, owner = [], [], [], []
        for b, r in enumerate(batch):
            hb, hp = posmap[b] if posmap is not None else (b, None)
            for u, start, targets in r.members:
                n = len(targets)
                bi.extend([hb] * n)
                if hp is None:
                    ti.extend(range(start - offset, start - offset + n))
                else:
                    ti.extend(hp[start:start + n])
                tgt.extend(targets)
                owner.extend([(u, n)] * n)
        picked = hidden[torch.tensor(bi, device=self.device), torch.tensor(ti, device=self.device)]
        logits = self._head(picked) if self._partial_logits else picked
        logp = torch.log_softmax(logits.float(), dim=-1)
        tok_lp = logp.gather(1, torch.tensor(tgt, device=self.device)[:, None])[:, 0].cpu().double()
        sums: dict[int, float] = {}
        counts: dict[int, int] = {}
        for (u, n), v in zip(owner, tok_lp.tolist()):
            sums[u] = sums.get(u, 0.0) + v
            counts[u] = n
        for u, v in sums.items():
            out[u] = (float(v), counts[u])


def _fuse_activations(model) -> None:
    """Swap transformers' Python tanh-GELU (``gelu_new``: five elementwise ops) for the fused
    kernel computing the same formula (``F.gelu(approximate="tanh")``; equal up to fp rounding)."""
    try:
        from transformers.activations import GELUTanh, NewGELUActivation
    except ImportError:  # pragma: no cover - other transformers versions
        return
    for mod in list(model.modules()):
        for name, child in list(mod.named_children()):
            if type(child) is NewGELUActivation:
                setattr(mod, name, GELUTanh())
