"""Sampling generation for baselines (ProtoQA): many nucleus-sampled completions per prompt.

Jobs sample through a scorer (:meth:`csbench.lm.score.LMScorer.sample`), which loads the model
as it does for scoring (:func:`csbench.models.load.load_causal_lm`).

:func:`sample_completions` is its own decoding loop with a KV cache: each sampled sequence
stops at the end-of-sequence token or, with ``stop``, as soon as its decoded text contains a
match of that pattern (ProtoQA cuts every answer at its first sentence end, so the tokens after it
were never used), else after ``max_new_tokens`` tokens (such a sample is "cut": ``cut`` says
which were); finished sequences leave the batch and the cache, so they stop costing forward
passes and sampling work. Logits are computed for the last position only (``logits_to_keep=1``,
also in the prefill). The prompt runs once, at batch size 1; sequences with the same tokens so
far share one batch row (many samples begin alike), so the forward pass and top-p run once per
distinct prefix; all chunks of a prompt are decoded together (up to ``max_batch``
sequences), so the few long samples at the end share forward passes.

Determinism: each prompt is sampled on its own (no padding, so other prompts cannot change its
text; prompts are not batched together, as different lengths would need padding) from private
``torch.Generator`` streams seeded from ``seed`` and the prompt text, so a prompt's samples do not
depend on which other prompts are in the run or on their order, and the global RNG is left alone.
On the CPU the prompts are sampled side by side, one per worker thread (``workers``: the job's
threads), each with one-thread operations, so that a job keeps all its cores busy (one prompt's
decoding steps are too small to).

Same samples as before: the random stream is the one of ``model.generate(do_sample=True,
num_return_sequences=chunk)`` per chunk after ``torch.manual_seed(prompt_seed(seed, prompt))``
(the former implementation; ``tests/test_lm_generate.py`` keeps it as the reference). Per
step a chunk's ``torch.multinomial`` draws one Exp(1) variate per (sequence, vocabulary entry)
and each sequence takes ``argmax(probs / noise)``; the loop takes the same draws (see the notes
above :class:`Chunk`: on the CPU it computes variates only for tokens with non-zero
probability and skips finished rows), and temperature, top-k and top-p give transformers'
warper results, applied in generate's order. The reference runs a chunk until all its sequences
have ended (EOS) or ``max_new_tokens`` and starts the next chunk where that left the stream; to
decode chunks together the loop walks the earlier chunks' streams ahead to find the later
chunks' start states, and decodes the later chunks again in the rare case that a chunk ended
early with EOS in every sequence. After the post-processing the texts are those of the
reference, except (1) where the batch size of a forward pass or the number of threads of an
operation changes the floating-point result (none seen on real weights:
``bench/protoqa_generate.py``) and (2) one case the loop cannot
know: when a sequence stopped at ``stop``, the loop assumes the reference ran that chunk to
``max_new_tokens``; if instead every sequence of a chunk that is not the prompt's last would
have emitted EOS before ``max_new_tokens``, the following chunks of that prompt differ.

Window: a prompt whose tokens plus ``max_new_tokens`` exceed the model's window
(:func:`csbench.lm.plan.model_window`; lm-evaluation-harness would left-truncate it to
``window - max_new_tokens`` tokens) is refused, naming the prompt, before anything is sampled.
"""
from __future__ import annotations

import logging
import re
import sys
import threading
import time
import zlib

log = logging.getLogger(__name__)


def prompt_seed(seed: int, prompt: str) -> int:
    return (int(seed) * 1_000_003 + zlib.crc32(prompt.encode("utf-8"))) % (2**31 - 1)


