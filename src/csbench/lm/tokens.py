"""Request encoding for the local engine: token ids exactly as lm-evaluation-harness builds them
(:func:`csbench.lm.plan.encode_pair` is the one-request reference), for many requests at once,
and the window check (continuations that cannot fit are errors, left-truncated contexts are
counted)."""
from __future__ import annotations

from .base import RequestError, describe_request
from .plan import empty_context_pair, encode_pair, special_tokens, split_pair, truncated_tokens


class Encoder:
    """A tokenizer's token ids of (context, continuation) requests."""

    def __init__(self, tokenizer, add_bos_token: bool | None = None):
        self.tokenizer = tokenizer
        self.add_bos_token = add_bos_token
        # An empty context is replaced by this token (the harness's prefix token).
        self.prefix_token_id = (tokenizer.bos_token_id if tokenizer.bos_token_id is not None
                                else tokenizer.eos_token_id)
        self.pad_token_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        # a text that starts with this one gets no special tokens (a chat template's output)
        self.start_text = tokenizer.decode(self.prefix_token_id)
        self._backend_ok: dict = {}  # per add_special_tokens: the Rust backend agrees

    def encode(self, context: str, continuation: str) -> tuple[list[int], list[int]]:
        return encode_pair(self.tokenizer, context, continuation, self.prefix_token_id,
                           self.add_bos_token)

    def encode_many(self, requests) -> list[tuple[list[int], list[int]]]:
        """:meth:`encode` for many requests with batched tokenizer calls (same token ids); each
        distinct text is tokenised once per ``add_special_tokens`` it needs (an empty
        context's continuation: none, :func:`~csbench.lm.plan.empty_context_pair`)."""
        pairs, texts = [], []  # texts: (text, add_special_tokens; None = the default)
        for context, continuation in requests:
            if context == "":
                pairs.append(None)
                texts.append((continuation, False))
                continue
            context, continuation = split_pair(context, continuation)
            pairs.append(len(texts))
            texts += [(t, self._special(t)) for t in (context, context + continuation)]
        groups: dict = {}  # per add_special_tokens, the distinct texts
        for t, special in dict.fromkeys(texts):
            groups.setdefault(special, []).append(t)
        got: dict[tuple, list[int]] = {}
        for special, part in groups.items():
            got.update(((t, special), ids) for t, ids in zip(part, self._tokenize(part, special)))
        ids = [got[t] for t in texts]
        out, k = [], 0
        for p in pairs:
            if p is None:
                out.append(empty_context_pair(ids[k], self.prefix_token_id))
                k += 1
            else:
                ctx, whole = list(ids[k]), list(ids[k + 1])
                out.append((ctx, whole[len(ctx):]))
                k += 2
        return out

    def _special(self, text: str) -> bool | None:
        """The ``add_special_tokens`` of a text (None: the tokenizer's default)."""
        return special_tokens(text, self.start_text, self.add_bos_token).get("add_special_tokens")

    def _tokenize(self, texts: list[str], add_special: bool | None) -> list[list[int]]:
        """Token ids of texts as ``tokenizer(texts, add_special_tokens=add_special)`` (None: the
        default); fast tokenizers go straight to their Rust backend (no offsets, no Python
        wrapping), checked against the wrapper on a sample."""
        if not texts:
            return []
        kw = {} if add_special is None else {"add_special_tokens": add_special}
        backend = getattr(self.tokenizer, "_tokenizer", None)
        fast = getattr(backend, "encode_batch_fast", None)
        special = kw.get("add_special_tokens", True)
        if special not in self._backend_ok and fast is not None:
            sample = texts[:16]
            try:
                ok = ([e.ids for e in fast(sample, add_special_tokens=special)]
                      == [list(x) for x in self.tokenizer(sample, **kw)["input_ids"]])
            except Exception:  # noqa: BLE001 - any surprise: use the wrapper
                ok = False
            self._backend_ok[special] = ok
        if fast is not None and self._backend_ok.get(special):
            return [e.ids for e in fast(texts, add_special_tokens=special)]
        return [list(x) for x in self.tokenizer(texts, **kw)["input_ids"]]


def check_window(requests, keys, enc, offset: int, max_length: int) -> tuple[int, str | None]:
    """Refuse requests whose continuation has no tokens or does not fit in the window
    (a :class:`~csbench.lm.base.RequestError` naming the request; ``offset``: the index of the
    first in the caller's list); return how many have their context left-truncated to fit and
    a description of the first of them."""
    L = max_length

    def what(j):
        return describe_request(offset + j, None if keys is None else keys[j], *requests[j])

    over, n_cut, example = [], 0, None
    for j, (ctx, cont) in enumerate(enc):
        if not cont:
            raise RequestError(f"{what(j)}: the continuation has no tokens")
        if len(cont) > L:
            over.append(j)
            continue
        cut = truncated_tokens(len(ctx), len(cont), L)
        if cut:
            n_cut += 1
            if example is None:
                example = (f"{what(j)}: {len(ctx)} context + {len(cont)} continuation tokens, "
                           f"the first {cut} context tokens dropped")
    if over:
        j = over[0]
        more = f" ({len(over) - 1} more such requests among these)" if len(over) > 1 else ""
        raise RequestError(
            f"{what(j)}: the continuation is {len(enc[j][1])} tokens, longer than the "
            f"model's window of {L} tokens, so it cannot be scored (lm-evaluation-harness "
            f"refuses it too; context: {len(enc[j][0])} tokens){more}; shorten the item or "
            "use a model with a longer window")
    return n_cut, example
