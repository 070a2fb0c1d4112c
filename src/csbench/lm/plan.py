"""Request planning shared by the backends: how requests are split, deduplicated, grouped and
ordered before any model or server sees them.

* :func:`split_pair`: lm-evaluation-harness's text convention (trailing whitespace of the context
  moves to the continuation); :func:`encode_pair`: its token ids (:func:`special_tokens`: no
  start token added to a text that begins with it, as a chat template's output does;
  :func:`empty_context_pair`: an empty context); :func:`model_window` and
  :func:`truncated_tokens`: the model's window and the harness's left truncation to it.
* Local backend (token level): :func:`build_rows` packs requests into model rows (single-token
  continuations sharing a context share a row), :func:`group_prefixes` groups rows that share a
  token prefix (scored once, as a trie), :data:`GROUP_ORDER` orders groups; :func:`trie_groups`
  groups rows whose shared prefix holds scored positions too (per-token statistics).
* Served backend (text level): :func:`text_order` sends requests in prompt order, so requests
  sharing a prefix (the options of one item, few-shot prompts) follow each other and the server's
  prompt cache reuses the shared part.
"""
from __future__ import annotations

from dataclasses import dataclass, field


def split_pair(context: str, continuation: str) -> tuple[str, str]:
    """Move the context's trailing whitespace to the start of the continuation (as the harness
    does before tokenising)."""
    n = len(context) - len(context.rstrip())
    if n:
        return context[:-n], context[-n:] + continuation
    return context, continuation


def special_tokens(text: str, start_text: str | None,
                   add_special_tokens: bool | None = None) -> dict:
    """The tokenizer keyword of one text as the harness's ``tok_encode`` has it:
    ``add_special_tokens`` (None: the tokenizer's default), except that a text that already
    starts with the start token's text (``start_text``: a chat template's output) gets none."""
    if start_text is not None and text.startswith(start_text):
        return {"add_special_tokens": False}
    return {} if add_special_tokens is None else {"add_special_tokens": add_special_tokens}


def encode_pair(tokenizer, context: str, continuation: str, prefix_token_id: int,
                add_special_tokens: bool | None = None) -> tuple[list[int], list[int]]:
    """Token ids of (context, continuation) exactly as lm-evaluation-harness builds them.

    ``add_special_tokens=None`` uses the tokenizer's default (as the harness does when its
    ``add_bos_token`` is unset); a text that starts with the text of ``prefix_token_id`` gets no
    special tokens (:func:`special_tokens`). An empty context: :func:`empty_context_pair` (the
    continuation without special tokens, after ``prefix_token_id``).
    """
    start = tokenizer.decode(prefix_token_id)

    def enc(s):
        return tokenizer.encode(s, **special_tokens(s, start, add_special_tokens))

    if context == "":
        return empty_context_pair(tokenizer.encode(continuation, add_special_tokens=False),
                                  prefix_token_id)
    context, continuation = split_pair(context, continuation)
    whole = enc(context + continuation)
    ctx = enc(context)
    return ctx, whole[len(ctx):]


def empty_context_pair(continuation_ids: list[int],
                       prefix_token_id: int) -> tuple[list[int], list[int]]:
    """Token ids of an empty-context request as lm-evaluation-harness 0.4.13 builds them, from
    its continuation's ids WITHOUT special tokens (``add_special_tokens=False``, whatever the
    tokenizer's default: a tokenizer that adds a start token, as Gemma's, adds none here): the
    context is ``[prefix_token_id]``, unless the continuation itself starts with that token,
    which then becomes the context. An empty continuation stays empty (refused later as a
    request whose continuation has no tokens; the harness fails on it with an IndexError)."""
    if continuation_ids and continuation_ids[0] == prefix_token_id:
        return list(continuation_ids[:1]), list(continuation_ids[1:])
    return [prefix_token_id], list(continuation_ids)


def model_window(config, default: int = 2048) -> int:
    """A model's window in tokens (the harness's ``max_length``): the first of
    ``max_position_embeddings``, ``n_positions``, ``n_ctx`` its config sets, else ``default``."""
    return next((getattr(config, a) for a in ("max_position_embeddings", "n_positions", "n_ctx")
                 if getattr(config, a, None)), default)