class TopP:
    """transformers' ``TopPLogitsWarper`` (min_tokens_to_keep=1) with the same result, bit for
    bit, without sorting the vocabulary on the CPU where the result is certain.

    The warper sorts the scores ascending, takes the softmax of the sorted row, sums it up
    (float64 running sum, float32 result) and drops the entries whose cumulative probability is
    at most ``1 - top_p`` (never the last): the kept tokens are the largest ones, and the result
    is ``scores`` with the others at ``-inf``. Here each row first takes its ``_TOP_K`` largest
    scores and the float64 sum of the exponentials of all of them (:func:`certain_cut`): the
    warper's cumulative values near the cut-off are within proven bounds of the ones computed
    from these, and where the bounds put the cut-off on one side of ``1 - top_p`` for certain,
    the row is decided without sorting (on real weights more than 99% of the rows). The other
    rows are sorted (NumPy: the ascending values are the same array whichever sort makes them,
    and so are the warper's cumulative probabilities); a row with several tokens tied at the
    cut-off value goes to the warper itself (which of them it drops depends on its argsort)."""

    def __init__(self, top_p: float):
        from transformers.generation.logits_process import TopPLogitsWarper

        self.top_p = top_p
        self.reference = TopPLogitsWarper(top_p=top_p, min_tokens_to_keep=1)

    def __call__(self, input_ids, scores):
        import numpy as np
        import torch

        if scores.device.type != "cpu" or scores.dtype != torch.float32:
            return self.reference(input_ids, scores)
        scores = scores.contiguous()
        edge = certain_cut(scores, self.top_p)                # smallest kept score; NaN: unsure
        rest = torch.isnan(edge[:, 0]).nonzero().flatten()
        tied = []
        if len(rest):                                          # sort those rows
            ordered = torch.from_numpy(np.sort(scores.index_select(0, rest).numpy(), axis=-1))
            cumulative = ordered.softmax(dim=-1).cumsum(dim=-1)
            drop = cumulative <= (1 - self.top_p)
            drop[..., -1:] = 0
            cut = drop.sum(dim=-1, keepdim=True)              # dropped: a prefix of the order
            kept = ordered.gather(1, cut)
            below = ordered.gather(1, (cut - 1).clamp(min=0))
            edge[rest] = kept
            tied = rest[((cut > 0) & (below == kept)).squeeze(1)].tolist()
        out = scores.masked_fill(scores < edge, -float("inf"))
        for r in tied:                                         # a tie straddles the cut-off
            out[r:r + 1] = self.reference(input_ids, scores[r:r + 1])
        return out


_TOP_K = 256                    # scores per row that certain_cut looks at (real rows keep 1-414)
_U = 2.0 ** -24                 # float32 unit roundoff
_EXP_ERR = 2.0 ** -16           # bound on the relative difference of two float32 exps (128 ulps)


