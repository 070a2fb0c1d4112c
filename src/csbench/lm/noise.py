"""The sampler's random stream (:mod:`csbench.lm.generate`): the Exp(1) variates
``torch.multinomial`` draws, taken from the generator's raw bits where that gives the same values
(:func:`raw_ok`, :func:`variates`), each chunk's stream and how it ended (:class:`Chunk`), and the
token every sequence picks (:func:`pick`)."""
from __future__ import annotations

import logging
import sys

log = logging.getLogger(__name__)


# -- the random stream --------------------------------------------------------------------
# torch.multinomial(probs, 1) draws one Exp(1) variate per (row, token) of its input and takes
# argmax(probs / noise). On the CPU, exponential_ computes each float32 variate from the next 64
# bits of the generator (in memory order) as float32(-log1p(-u)), u = (bits & (2^53 - 1)) / 2^53;
# an int64 random_ draw takes the same 64 bits. So (where the check below passes) the loop takes
# the raw bits (a quarter of the cost), turns into variates only those of tokens with non-zero
# probability, skips rows of finished sequences without drawing them, and walks chunks ahead
# cheaply. Anything the check does not confirm falls back to drawing every variate.

_BLOCK = 1 << 20
_MASK = (1 << 53) - 1
_RAW_OK: dict[str, bool] = {}


def _advance(gen, count: int, buf) -> None:
    """Move ``gen`` past ``count`` variates (64 bits each) without computing them."""
    while count > 0:
        k = min(count, buf.numel())
        buf[:k].random_(generator=gen)
        count -= k


def variates(bits):
    """(float64, float32) Exp(1) variates of int64 raw draws, as ``exponential_`` computes them,
    and whether each float32 value is certain: the float64 value could differ by an ulp from
    the one torch's own ``log1p`` gives, so a value within 2 ulps of a float32 rounding
    boundary is not (about 1 in 10^8)."""
    import torch

    u = (bits & _MASK).to(torch.float64) * 2.0 ** -53
    d = -torch.log1p(-u)
    f = d.to(torch.float32)
    sure = (((d * (1 + 2.0 ** -51)).to(torch.float32) == f)
            & ((d * (1 - 2.0 ** -51)).to(torch.float32) == f))
    return f, sure


def raw_ok(device) -> bool:
    """Whether raw draws reproduce ``exponential_`` on this device and torch build (checked
    once, on a block larger than the ones used); if not, every variate is drawn."""
    import torch

    key = str(torch.device(device).type)
    if key not in _RAW_OK:
        ok = False
        try:
            gen = torch.Generator(device=device)
            width = _BLOCK + _BLOCK // 2 + 7
            gen.manual_seed(12345)
            full = torch.empty((3, width), device=device).exponential_(1, generator=gen)
            end = gen.get_state()
            buf = torch.empty(_BLOCK, dtype=torch.int64, device=device)
            gen.manual_seed(12345)
            _advance(gen, width, buf)
            raw = torch.empty(width, dtype=torch.int64, device=device).random_(generator=gen)
            _advance(gen, width, buf)
            f, sure = variates(raw)
            ok = (torch.equal(gen.get_state(), end) and bool(sure.any())
                  and torch.equal(f[sure], full[1][sure]))
        except RuntimeError:
            ok = False
        _RAW_OK[key] = ok
        log.debug("sampling noise: %s", "raw draws" if ok else "every variate drawn")
    return _RAW_OK[key]


class Chunk:
    """One chunk's share of a joint decode: its sequences' random stream and how it ended."""

    def __init__(self, n: int, state, vocab: int, device, followed: bool):
        import torch

        self.n = n
        self.vocab = vocab
        self.device = device
        self.gen = torch.Generator(device=device)
        self.gen.set_state(state)
        self.raw = raw_ok(device)
        self.noise = torch.empty((n, vocab), dtype=torch.int64 if self.raw else torch.float32,
                                 device=device)
        self.buf = torch.empty(_BLOCK, dtype=torch.int64, device=device) if self.raw else None
        self.followed = followed                 # a later chunk starts where this one ends
        self.row_states = None                   # [step][row]: stream state (from plan())
        self.final_state = None                  # after max_new_tokens steps (from plan())
        self.where = []                          # per drawn row: (state, rows to skip)
        self.steps = 0                           # noise draws (the reference's decoding steps)
        self.all_eos = True                      # every sequence ended with EOS
        self.end = None

    def plan(self, steps: int):
        """Walk the stream ``steps`` whole steps ahead (the reference's run to max_new_tokens)
        and return the state after them (the next chunk's start); with raw draws, keep the
        state at each row's start, so that drawing needs no skipping later."""
        start = self.gen.get_state()
        if self.raw:
            self.row_states = []
            for _ in range(steps):
                row = []
                for _ in range(self.n):
                    row.append(self.gen.get_state())
                    _advance(self.gen, self.vocab, self.buf)
                self.row_states.append(row)
        else:
            self.burn(steps)
        self.final_state = self.gen.get_state()
        self.gen.set_state(start)
        return self.final_state

    def draw(self, rows: list[int]):
        """One step of the chunk's noise, as ``torch.multinomial`` draws it, for the ``rows``
        (ascending chunk rows) only: raw int64 draws, or float32 variates without raw draws."""
        import torch

        step = self.steps
        self.steps += 1
        if not self.raw:
            self.noise.exponential_(1, generator=self.gen)
            if len(rows) == self.n:
                return self.noise
            return self.noise.index_select(0, torch.tensor(rows, device=self.device))
        self.where = []
        done = pos = 0
        while done < len(rows):
            start = done
            while done + 1 < len(rows) and rows[done + 1] == rows[done] + 1:
                done += 1
            done += 1                            # rows[start:done] are consecutive
            if self.row_states is not None:
                self.gen.set_state(self.row_states[step][rows[start]])
            else:
                _advance(self.gen, (rows[start] - pos) * self.vocab, self.buf)
            state = self.gen.get_state()
            self.where.extend((state, k) for k in range(done - start))
            self.noise[start:done].random_(generator=self.gen)
            pos = rows[done - 1] + 1
        if self.row_states is None:
            _advance(self.gen, (self.n - pos) * self.vocab, self.buf)
        return self.noise[:len(rows)]

    def exact(self, k: int):
        """The float32 variates of the ``k``-th row of the last :meth:`draw`, drawn by
        ``exponential_`` itself."""
        import torch

        state, skip = self.where[k]
        gen = torch.Generator(device=self.device)
        gen.set_state(state)
        _advance(gen, skip * self.vocab, self.buf)
        return torch.empty(self.vocab, device=self.device).exponential_(1, generator=gen)

    def burn(self, steps: int) -> None:
        """Move the stream past ``steps`` more steps of the whole chunk."""
        if self.raw:
            _advance(self.gen, steps * self.n * self.vocab, self.buf)
        else:
            for _ in range(steps):
                self.noise.exponential_(1, generator=self.gen)

    def finish(self, max_new_tokens: int) -> None:
        """Set ``end``: the stream state where the reference's next chunk starts."""
        if self.final_state is not None and not self.all_eos:
            self.end = self.final_state
        elif self.row_states is not None:
            self.end = (self.row_states[self.steps][0] if self.steps < len(self.row_states)
                        else self.final_state)
        else:
            if self.followed and not self.all_eos:
                # the reference would have gone on to max_new_tokens
                self.burn(max_new_tokens - self.steps)
            self.end = self.gen.get_state()


