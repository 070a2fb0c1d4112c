"""Top-p (nucleus) filtering for the sampler (:mod:`csbench.lm.generate`): transformers'
``TopPLogitsWarper`` result, bit for bit, without sorting the vocabulary where the cut-off is
certain (:class:`TopP`, :func:`certain_cut`), and the warpers in the order ``generate`` applies
them (:func:`sampling_warpers`)."""
from __future__ import annotations


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


def sampling_warpers(temperature: float, top_k: int, top_p: float):
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
