"""Run a decoder's LAST layer only at the positions whose hidden states are needed.

Scoring needs final hidden states only at the continuation positions, but every layer's keys and
values are needed at every position. For all layers but the last that means a full pass; the last
layer, though, can stop after its key/value projections at the other positions. This module does
that without re-implementing any model family's attention:

1. the last layer runs once on all positions with a *capture* cache: the attention module calls
   ``cache.update(keys, values, layer_idx)`` right after projecting (and rotating) them, the
   capture keeps them and aborts the layer there (so only norm + K/V projection ran);
2. the layer runs again on the needed positions only (hidden states, mask rows, position ids and
   rotary tables gathered), with a *replay* cache whose ``update`` returns the captured keys and
   values of all positions, so each needed query attends exactly as in the full pass;
3. the outputs are scattered back into a full-size hidden tensor (other positions are zeros), so
   the model body's final norm and output shape are untouched.

The swap is done by replacing the layer in its ``ModuleList`` for one call
(:func:`scored_only`). Works for families whose layer takes the cache as ``past_key_values`` /
``layer_past`` / ``past_key_value`` and receives a 4-D (or no) mask: GPT-2, GPT-NeoX, Llama and
relatives. The engine (:class:`csbench.lm.forward.Forward`) checks once per model that the result
equals a full pass and falls back to full passes when it does not.
"""
from __future__ import annotations

import contextlib
import inspect

from .precision import attention_mask

CACHE_ARGS = ("past_key_values", "layer_past", "past_key_value")


class _Captured(Exception):
    """Raised by :class:`_Capture` to stop the layer once its keys/values exist."""


class _Capture:
    """Duck-typed cache: records the layer's keys and values, then aborts the layer."""

    def __init__(self):
        self.kv = None

    def update(self, key_states, value_states, *args, **kwargs):
        self.kv = (key_states, value_states)
        raise _Captured


class _Replay:
    """Duck-typed cache: hands the captured keys/values of ALL positions to the attention."""

    def __init__(self, kv):
        self.kv = kv

    def update(self, key_states, value_states, *args, **kwargs):
        return self.kv

    def get_seq_length(self, *args, **kwargs):
        return 0


def decoder_layers(base):
    """The ``ModuleList`` of decoder layers of a model body (its longest direct ModuleList)."""
    import torch

    lists = [m for m in base.children() if isinstance(m, torch.nn.ModuleList) and len(m)]
    if not lists:
        raise NotImplementedError(f"{type(base).__name__}: no decoder layer list found")
    return max(lists, key=len)


def plan_chunks(sizes: list[int], penalty: int) -> list[list[int]]:
    """Split rows (by their number of needed positions) into chunks run as separate calls,
    minimising padded positions + ``penalty`` per call. Rows are sorted by size and cut only
    between distinct sizes (cutting among equal sizes saves nothing), so the dynamic programme is
    quadratic in the number of distinct sizes, not of rows."""
    order = sorted(range(len(sizes)), key=lambda i: sizes[i])
    vals: list[int] = []            # distinct sizes, ascending
    ends: list[int] = []            # rows (in order) up to and including each distinct size
    for r, i in enumerate(order):
        v = max(1, sizes[i])
        if vals and vals[-1] == v:
            ends[-1] = r + 1
        else:
            vals.append(v)
            ends.append(r + 1)
    n = len(vals)
    best = [0] + [None] * n         # best[j]: cost of the rows of the first j distinct sizes
    cut = [0] * (n + 1)
    for j in range(1, n + 1):
        for i in range(j):
            lo = ends[i - 1] if i else 0
            c = best[i] + (ends[j - 1] - lo) * vals[j - 1] + penalty
            if best[j] is None or c < best[j]:
                best[j], cut[j] = c, i
    chunks = []
    j = n
    while j > 0:
        i = cut[j]
        chunks.append(order[ends[i - 1] if i else 0:ends[j - 1]])
        j = i
    return chunks[::-1]


def _rows_of(x, rows, B, T):
    """Rows ``rows`` of a per-row sequence tensor [B|1, T, ...] (others unchanged)."""
    import torch

    if not isinstance(x, torch.Tensor) or x.dim() < 2 or x.shape[1] != T:
        return x
    if x.shape[0] == B:
        return x[rows]
    return x.expand(len(rows), *x.shape[1:])


