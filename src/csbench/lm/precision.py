"""The local engine's numerics for the dtype its model was loaded in.

Which dtype a setting means, and whether the CPU can compute in it, is the device and dtype
policy's (:mod:`csbench.compute`, applied by :func:`csbench.models.load.load_causal_lm`); what the
engine does that depends on the loaded dtype, read back from the weights, is here: the name that says what computed the scores (:meth:`Precision.compute`, the provenance
columns), the part of the cache key that keeps scores of different dtypes apart, the output layer
at the scored positions and the log-softmax (always fp32, whatever the model's dtype; sums in
double on the host), the additive attention
masks of eager attention (the dtype's most negative value), the tolerances of the engine's
one-off checks against a full pass, and the hint of an overflow error.
"""
from __future__ import annotations

# Tolerance of the one-off agreement checks (tree attention, last layer at scored positions)
# when the model runs in a half-precision dtype: the largest relative L2 error of a position's
# hidden state (float32 checks compare elementwise with their own tighter tolerances). Relative to
# the state's norm because half-precision noise scales with it: Qwen2.5's states reach |h| of
# 70-100, where one bf16 step is 0.5, and an elementwise 5e-2 refused tree attention there
# although its log-likelihoods differed from plain rows by bf16's own noise (docs/reproduce.md).
# A wrong mask or wrong positions change a state by about its own size.
HALF_TOLERANCE = 5e-2


class Precision:
    """The dtype and device a loaded model computes in (read from its parameters)."""

    def __init__(self, model):
        p = next(model.parameters())
        self.dtype, self.device = p.dtype, p.device

    @property
    def name(self) -> str:
        """``float32``, ``bfloat16`` or ``float16``."""
        return str(self.dtype).replace("torch.", "")

    @property
    def cache_tag(self) -> str:
        """The dtype's part of the cache's model key (``torch.float32``, unchanged since the
        first cache files, so they stay valid; a half dtype's says its head is fp32, so no score
        of the earlier half-precision head is read back)."""
        import torch

        return str(self.dtype) + ("" if self.dtype == torch.float32 else "+fp32head")

    def vocabulary_head(self, head):
        """The output layer as the engine applies it at the scored positions: the model's own
        for float32; for a half dtype an fp32 copy of its weights applied to the hidden states
        in fp32, so the logits are not rounded to the half dtype before the fp32 log-softmax
        (SmolLM2 in bf16, first 400 WinoGrande dev items: predictions equal to fp32's 95.8% ->
        97.8%, median |delta loglik| 0.074 -> 0.061, no measurable time; docs/reproduce.md)."""
        import torch

        if self.dtype == torch.float32:
            return head
        w = head.weight.detach().float()
        b = None if getattr(head, "bias", None) is None else head.bias.detach().float()
        return lambda h: torch.nn.functional.linear(h.float(), w, b)

    def compute(self) -> dict:
        """What computes the scores: ``{"compute_device": "cpu" | "cuda:0",
        "compute_dtype": "float32" | "bfloat16" | "float16"}``."""
        return {"compute_device": str(self.device), "compute_dtype": self.name}

    def agrees(self, a, b, float32: float) -> bool:
        """Whether hidden states ``a`` and ``b`` (``[..., H]``) agree in a one-off check: for a
        float32 model elementwise within ``float32`` (atol = rtol); in a half-precision dtype
        every position's relative L2 error within :data:`HALF_TOLERANCE`."""
        import torch

        a, b = a.float(), b.float()
        if self.dtype == torch.float32:
            return bool(torch.allclose(a, b, atol=float32, rtol=float32))
        err = (a - b).norm(dim=-1)
        return bool((err <= HALF_TOLERANCE * b.norm(dim=-1).clamp_min(1e-6)).all())

    @staticmethod
    def log_softmax(logits):
        """Log-probabilities over the vocabulary, in fp32 whatever the model's dtype."""
        import torch

        return torch.log_softmax(logits.float(), dim=-1)

    def overflow_hint(self) -> str:
        return f"an overflow in {self.dtype}? try lm.dtype: float32"


def attention_mask(allow, attn_impl: str, dtype):
    """The 4-D mask of a boolean ``allow`` (True: the query may attend to the key) as the
    attention implementation takes it: SDPA the booleans, eager attention an additive mask of
    the model's dtype (0 where allowed, the dtype's most negative value elsewhere)."""
    import torch

    if attn_impl == "sdpa":
        return allow
    m = torch.zeros(allow.shape, dtype=dtype, device=allow.device)
    return m.masked_fill_(~allow, torch.finfo(dtype).min)