def certain_cut(scores, top_p: float):
    """Per row of ``scores`` (float32, CPU, rows x vocabulary ``V``): the smallest score that
    ``TopPLogitsWarper(top_p)`` keeps, where that is certain without sorting the row, else NaN
    (a rows x 1 tensor).

    With ``m`` the row's maximum, ``e = exp(scores - m)`` (the float32 difference, as the softmax
    takes it), ``S`` their float64 sum and ``T_j`` that of the ``j`` largest, the warper's
    cumulative probability at the ``j``-th largest score (ascending position ``V - 1 - j``) is
    ``(S - T_j) / S`` up to these errors, each bounded: the difference between the warper's
    float32 exponentials and these (``_EXP_ERR`` relative: PyTorch's are within 20 ulps of exp,
    plus 2 ulps of ``|scores - m|`` should its softmax round the difference otherwise); the
    warper's float32 sum of its ascending row, in any grouping (at
    most ``u`` times the sum of the ascending prefix sums plus ``(log2 V + 64) S``: the prefix
    sums are at most ``j + 1`` times each of the ``_TOP_K`` largest exponentials and ``V`` times
    the rest); its float32 probabilities (2 roundings) and its float64 running sum rounded to
    float32. A row is certain when the first dropped score's cumulative value is at most the
    threshold (``1 - top_p`` in float32, as the warper compares) for certain and the last kept
    one's above it (unless that is the maximum, which is always kept), the cut-off lies among
    the ``_TOP_K`` largest and the scores on either side of it differ (a tie goes to the
    warper)."""
    import math

    import numpy as np
    import torch

    rows, vocab = scores.shape
    edge = torch.full((rows, 1), float("nan"))
    k = min(_TOP_K, vocab)
    if k < 2 or rows == 0:
        return edge
    vals, idx = torch.topk(scores, k, dim=-1)                  # descending, exact values
    top = vals[:, :1]
    finite = torch.isfinite(top[:, 0]).tolist()
    e = torch.exp(scores - top)
    big = e.gather(1, idx).numpy().astype(np.float64)          # exps of the k largest
    total = np.sum(e.numpy(), axis=-1, dtype=np.float64)       # S
    taken = np.cumsum(big, axis=-1)                            # taken[:, j - 1] = T_j
    tail = np.maximum(total - taken[:, -1], 0.0)
    lowest = (scores.amin(dim=-1) - top[:, 0]).numpy().astype(np.float64)
    u = _U
    # sum of |scores - m| e: the k largest have at most the k-th's, the rest at most 104 (e = 0
    # below that in float32)
    weight = -vals[:, -1].numpy().astype(np.float64) * taken[:, -1] \
        + np.minimum(-lowest, 104.0) * tail
    prefix = (big * np.arange(1, k + 1)).sum(axis=-1) + vocab * tail
    slack = 2.0 ** -50 * total + 1e-30
    d_den = (_EXP_ERR * total + 2 * u * weight + u * 1.01 * (prefix + (math.log2(vocab) + 64)
             * total) + slack)
    thr = float(np.float32(1 - top_p))
    vals = vals.numpy()
    for r in range(rows):
        s = total[r]
        if not finite[r] or not s > 2 * d_den[r]:
            continue
        drop = (s - taken[r, :-1]) <= thr * s                  # estimate for j = 1 .. k - 1
        if not drop.any():
            continue
        kept = int(drop.argmax()) + 1                          # the kept largest scores

        def bounds(num, r=r, s=s):                             # the warper's value, for sure
            d_num = (_EXP_ERR + 3 * u) * num + 2 * u * weight[r] + slack[r]
            return ((num - d_num) / (s + d_den[r]) * (1 - 2 * u),
                    (num + d_num) / (s - d_den[r]) * (1 + 2 * u))

        if bounds(s - taken[r, kept - 1])[1] > thr:            # the first dropped score
            continue
        if kept > 1 and not bounds(s - taken[r, kept - 2])[0] > thr:   # the last kept one
            continue
        if vals[r, kept - 1] == vals[r, kept]:                 # tied at the cut-off
            continue
        edge[r, 0] = float(vals[r, kept - 1])
    return edge


def _warpers(temperature: float, top_k: int, top_p: float):
    """transformers' sampling warpers in the order ``generate`` applies them (for sampling with
    ``top_k=None`` when ``top_k`` is 0, as the reference passes it); top-p as :class:`TopP`."""
    from transformers.generation.logits_process import TemperatureLogitsWarper, TopKLogitsWarper

    out = []
    if temperature is not None and temperature != 1.0:
        out.append(TemperatureLogitsWarper(temperature))
    if top_k:
        out.append(TopKLogitsWarper(top_k=top_k, min_tokens_to_keep=1))
    if top_p is not None and top_p < 1.0:
        out.append(TopP(top_p))
    return out


def _eos_ids(model, tokenizer) -> set[int]:
    eos = getattr(model.generation_config, "eos_token_id", None)
    if eos is None:
        eos = tokenizer.eos_token_id
    if eos is None:
        return set()
    return {int(e) for e in (eos if isinstance(eos, (list, tuple)) else [eos])}


def _forward(model, ids, cache, start: int):
    """(logits (float32) of the last position of ``ids`` (batch x length), cache); positions
    from ``start``; only the last position goes through the output layer."""
    import torch

    pos = torch.arange(start, start + ids.shape[1], device=ids.device).expand(ids.shape[0], -1)
    out = model(input_ids=ids, past_key_values=cache, position_ids=pos, use_cache=True,
                logits_to_keep=1)
    return out.logits[:, -1].to(dtype=torch.float32), out.past_key_values


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