def truncated_tokens(n_context: int, n_continuation: int, max_length: int) -> int:
    """Context tokens the harness drops from the left so that a request fits the window: it
    feeds the last ``max_length + 1`` tokens of context + continuation (less the last one).
    The continuation itself must fit (``n_continuation <= max_length``; the harness asserts
    it): a ValueError otherwise."""
    if n_continuation > max_length:
        raise ValueError(f"a continuation of {n_continuation} tokens does not fit in a window "
                         f"of {max_length} tokens")
    return max(0, n_context + n_continuation - (max_length + 1))


@dataclass
class Row:
    """One sequence fed to the model and the requests it answers."""
    tokens: list[int]
    members: list[tuple[int, int, list[int]]] = field(default_factory=list)  # (req idx, start, targets)


def build_rows(enc: list[tuple[list[int], list[int]]], max_length: int) -> list[Row]:
    """Model inputs of encoded requests (left-truncated to ``max_length``, see
    :func:`truncated_tokens`); single-token continuations sharing a context share a row."""
    L = max_length
    rows: list[Row] = []
    shared: dict[tuple, Row] = {}
    for u, (ctx, cont) in enumerate(enc):
        truncated_tokens(len(ctx), len(cont), L)  # a continuation past the window: an error
        inp = (ctx + cont)[-(L + 1):][:-1]
        if len(cont) == 1:
            key = tuple(inp)
            row = shared.get(key)
            if row is None:
                row = shared[key] = Row(inp)
                rows.append(row)
            row.members.append((u, len(inp) - 1, cont))
        else:
            start = len(inp) - len(cont)
            rows.append(Row(inp, [(u, start, cont)]))
    return rows


# Order of shared-prefix groups before batching: longest rows first (least padding).
GROUP_ORDER = lambda g: (-max(len(r.tokens) for r in g[1]), -g[0], g[1][0].tokens)  # noqa: E731


def lcp(a: list[int], b: list[int]) -> int:
    """Length of the common prefix of two token lists."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def group_prefixes(rows: list[Row], min_prefix: int, max_group: int = 1 << 30,
                   scored_prefix: bool = False):
    """Split rows into groups that share a token prefix (``[(prefix_len, rows)]``) and singles.

    Rows are visited in token order; a row joins the current group while the common prefix,
    capped at every member's first scored position, stays >= ``min_prefix`` tokens and >= 3/4
    of the group's current prefix, and the group has fewer than ``max_group`` rows.
    ``scored_prefix`` (per-token statistics, whose every position is scored): the prefix may
    hold scored positions, capped only so that every row keeps one token after it."""
    groups, singles = [], []
    if not rows:
        return groups, singles
    order = sorted(rows, key=lambda r: r.tokens)

    def first_needed(r):
        if scored_prefix:
            return len(r.tokens) - 1
        return min(start for _, start, _ in r.members)

    def flush(cur, plen):
        if len(cur) > 1:
            groups.append((plen, cur))
        else:
            singles.append(cur[0])

    cur, plen = [order[0]], first_needed(order[0])
    for r in order[1:]:
        new = min(plen, lcp(cur[0].tokens, r.tokens), first_needed(r))
        if new >= min_prefix and 4 * new >= 3 * plen and len(cur) < max_group:
            cur.append(r)
            plen = new
        else:
            flush(cur, plen)
            cur, plen = [r], first_needed(r)
    flush(cur, plen)
    return groups, singles


def trie_groups(rows: list[Row], min_prefix: int, max_group: int = 1 << 30):
    """Groups of rows for tree attention when scored positions may lie inside the shared prefix
    (per-token statistics score every token): rows in token order, each joining the current
    group while it shares >= ``min_prefix`` tokens with the previous row and the group has fewer
    than ``max_group`` rows. ``[(0, rows)]`` and singles (as :func:`group_prefixes`; a trie
    scores every node in place, so no prefix length applies, and the KV-cache path, which scores
    only after its prefix, must not run these groups)."""
    groups, singles = [], []
    cur: list[Row] = []

    def flush():
        if len(cur) > 1:
            groups.append((0, list(cur)))
        elif cur:
            singles.append(cur[0])

    for r in sorted(rows, key=lambda r: r.tokens):
        if cur and len(cur) < max_group and lcp(cur[-1].tokens, r.tokens) >= min_prefix:
            cur.append(r)
            continue
        flush()
        cur = [r]
    flush()
    return groups, singles


def text_order(prompts: list[str]) -> list[int]:
    """Indices of ``prompts`` in text order (shared prefixes adjacent), ties by index."""
    return sorted(range(len(prompts)), key=lambda i: (prompts[i], i))
