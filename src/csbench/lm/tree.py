"""The prefix trie and tree attention: rows that share token prefixes (the options of one item,
twin items, few-shot prompts) are packed as a token trie into ONE sequence and scored in one
forward pass with a 4-D mask (each token attends to its ancestors and itself; position ids =
depth), so every shared token runs once. Only for model families whose attention honours a
custom 4-D mask and explicit position ids (:data:`TREE_MODEL_TYPES`), confirmed once per model
against plain rows; otherwise groups go through the KV-cache path (:mod:`csbench.lm.kvshare`)."""
from __future__ import annotations

import logging

from .forward import padded
from .plan import lcp
from .precision import attention_mask

log = logging.getLogger(__name__)

# Model families whose attention honours a custom 4-D mask and explicit position_ids (absolute
# learned or rotary positions), so a token trie can be scored in one pass (tree attention).
TREE_MODEL_TYPES = frozenset({
    "gpt2", "gpt_neox", "gptj", "llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3",
    "qwen3_moe", "gemma", "gemma2", "phi", "phi3", "olmo", "olmo2", "stablelm", "starcoder2",
    "granite", "smollm3"})


class TreeAttention:
    """Prefix groups scored as tries (``forward``: the engine's
    :class:`~csbench.lm.forward.Forward`; ``kv``: the :class:`~csbench.lm.kvshare.SharedKV`
    fallback)."""

    def __init__(self, forward, kv):
        self.forward, self.kv = forward, kv
        # Needs a model that honours a custom 4-D mask and position_ids (no ALiBi /
        # mask-derived positions): known families, confirmed on first use.
        self.enabled = (forward.attn_impl in ("sdpa", "eager")
                        and getattr(forward.model.config, "model_type", "") in TREE_MODEL_TYPES)
        self.checked = False
        self._tries: dict = {}

    def run(self, plen: int, groups, out, unshared=None) -> None:
        """Groups of rows sharing token prefixes in one forward pass, one sequence per group;
        when tree attention is off for this model, ``unshared(groups)`` (groups with scored
        positions inside their prefix), else the KV-cache path."""
        if self.enabled and not self.checked:
            self.checked = True
            self.enabled = self.agrees(groups[0])
        if not self.enabled:
            if unshared is not None:
                return unshared(groups)
            return self.kv.run(plen, groups, out)
        f = self.forward
        hidden, members, posmap, tries = self.forward_tries(groups, scored=True)
        f.accumulate(hidden, members, 0, out, posmap=posmap)
        f.stats["batches"] += 1
        f.stats["shared_groups"] += len(groups)
        f.stats["forward_tokens"] += sum(len(t[0]) for t in tries)
        f.stats["padded_tokens"] += hidden.shape[0] * hidden.shape[1]

    def forward_tries(self, groups, scored: bool = False):
        """Final hidden states of the groups' tries, one sequence per group (with ``scored``,
        valid only at the members' scored positions)."""
        import torch

        f = self.forward
        tries = [self.trie(g) for g in groups]
        members = [r for g in groups for r in sorted(g, key=lambda r: r.tokens)]
        T = max(len(t[0]) for t in tries)
        pad_ids, pad_pos, pad_end, posmap = [], [], [], []
        for b, (toks, depth, ends, gpaths) in enumerate(tries):
            k = T - len(toks)
            pad_ids.append(toks + [f.pad_token_id] * k)
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
        mask = attention_mask(allow[:, None], f.attn_impl, f.precision.dtype)
        keep = None
        if scored:
            need: list[set] = [set() for _ in tries]
            for r, (b, path) in zip(members, posmap):
                for _, start, tg in r.members:
                    need[b].update(path[start:start + len(tg)])
            keep = [sorted(s) for s in need]
        hidden = f.body(ids.to(f.device), keep=keep, attention_mask=mask.to(f.device),
                        position_ids=pos.to(f.device), use_cache=False).last_hidden_state
        return hidden, members, posmap, tries

    def agrees(self, group) -> bool:
        """One-off check (hidden states only, two rows) that tree attention reproduces plain
        rows for this model."""
        f = self.forward
        rows = sorted(group, key=lambda r: r.tokens)[:2]
        try:
            tree, _, posmap, _ = self.forward_tries([rows])
            plain = f.hidden(padded([r.tokens for r in rows], f.pad_token_id).to(f.device))
        except Exception:
            self.checked = False  # e.g. out of memory: check again next time
            raise
        ok = all(f.precision.agrees(tree[0, path], plain[i, :len(path)], 1e-3)
                 for i, (_, path) in enumerate(posmap))
        if not ok:
            log.warning("tree attention disagrees with plain rows for this model; "
                        "using the KV-cache path for shared prefixes")
        return ok

    def trie(self, rows):
        """Token trie of rows (memoised until :meth:`forget`): node tokens, depths, subtree ends
        and each row's node path, nodes numbered in depth-first pre-order (rows inserted
        sorted)."""
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

    def forget(self) -> None:
        """Drop the memoised tries (at the end of a scoring call)."""
        self._tries.clear()