def _decode(model, tokenizer, length: int, prefix_cache, prefix_logits, chunks: list[Chunk],
            warpers, max_new_tokens: int, eos: set[int], stop,
            stats: dict) -> list[tuple[list[str], list[bool]]]:
    """Decode the sequences of ``chunks`` together, continuing the prompt (``length`` tokens;
    its cache and last logits at batch 1 given). Sequences with the same tokens so far share one
    batch row (its logits are theirs, bit for bit: they are computed from the same inputs), so a
    forward pass and the warpers run once per distinct prefix; each chunk draws its own noise
    for its sequences, as ``torch.multinomial`` on the chunk would; finished sequences leave the
    batch and the cache. Returns per chunk the texts, each ending at its EOS or first ``stop``
    match, and per text whether ``max_new_tokens`` ended it (neither EOS nor ``stop`` came)."""
    import copy

    import torch

    device = prefix_logits.device
    owner = [c for c, ch in enumerate(chunks) for _ in range(ch.n)]
    first = [sum(ch.n for ch in chunks[:c]) for c in range(len(chunks))]
    total = len(owner)
    cache = copy.deepcopy(prefix_cache)
    tokens: list[list[int]] = [[] for _ in range(total)]
    active = list(range(total))                  # sequences still being decoded (in order)
    cut = [False] * total                        # ended by max_new_tokens, not EOS or stop
    row_of = [0] * total                         # batch row (distinct prefix) of each sequence
    logits = prefix_logits                       # (1, V): one row, the prompt
    last: list[int] = []                         # the token each batch row feeds next
    step = 0
    while active:
        if step:
            ids = torch.tensor([[t] for t in last], device=device)
            logits, cache = _forward(model, ids, cache, length + step - 1)
            stats["decode_tokens"] += len(last)
        scores = logits
        for w in warpers:
            scores = w(None, scores)
        probs = torch.softmax(scores, dim=-1)
        # torch.multinomial(probs, 1) on each whole chunk: argmax(probs / Exp(1) noise)
        parts, owners, r = [], [], 0
        while r < len(active):
            c = owner[active[r]]
            end = r
            while end < len(active) and owner[active[end]] == c:
                end += 1
            parts.append((chunks[c].draw([x - first[c] for x in active[r:end]]), r))
            owners.append(c)
            r = end
        starts = [r for _, r in parts]

        def exact(i, parts_at=starts, owners=owners):
            import bisect

            p = bisect.bisect_right(parts_at, i) - 1
            return chunks[owners[p]].exact(i - parts_at[p])

        rows = [row_of[x] for x in active]
        picked = pick(probs, rows, parts, exact)
        stats["sampled_tokens"] += len(active)
        step += 1
        # next batch: one row per distinct (row, token) of the sequences that go on
        children: dict[tuple[int, int], int | None] = {}
        budget: dict[tuple[int, int], bool] = {}     # a finished key: ended by the budget only
        parent: list[int] = []
        last = []
        still = []
        for x, row, t in zip(active, rows, picked):
            tokens[x].append(t)
            key = (row, t)
            if key not in children:
                ends = t in eos
                if not ends and stop is not None:
                    ends = stop.search(tokenizer.decode(tokens[x], skip_special_tokens=True)) \
                        is not None
                if ends or step >= max_new_tokens:
                    children[key] = None
                    budget[key] = not ends
                else:
                    children[key] = len(parent)
                    parent.append(row)
                    last.append(t)
            child = children[key]
            if child is None:
                cut[x] = budget[key]
                if t not in eos:
                    chunks[owner[x]].all_eos = False
            else:
                row_of[x] = child
                still.append(x)
        active = still
        if active and parent != list(range(logits.shape[0])):
            cache.batch_select_indices(torch.tensor(parent, device=device))
    out = []
    for c, ch in enumerate(chunks):
        ch.finish(max_new_tokens)
        out.append((tokenizer.batch_decode(tokens[first[c]:first[c] + ch.n],
                                           skip_special_tokens=True),
                    cut[first[c]:first[c] + ch.n]))
    return out


