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
and each sequence takes ``argmax(probs / noise)``; the loop takes the same draws
(:mod:`csbench.lm.noise`: on the CPU it computes variates only for tokens with non-zero
probability and skips finished rows), and temperature, top-k and top-p give transformers'
warper results, applied in generate's order (top-p: :mod:`csbench.lm.topp`). The reference
runs a chunk until all its sequences have ended (EOS) or ``max_new_tokens`` and starts the next
chunk where that left the stream; to decode chunks together the loop walks the earlier chunks'
streams ahead to find the later chunks' start states, and decodes the later chunks again in the
rare case that a chunk ended early with EOS in every sequence. After the post-processing the
texts are those of the reference, except (1) where the batch size of a forward pass or the
number of threads of an operation changes the floating-point result (none seen on real weights:
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
import threading
import time
import zlib

from .noise import Chunk, pick
from .topp import sampling_warpers

log = logging.getLogger(__name__)


def prompt_seed(seed: int, prompt: str) -> int:
    return (int(seed) * 1_000_003 + zlib.crc32(prompt.encode("utf-8"))) % (2**31 - 1)


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
    warpers = sampling_warpers(temperature, top_k, top_p)
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
