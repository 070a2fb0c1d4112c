"""The local engine's forward pass: every forward of the model body goes through
:meth:`Forward.body`; the last decoder layer runs only at the scored positions
(:mod:`csbench.lm.lastlayer`, checked once per model against a full pass); the final hidden
states go through the output layer only at the continuation positions, never a
full-vocabulary log-softmax over every position."""
from __future__ import annotations

import logging

from .batching import is_oom

log = logging.getLogger(__name__)

# The fewest positions per output-layer call of the per-token statistics (head_chunks): the
# fp32 GEMM [rows x hidden] @ [hidden x vocab] of Gemma-3's 262k vocabulary ran at 38 GFLOPS
# with 64 rows, 50 with 256 (bench/lm_head_rows.py, one thread, AVX2 EPYC).
HEAD_MIN_ROWS = 256

# Config attributes of models whose logits are not simply lm_head(final hidden state).
_SPECIAL_LOGIT_ATTRS = ("final_logit_softcapping", "logit_scale", "logits_scaling",
                        "output_multiplier_scale")


def padded(seqs, pad_token_id: int):
    """Token lists as one right-padded [len(seqs), longest] tensor of ids."""
    import torch

    ids = torch.full((len(seqs), max(len(s) for s in seqs)), pad_token_id, dtype=torch.long)
    for b, s in enumerate(seqs):
        ids[b, :len(s)] = torch.tensor(s, dtype=torch.long)
    return ids


