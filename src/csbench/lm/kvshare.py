"""KV reuse for shared prefixes: a prefix runs once, its keys/values are copied to every row
that shares it, and only the rows' suffixes run on that cache. Used for the rows of a batch that
all start with the same tokens (an instruction header before different few-shot examples, as
the 20Q prompts) and for prefix groups on models whose attention takes no 4-D mask (no tree
attention, :mod:`csbench.lm.tree`)."""
from __future__ import annotations

from .forward import padded
from .plan import lcp


class SharedKV:
    """Shared-prefix passes through the KV cache (``forward``: the engine's
    :class:`~csbench.lm.forward.Forward`)."""

    def __init__(self, forward, min_common_prefix: int = 8):
        self.forward = forward
        # A batch whose rows all start with the same >= min_common_prefix tokens runs them once.
        self.min_common_prefix = max(1, int(min_common_prefix))

    def common_prefix(self, batch) -> int:
        """Tokens that every row of ``batch`` starts with, before any scored position, when
        running them once pays (>= ``min_common_prefix`` and >= 1/16 of the mean row); else 0."""
        if len(batch) < 2:
            return 0
        n = min(start for r in batch for _, start, _ in r.members)
        first = batch[0].tokens
        for r in batch[1:]:
            n = min(n, lcp(first, r.tokens))
            if n < self.min_common_prefix:
                return 0
        mean = sum(len(r.tokens) for r in batch) / len(batch)
        return n if 16 * n >= mean else 0

    def run(self, plen: int, groups, out) -> None:
        """Groups of rows sharing their first ``plen`` tokens: the prefixes run once (KV cache),
        then every member's suffix runs on its group's cached prefix."""
        import torch

        f = self.forward
        prefix = torch.tensor([g[0].tokens[:plen] for g in groups], dtype=torch.long)
        pre = f.body(prefix.to(f.device), use_cache=True)
        cache = pre.past_key_values
        members = [r for g in groups for r in g]
        owner = [gi for gi, g in enumerate(groups) for _ in g]
        cache.batch_select_indices(torch.tensor(owner, device=f.device))
        ids = padded([r.tokens[plen:] for r in members], f.pad_token_id)
        hidden = f.body(ids.to(f.device), past_key_values=cache, use_cache=True).last_hidden_state
        del cache
        if f.per_token:
            # every position scored, the prefix's too: read them from the prefix's pass (one
            # per group), the rest from the member's suffix, all as rows of one flat sequence
            H, S, G = hidden.shape[-1], hidden.shape[1], len(groups)
            flat = torch.cat([pre.last_hidden_state.reshape(-1, H), hidden.reshape(-1, H)])[None]
            posmap = [(0, [owner[i] * plen + p for p in range(plen)]
                       + [G * plen + i * S + j for j in range(len(r.tokens) - plen)])
                      for i, r in enumerate(members)]
            f.accumulate(flat, members, 0, out, posmap=posmap)
        else:
            f.accumulate(hidden, members, plen, out)
        f.stats["batches"] += 1
        f.stats["shared_groups"] += len(groups)
        f.stats["forward_tokens"] += plen * len(groups) + sum(len(r.tokens) - plen
                                                             for r in members)
        f.stats["padded_tokens"] += plen * len(groups) + ids.shape[1] * len(members)