def _gather_seq(x, keep, T):
    """x[b, keep[b]] along dim 1 for a tensor [B, T, ...]; other tensors unchanged."""
    import torch

    if not isinstance(x, torch.Tensor) or x.dim() < 2 or x.shape[1] != T:
        return x
    B, S = keep.shape
    idx = keep.view(B, S, *([1] * (x.dim() - 2))).expand(B, S, *x.shape[2:])
    return torch.gather(x, 1, idx)


class _LastLayerAt:
    """Callable standing in for the last layer (see the module docstring). ``keep``: per row,
    the needed positions; rows run in chunks of similar size (:func:`plan_chunks`)."""

    def __init__(self, layer, keep: list[list[int]], attn_impl: str, dtype, device,
                 penalty: int = 64):
        import torch

        self.layer, self.attn_impl, self.dtype = layer, attn_impl, dtype
        self.chunks = []
        for rows in plan_chunks([len(k) for k in keep], penalty):
            S = max(1, max(len(keep[r]) for r in rows))
            ks = [keep[r] + [keep[r][0] if keep[r] else 0] * (S - len(keep[r])) for r in rows]
            self.chunks.append((torch.tensor(rows, dtype=torch.long, device=device),
                                torch.tensor(ks, dtype=torch.long, device=device)))
        params = list(inspect.signature(layer.forward).parameters.values())
        self.names = [p.name for p in params
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        self.cache_arg = next((n for n in CACHE_ARGS if n in {p.name for p in params}), None)
        if self.cache_arg is None:
            raise NotImplementedError(f"{type(layer).__name__}: no cache argument")

    def _mask(self, mask, rows, keep, T):
        import torch

        b, S = keep.shape
        if mask is None:   # plain causal rows (right padding): key j visible to query i iff j <= i
            allow = (torch.arange(T, device=keep.device)[None, None, :] <= keep[:, :, None])[:, None]
            return attention_mask(allow, self.attn_impl, self.dtype)
        if mask.dim() != 4 or mask.shape[2] != T:
            raise NotImplementedError(f"unsupported attention mask shape {tuple(mask.shape)}")
        mask = mask[rows] if mask.shape[0] > 1 else mask.expand(b, *mask.shape[1:])
        idx = keep[:, None, :, None].expand(b, mask.shape[1], S, mask.shape[3])
        return torch.gather(mask, 2, idx)

    def __call__(self, *args, **kwargs):
        import torch

        kw = dict(zip(self.names, args))
        kw.update(kwargs)
        hname = self.names[0]
        h = kw[hname]
        B, T, H = h.shape
        cap = _Capture()
        try:
            self.layer(**{**kw, self.cache_arg: cap})
        except _Captured:
            pass
        if cap.kv is None:
            raise NotImplementedError(f"{type(self.layer).__name__} did not update the cache")
        K, V = cap.kv
        full = torch.zeros((B, T, H), dtype=h.dtype, device=h.device)
        rest = None
        for rows, keep in self.chunks:
            sub = {}
            for k, v in kw.items():
                if k == "attention_mask":
                    sub[k] = self._mask(v, rows, keep, T)
                elif k == self.cache_arg:
                    continue
                elif isinstance(v, tuple):
                    sub[k] = tuple(_gather_seq(_rows_of(x, rows, B, T), keep, T) for x in v)
                else:
                    sub[k] = _gather_seq(_rows_of(v, rows, B, T), keep, T)
            sub[self.cache_arg] = _Replay((K[rows], V[rows]))
            if "attention_mask" not in sub:
                sub["attention_mask"] = self._mask(None, rows, keep, T)
            out = self.layer(**sub)
            o = out[0] if isinstance(out, tuple) else out
            full[rows[:, None], keep] = o.to(full.dtype)
            if isinstance(out, tuple):
                rest = tuple(out[1:])
        return (full,) + rest if rest is not None else full


@contextlib.contextmanager
def scored_only(base, keep: list[list[int]], attn_impl: str, dtype, device, penalty: int = 64):
    """Within the block, the model body ``base`` computes its last layer only at ``keep`` (per
    row, the positions whose final hidden states are needed); ``penalty``: padded positions
    one extra layer call is worth (chunking rows of different sizes)."""
    import torch

    layers = decoder_layers(base)
    last = layers[-1]
    stand = _LastLayerAt(last, keep, attn_impl, dtype, device, penalty)

    class _Module(torch.nn.Module):
        def forward(self, *args, **kwargs):
            return stand(*args, **kwargs)

    mod = _Module()
    layers[len(layers) - 1] = mod
    try:
        yield
    finally:
        layers[len(layers) - 1] = last