def _sample_prompt(model, tokenizer, ids: list[int], num_samples: int, gen, chunk: int,
                   max_batch: int, warpers, max_new_tokens: int, eos: set[int], stop,
                   stats: dict, prog) -> tuple[list[str], list[bool]]:
    """The samples of one prompt and per sample whether ``max_new_tokens`` ended it: chunks of
    ``chunk`` rows (the reference's ``num_return_sequences``), decoded together up to
    ``max_batch`` rows."""
    import torch

    device = next(model.parameters()).device
    # the prompt runs once, batch 1; every joint decode repeats a copy of its cache
    logits, cache = _forward(model, torch.tensor([ids], device=device), None, 0)
    stats["prompt_tokens"] += len(ids)
    vocab = logits.shape[-1]
    sizes = [min(chunk, num_samples - i) for i in range(0, num_samples, chunk)]
    state = gen.get_state()
    texts: list[str] = []
    cut: list[bool] = []
    i = 0
    while i < len(sizes):
        group = [sizes[i]]
        while i + len(group) < len(sizes) and sum(group) + sizes[i + len(group)] <= max_batch:
            group.append(sizes[i + len(group)])
        # stream of each chunk: the reference runs a chunk to max_new_tokens unless all its
        # rows end with EOS first; assume the former (checked below)
        chunks = []
        for j, n in enumerate(group):
            chunks.append(Chunk(n, state, vocab, device, followed=i + j + 1 < len(sizes)))
            if j < len(group) - 1:
                state = chunks[-1].plan(max_new_tokens)
        done = _decode(model, tokenizer, len(ids), cache, logits, chunks, warpers,
                       max_new_tokens, eos, stop, stats)
        first_in_group = i
        for ch, (chunk_texts, chunk_cut) in zip(chunks, done):
            texts.extend(chunk_texts)
            cut.extend(chunk_cut)
            i += 1
            prog.update(ch.n)
            state = ch.end
            if ch.followed and ch.all_eos and ch.steps < max_new_tokens:
                # the next chunk starts earlier in the stream: decode the rest again
                stats["redecoded_chunks"] += len(group) - (i - first_in_group)
                break
    return texts, cut


def _workers(workers, device) -> int:
    import torch

    if torch.device(device).type != "cpu":
        return 1
    return max(1, int(torch.get_num_threads() if workers is None else workers))


class _Locked:
    """A progress counter shared by worker threads."""

    def __init__(self, prog):
        self.prog = prog
        self.lock = threading.Lock()

    def update(self, n) -> None:
        with self.lock:
            self.prog.update(n)


def _in_workers(one, prompts, encoded, workers: int, prog, counts: dict) -> list:
    """``one(prompt, ids, prog, counts)`` for every prompt, ``workers`` at a time in threads
    (PyTorch and NumPy release the GIL in their operations), each operation on one thread (the
    process's thread setting is restored after); the counts of each prompt are added to
    ``counts``; the first error cancels the prompts not started and is raised."""
    from concurrent.futures import ThreadPoolExecutor

    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    own = [dict.fromkeys(counts, 0) for _ in prompts]
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="csbench-sample")
    try:
        futures = [pool.submit(one, p, ids, prog, c) for p, ids, c in zip(prompts, encoded, own)]
        out = [f.result() for f in futures]
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        torch.set_num_threads(threads)
    for c in own:
        for k, v in c.items():
            counts[k] += v
    return out