class Forward:
    """Forward passes of a loaded causal LM (``precision``: its
    :class:`~csbench.lm.precision.Precision`; ``stats``: the engine's statistics)."""

    def __init__(self, model, precision, pad_token_id: int, stats: dict):
        self.model, self.precision, self.pad_token_id, self.stats = (model, precision,
                                                                     pad_token_id, stats)
        self.device = precision.device
        cfg = model.config
        _fuse_activations(model)
        self.head = model.get_output_embeddings()
        self.base = getattr(model, "base_model", None)
        # Hidden states of the model body, projected by the head only where needed (else the
        # model's own logits at every position).
        self.partial_logits = (
            self.head is not None and self.base is not None and self.base is not model
            and not any(getattr(cfg, a, None) not in (None, 1, 1.0) for a in _SPECIAL_LOGIT_ATTRS))
        self.project = precision.vocabulary_head(self.head) if self.partial_logits else None
        self.attn_impl = getattr(cfg, "_attn_implementation", None) or "eager"
        # Last decoder layer only at the scored positions; confirmed on first use.
        self.scored_only = self.partial_logits and self.attn_impl in ("sdpa", "eager")
        self.scored_checked = False
        # per_token: accumulate gives each request its per-token statistics
        # (csbench.lm.tokenstats.TokenStats, full-vocabulary mean and deviation in fp32)
        # instead of its summed log-prob (Engine.score sets it for one call)
        self.per_token = False

    def body(self, input_ids, keep=None, **kw):
        """One forward pass of the model body.

        ``keep``: one list per row of the positions whose final hidden states are needed (rows
        may differ in length); the last layer then runs only there (other positions of the
        result are zeros).
        """
        if keep is None or not self.scored_only:
            return self.base(input_ids=input_ids, **kw)
        import torch

        from .lastlayer import scored_only

        penalty = 64 if self.device.type == "cpu" else 1024
        try:
            with scored_only(self.base, keep, self.attn_impl, self.precision.dtype, self.device,
                             penalty):
                out = self.base(input_ids=input_ids, **kw)
        except Exception as exc:  # noqa: BLE001 - any failure of the swap: full passes
            if is_oom(exc):
                raise
            log.warning("running the last decoder layer at the scored positions only failed "
                        "for this model (%s: %s); full passes from now on", type(exc).__name__,
                        exc)
            self.scored_only = False
            return self.base(input_ids=input_ids, **kw)
        if not self.scored_checked:
            self.scored_checked = True
            full = self.base(input_ids=input_ids, **kw)
            bi = torch.tensor([b for b, p in enumerate(keep) for _ in p], device=self.device)
            ti = torch.tensor([t for p in keep for t in p], device=self.device)
            if not self.precision.agrees(out.last_hidden_state[bi, ti],
                                         full.last_hidden_state[bi, ti], 1e-4):
                log.warning("last-layer-at-scored-positions disagrees with a full pass for this "
                            "model; disabled")
                self.scored_only = False
                return full
        return out

    def hidden(self, input_ids, keep=None):
        """Final hidden states [B, T, H] (or logits when the model needs its own head); with
        ``keep`` (see :meth:`body`) valid only at those positions."""
        if self.partial_logits:
            return self.body(input_ids, keep=keep, use_cache=False).last_hidden_state
        return self.model(input_ids=input_ids, use_cache=False).logits

    def run_rows(self, batch, out) -> None:
        """Plain rows (:class:`~csbench.lm.plan.Row`), right-padded, in one pass; their
        members' scores into ``out``."""
        ids = padded([r.tokens for r in batch], self.pad_token_id)
        keep = [sorted({p for _, start, tg in r.members for p in range(start, start + len(tg))})
                for r in batch]
        hidden = self.hidden(ids.to(self.device), keep=keep)
        self.accumulate(hidden, batch, 0, out)
        self.stats["batches"] += 1
        self.stats["forward_tokens"] += sum(len(r.tokens) for r in batch)
        self.stats["padded_tokens"] += ids.shape[1] * len(batch)

    def accumulate(self, hidden, batch, offset: int, out, posmap=None) -> None:
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
        if self.per_token:
            return self._per_token(hidden, bi, ti, tgt, owner, out)
        picked = hidden[torch.tensor(bi, device=self.device), torch.tensor(ti, device=self.device)]
        logits = self.project(picked) if self.partial_logits else picked
        logp = self.precision.log_softmax(logits)
        tok_lp = logp.gather(1, torch.tensor(tgt, device=self.device)[:, None])[:, 0].cpu().double()
        sums: dict[int, float] = {}
        counts: dict[int, int] = {}
        for (u, n), v in zip(owner, tok_lp.tolist()):
            sums[u] = sums.get(u, 0.0) + v
            counts[u] = n
        for u, v in sums.items():
            out[u] = (float(v), counts[u])

    def _per_token(self, hidden, bi, ti, tgt, owner, out) -> None:
        """Each request's :class:`~csbench.lm.tokenstats.TokenStats` from the fp32 log-softmax
        at its positions (``hidden[bi[j], ti[j]]``, in order): the target's log-prob and, over
        the whole vocabulary, ``mu = sum p log p`` and ``sigma = sqrt(sum p (log p - mu)^2)``
        (0 log 0 = 0), in fp32. A position several requests share (a trie's shared prefix) runs
        through the output layer once. The output layer runs on chunks of positions
        (:func:`head_chunks`: its weights are read once per chunk); the statistics on slices of
        a chunk small enough to stay in the CPU's cache (~2 MB), in place (:func:`vocab_stats`)."""
        import torch

        from .tokenstats import TokenStats

        width = max(ti) + 1
        key = torch.tensor(bi, dtype=torch.long) * width + torch.tensor(ti, dtype=torch.long)
        uniq, inv = torch.unique(key, sorted=True, return_inverse=True)
        picked = hidden[(uniq // width).to(self.device), (uniq % width).to(self.device)]
        # the requests' targets grouped by their position's index in ``uniq``
        order = torch.argsort(inv, stable=True)
        inv_sorted = inv[order]
        tg = torch.tensor(tgt, dtype=torch.long)
        lps = torch.empty(len(tgt), dtype=torch.float32)
        vocab = self.head.weight.shape[0] if self.partial_logits else picked.shape[-1]
        small = max(1, (1 << 19) // max(1, vocab))
        mus, sigmas = [], []
        for a, b in head_chunks(picked.shape[0], vocab):
            h = picked[a:b]
            logits = self.project(h) if self.partial_logits else h
            end = a + logits.shape[0]
            for s in range(a, end, small):
                e = min(s + small, end)
                logp = self.precision.log_softmax(logits[s - a:e - a])
                lo, hi = torch.searchsorted(inv_sorted, torch.tensor([s, e])).tolist()
                js = order[lo:hi]
                lps[js] = logp[(inv[js] - s).to(self.device), tg[js].to(self.device)].float().cpu()
                mu, sigma = vocab_stats(logp)
                mus.append(mu)
                sigmas.append(sigma)
        mu_all = torch.cat(mus).cpu()[inv]
        sigma_all = torch.cat(sigmas).cpu()[inv]
        per: dict[int, TokenStats] = {}
        for (u, _), lp, m, sd in zip(owner, lps.double().tolist(), mu_all.double().tolist(),
                                     sigma_all.double().tolist()):
            st = per.setdefault(u, TokenStats([], [], []))
            st.lp.append(min(lp, 0.0))
            st.mu.append(min(m, 0.0))
            st.sigma.append(sd)
        for u, st in per.items():
            out[u] = st


def head_chunks(n: int, vocab: int) -> list[tuple[int, int]]:
    """``n`` positions cut into near-equal chunks ``[(start, end)]`` for the output layer: as
    many positions as ~64 MB of fp32 logits hold, but at least :data:`HEAD_MIN_ROWS` (the head's
    weights are read from memory once per chunk: with a large vocabulary and a few dozen rows
    per chunk, reading them costs more than the multiplication), and no small remainder chunk
    (``step`` to ``2 step - 1`` rows each, fewer only when ``n`` is)."""
    step = max(HEAD_MIN_ROWS, (1 << 24) // max(1, vocab))
    k = max(1, n // step)
    return [(n * i // k, n * (i + 1) // k) for i in range(k)]


def vocab_stats(logp):
    """Per row of fp32 log-probabilities ``[n, V]``: ``mu = sum p log p`` and
    ``sigma = sqrt(sum p (log p - mu)^2)`` (the variance without the cancellation of
    ``sum p (log p)^2 - mu^2`` in fp32, which a flat distribution has), 0 log 0 = 0.
    Overwrites ``logp``. Finite log-probs: products and sums in place, no masks (a zero p
    times a finite log p is 0); a row with a ``-inf`` log-prob (a masked token) takes the
    masked formula, with the same values elsewhere."""
    import torch

    p = logp.exp()
    mu = (p * logp).sum(-1)
    if not bool(torch.isfinite(mu).all()):
        # 0 * -inf: mask the impossible tokens (the slow path, only here)
        live = p > 0
        mu = torch.where(live, p * logp, torch.zeros_like(logp)).sum(-1)
        dev = torch.where(live, logp - mu[:, None], torch.zeros_like(logp))
        return mu, (p * dev * dev).sum(-1).sqrt()
    logp.sub_(mu[:, None])
    return mu, p.mul_(logp).mul_(logp).sum(-1).sqrt()


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
