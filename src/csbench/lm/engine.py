"""The local engine's execution of encoded requests: rows and prefix groups
(:mod:`csbench.lm.plan`), ordered and batched (:mod:`csbench.lm.batching`), each batch run by
the strategy that fits it: tree attention for prefix groups (:mod:`csbench.lm.tree`), the KV
cache for a common header or groups on models without tree attention (:mod:`csbench.lm.kvshare`),
plain rows otherwise (:mod:`csbench.lm.forward`). A model that cannot share prefixes falls back
to plain rows with the same numbers."""
from __future__ import annotations

import logging

from .batching import Batcher
from .forward import Forward
from .kvshare import SharedKV
from .plan import GROUP_ORDER, build_rows, group_prefixes, trie_groups
from .tree import TreeAttention

log = logging.getLogger(__name__)

# Errors of a model whose cache or mask cannot be used for prefix sharing.
UNSUPPORTED = (AttributeError, NotImplementedError, TypeError)


class Engine:
    """Scores encoded requests with a loaded model (``stats``: the scorer's statistics, updated
    in place)."""

    def __init__(self, model, precision, pad_token_id: int, stats: dict, max_length: int,
                 batch_size: int | str, max_batch_size: int, share_prefix: bool = True,
                 min_shared_prefix: int = 4, min_common_prefix: int = 8):
        self.stats = stats
        self.max_length = max_length
        self.forward = Forward(model, precision, pad_token_id, stats)
        self.batcher = Batcher(batch_size, max_batch_size, precision.device.type, stats)
        self.kv = SharedKV(self.forward, min_common_prefix)
        self.tree = TreeAttention(self.forward, self.kv)
        self.share_prefix = share_prefix  # turned off when the model cannot share prefixes
        self.min_shared_prefix = max(1, int(min_shared_prefix))

    def sharing(self) -> bool:
        return self.share_prefix and self.forward.partial_logits

    def score(self, enc, per_token: bool = False) -> list:
        """``[(context ids, continuation ids)] -> [(summed log-prob, n tokens)]``; with
        ``per_token``, each request's :class:`~csbench.lm.tokenstats.TokenStats` instead (every
        strategy runs as it does for sums; only the read-out differs)."""
        import torch

        if not enc:
            return []
        self.forward.per_token = per_token
        try:
            with torch.inference_mode():
                return self._score_rows(enc)
        finally:
            self.forward.per_token = False

    def _score_rows(self, enc) -> list[tuple[float, int]]:
        rows = build_rows(enc, self.max_length)
        self.stats["rows"] += len(rows)
        # Per-token statistics score every token, the shared prefix's too: tries (tree
        # attention) where the model has them, else prefix groups whose prefix positions the
        # KV-cache path scores from the prefix's own pass.
        per_token = self.forward.per_token
        in_prefix = per_token and self.tree.enabled
        if self.sharing() and in_prefix:
            groups, singles = trie_groups(rows, self.min_shared_prefix,
                                          max_group=self.batcher.size())
        elif self.sharing():
            groups, singles = group_prefixes(rows, self.min_shared_prefix,
                                             max_group=self.batcher.size(),
                                             scored_prefix=per_token)
        else:
            groups, singles = [], rows
        out: list[tuple[float, int] | None] = [None] * len(enc)
        b = self.batcher
        # Longest first (so an OOM shows up on the first batch); ties broken by content.
        singles.sort(key=lambda r: (-len(r.tokens), r.tokens))
        b.run(singles, lambda x: self.run_rows(x, out), weight=b.row_weight, count=lambda r: 1)
        # Tree attention: a group is one sequence (its trie), batched by sequences, largest
        # tries first (least padding). KV-cache path: groups longest first; a batch of groups
        # uses the shortest of their prefix lengths (scored positions stay in the suffix).
        tree = self.tree.enabled
        if tree:
            groups.sort(key=lambda g: (-len(self.tree.trie(g[1])[0]), g[1][0].tokens))
        else:
            groups.sort(key=lambda g: GROUP_ORDER(g))
        unshared = lambda x: b.run(  # noqa: E731
            [r for _, g in x for r in g], lambda y: self.run_rows(y, out),
            weight=b.row_weight, count=lambda r: 1)
        try:
            b.run(groups, lambda x: self.tree.run(
                min(p for p, _ in x), [g for _, g in x], out,
                unshared=(lambda _: unshared(x)) if in_prefix else None),
                weight=(lambda g: 1) if tree else (lambda g: len(g[1])), fallback=unshared)
        except UNSUPPORTED as exc:
            # A model whose cache cannot be reused this way: score those rows unshared.
            log.warning("prefix sharing unsupported by this model (%s); disabled", exc)
            self.share_prefix = False
            unshared([g for g in groups if any(out[u] is None for r in g[1]
                                               for u, _, _ in r.members)])
        finally:
            self.tree.forget()
        return out  # type: ignore[return-value]

    def run_rows(self, batch, out) -> None:
        """One batch of rows: their common header once through the KV cache when it pays,
        else plain rows."""
        plen = self.kv.common_prefix(batch) if self.sharing() else 0
        if plen:
            try:
                return self.kv.run(plen, [batch], out)
            except UNSUPPORTED as exc:
                log.warning("common-prefix KV cache unsupported by this model (%s); disabled", exc)
                self.share_prefix = False
        self.forward.run_rows(batch, out)