def sample_completions(model, tokenizer, prompts, num_samples: int, *, max_new_tokens: int = 20,
                       temperature: float = 1.0, top_p: float = 1.0, top_k: int = 0,
                       seed: int = 0, chunk: int = 100, stop=None, max_batch: int = 512,
                       stats: dict | None = None, names=None, window: int | None = None,
                       workers: int | None = None, cut: list | None = None) -> list[list[str]]:
    """Return ``num_samples`` decoded continuations (prompt excluded) for each prompt.

    ``stop``: a regular expression (``str`` or compiled) or a list of stop strings; a sequence
    ends with the token after which its decoded text first contains a match (the returned text
    runs to the end of that token; cut it at the match yourself). ``chunk``: sequences that
    share one random draw per step (the reference's ``num_return_sequences``; changing it
    changes the samples);
    ``max_batch``: the most sequences decoded together (whole chunks of one prompt; memory).
    ``stats`` (a dict) receives the counts of the run: ``prompt_tokens`` (prefill, batch 1, once
    per prompt), ``decode_tokens`` (forward-pass rows after the prefill), ``sampled_tokens``
    (tokens generated), ``samples``, ``redecoded_chunks`` (decoded again after an earlier chunk
    ended early with EOS everywhere; the discarded work is in the token counts), ``seconds``.
    ``window``: the model's window (default: from its config); a prompt whose tokens plus
    ``max_new_tokens`` exceed it is a :class:`~csbench.lm.base.RequestError` naming it (``names``:
    one name per prompt, e.g. the question id).
    ``workers``: prompts sampled at the same time on the CPU, each in its own thread with
    one-thread operations (default: ``torch.get_num_threads()``, the job's threads; 1 = one
    prompt after the other with the operations on all threads; on a GPU always 1). Each prompt's
    samples are the same either way: its random stream, batches and operations do not depend on
    the other prompts (one-thread and multi-thread CPU operations give the same numbers here:
    ``bench/protoqa_generate.py --compare`` checks it on real weights).
    ``cut`` (a list) receives, per prompt, one bool per sample: whether ``max_new_tokens`` ended
    the sample (True: it met neither the end-of-sequence token nor ``stop``; a sample whose last
    allowed token completes a ``stop`` match or is EOS is not cut).
    """
    import torch

    from ..logs import progress
    from .base import RequestError, describe_prompt
    from .plan import model_window, special_tokens

    device = next(model.parameters()).device
    warpers = _warpers(temperature, top_k, top_p)
    eos = _eos_ids(model, tokenizer)
    if isinstance(stop, (list, tuple)):
        stop = re.compile("|".join(re.escape(x) for x in stop)) if stop else None
    elif isinstance(stop, str):
        stop = re.compile(stop)
    chunk = max(int(chunk), 1)
    counts = {"prompt_tokens": 0, "decode_tokens": 0, "sampled_tokens": 0, "samples": 0,
              "redecoded_chunks": 0}
    prompts = list(prompts)
    window = int(window or model_window(model.config))
    # a prompt that starts with the start token's text (a chat template's output) gets no
    # special tokens, as lm-evaluation-harness encodes generation prompts
    encoded = [tokenizer.encode(p, **special_tokens(p, tokenizer.bos_token))
               or [tokenizer.eos_token_id] for p in prompts]
    for i, (prompt, ids) in enumerate(zip(prompts, encoded)):
        if len(ids) + int(max_new_tokens) > window:
            raise RequestError(
                f"{describe_prompt(i, None if names is None else names[i], prompt)}: "
                f"{len(ids)} prompt tokens + max_new_tokens {max_new_tokens} exceed the model's "
                f"window of {window} tokens; shorten the prompt or lower max_new_tokens")
    start = time.monotonic()
    workers = min(_workers(workers, device), len(prompts))

    def one(prompt, ids, prog, own: dict):
        gen = torch.Generator(device=device)
        gen.manual_seed(prompt_seed(seed, prompt))
        with torch.no_grad():                    # thread-local: in each worker
            got = _sample_prompt(model, tokenizer, ids, int(num_samples), gen, chunk,
                                 max(int(max_batch), chunk), warpers, max_new_tokens, eos,
                                 stop, own, prog)
        own["samples"] += int(num_samples)
        return got

    with progress(len(prompts) * int(num_samples), "sampling", unit="samples") as prog:
        if workers <= 1:
            out = [one(p, ids, prog, counts) for p, ids in zip(prompts, encoded)]
        else:
            out = _in_workers(one, prompts, encoded, workers, _Locked(prog), counts)
    counts["seconds"] = time.monotonic() - start
    if cut is not None:
        cut.extend(c for _, c in out)
    out = [texts for texts, _ in out]
    log.info("%d prompts x %d samples: %d tokens sampled (%.1f per sample), %d prompt tokens, "
             "%.1f s", len(prompts), num_samples, counts["sampled_tokens"],
             counts["sampled_tokens"] / max(counts["samples"], 1), counts["prompt_tokens"],
             counts["seconds"])
    if stats is not None:
        stats.update(counts)
    return out