def pick(probs, rows: list[int], parts, exact) -> list[int]:
    """``argmax(probs[rows[i]] / noise_i)`` for every sequence ``i`` (``torch.multinomial``'s
    choice); ``parts``: (noise tensor, its first sequence) covering the sequences in order;
    ``exact(i)``: sequence ``i``'s float32 variates drawn by ``exponential_``. Computed only
    over each distinct row's tokens with non-zero probability: the others give 0 / noise = 0
    and cannot win (the first maximum wins ties, in index order, in both). A sequence whose
    noise holds an exact 0 (0 / 0 = NaN, which argmax picks) or an uncertain variate among its
    candidates gets the whole row from ``exact``."""
    import torch

    device = probs.device
    where: list[tuple[int, int]] = []
    redo: list[bool] = []
    for p, (noise, _) in enumerate(parts):
        redo.extend(_zero_rows(noise))
        where.extend((p, k) for k in range(noise.shape[0]))
    by_row: dict[int, list[int]] = {}
    for i, r in enumerate(rows):
        by_row.setdefault(r, []).append(i)
    out = [0] * len(rows)
    for r, seqs in by_row.items():
        cand = (probs[r] > 0).nonzero().flatten()
        sub = _gather(parts, [where[i] for i in seqs], cand)
        if sub.dtype == torch.int64:
            sub, sure = variates(sub)
            unsure = (~sure).any(dim=-1).tolist()
        else:
            unsure = [False] * len(seqs)
        best = cand[(probs[r].index_select(0, cand)[None, :] / sub).argmax(dim=-1)].tolist()
        for j, i in enumerate(seqs):
            if redo[i] or unsure[j]:
                q = exact(i) if parts[where[i][0]][0].dtype == torch.int64 \
                    else parts[where[i][0]][0][where[i][1]]
                out[i] = int((probs[r] / q).argmax())
            else:
                out[i] = best[j]
    return out


def _zero_rows(noise) -> list[bool]:
    """Per row of ``noise``: whether it holds a variate of exactly 0 (raw int64 draws: the low 53
    bits all 0). On the CPU, raw rows are screened on their low 32-bit words first (NumPy, one
    strided pass instead of a masked int64 copy); only a row with a zero low word is checked in
    full (about one row in 16,000 of Gemma's 262,144 entries)."""
    import numpy as np
    import torch

    if noise.dtype != torch.int64:
        return (noise == 0).any(dim=-1).tolist()
    if noise.device.type != "cpu" or not noise.is_contiguous():
        return ((noise & _MASK) == 0).any(dim=-1).tolist()
    words = noise.numpy().view(np.uint32)[:, (0 if sys.byteorder == "little" else 1)::2]
    out = (words == 0).any(axis=-1).tolist()
    for r, maybe in enumerate(out):
        if maybe:
            out[r] = bool(((noise[r] & _MASK) == 0).any())
    return out


def _gather(parts, subs, cand):
    """The ``cand`` columns of the rows ``subs`` ((part, row) pairs), in that order."""
    import torch

    out = []
    p0 = None
    ks: list[int] = []
    for p, k in subs + [(None, None)]:
        if p != p0 and ks:
            idx = torch.tensor(ks, device=cand.device)
            out.append(parts[p0][0][idx[:, None], cand])     # only the needed entries
            ks = []
        p0 = p
        if k is not None:
            ks.append(k)
    return torch.cat(out) if len(out) > 1 else out[0]
