"""csbench.lm.generate: the sampling loop (stop pattern, finished rows dropped, last-position
logits) against the model.generate reference, seeded and order-independent, on tiny models."""
import re

import pytest

from csbench.lm.generate import prompt_seed, sample_completions

KW = dict(max_new_tokens=10, temperature=0.69, top_p=0.9, seed=3)
PROMPTS = ["One thing you bring to the beach is", "One sport is",
           "What do people eat? One answer is"]


def _reference(model, tokenizer, prompts, num_samples, *, max_new_tokens=20, temperature=1.0,
               top_p=1.0, top_k=0, seed=0, chunk=100, stats=None):
    """The samples the loop reproduces: transformers' ``model.generate`` per prompt and chunk of
    ``chunk`` sequences after ``torch.manual_seed(prompt_seed(seed, prompt))``, every sequence to
    EOS or ``max_new_tokens`` (the sampler before the decoding loop). ``stats``: sampled_tokens,
    samples, and short_chunks (chunks that ended before ``max_new_tokens``: all at EOS)."""
    import torch

    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    device = next(model.parameters()).device
    counts = {"sampled_tokens": 0, "samples": 0, "short_chunks": 0}
    out = []
    for prompt in prompts:
        inp = torch.tensor([tokenizer.encode(prompt) or [tokenizer.eos_token_id]], device=device)
        torch.manual_seed(prompt_seed(seed, prompt))
        texts, left = [], int(num_samples)
        while left > 0:
            n = min(chunk, left)
            with torch.no_grad():
                gen = model.generate(
                    input_ids=inp, attention_mask=torch.ones_like(inp), do_sample=True,
                    temperature=temperature, top_p=top_p, top_k=top_k or None,
                    max_new_tokens=max_new_tokens, num_return_sequences=n, pad_token_id=pad)
            new = gen.shape[1] - inp.shape[1]
            counts["sampled_tokens"] += n * new
            counts["samples"] += n
            counts["short_chunks"] += new < max_new_tokens
            texts.extend(tokenizer.batch_decode(gen[:, inp.shape[1]:], skip_special_tokens=True))
            left -= n
        out.append(texts)
    if stats is not None:
        stats.update(counts)
    return out


def _cut(text, stop):
    m = stop.search(text)
    return text[: m.start()] if m else text


@pytest.fixture(scope="module")
def gpt2(tiny_lm_dir):
    from csbench.models.load import load_causal_lm

    return load_causal_lm(tiny_lm_dir, "cpu", "float32")


def _from_config(tok, model_type, **kw):
    """A random model of ``model_type`` sharing the tiny tokenizer (built in process)."""
    import torch
    import transformers

    cfg = transformers.AutoConfig.for_model(
        model_type, vocab_size=len(tok), bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id, **kw)
    torch.manual_seed(0)
    return transformers.AutoModelForCausalLM.from_config(cfg).eval()


@pytest.fixture(scope="module")
def models(gpt2, tiny_neox_dir):
    from csbench.models.load import load_causal_lm

    model, tok = gpt2
    gemma = _from_config(tok, "gemma3_text", hidden_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, head_dim=32,
                         intermediate_size=128, sliding_window=4,
                         layer_types=["sliding_attention", "full_attention"])
    llama = _from_config(tok, "llama", hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                         num_key_value_heads=1, intermediate_size=128)
    return {"gpt2": (model, tok), "neox": load_causal_lm(tiny_neox_dir, "cpu", "float32"),
            "gemma3": (gemma, tok), "llama": (llama, tok)}


@pytest.mark.parametrize("arch,max_batch", [("gpt2", 512), ("gpt2", 3), ("gpt2", 6),
                                            ("neox", 512), ("gemma3", 512), ("llama", 512)])
def test_same_texts_as_generate(models, arch, max_batch):
    """Without a stop pattern the loop returns exactly the reference's texts (same random
    stream); chunks smaller than the sample count exercise the stream across chunks, decoded
    together (max_batch 512, 6) or one after the other (3)."""
    model, tok = models[arch]
    ref = _reference(model, tok, PROMPTS[:2], 7, chunk=3, **KW)
    assert sample_completions(model, tok, PROMPTS[:2], 7, chunk=3, max_batch=max_batch,
                              **KW) == ref


@pytest.mark.parametrize("arch", ["gpt2", "gemma3"])
def test_stop_pattern_cuts_and_keeps_answers(models, arch):
    """Each sample stops once its text contains a stop match; after cutting at the match the
    answers are the reference's (which generated all max_new_tokens tokens)."""
    model, tok = models[arch]
    stop = re.compile("[ae]")
    stats, ref_stats = {}, {}
    ref = _reference(model, tok, PROMPTS, 9, chunk=4, stats=ref_stats, **KW)
    new = sample_completions(model, tok, PROMPTS, 9, chunk=4, stop=stop, stats=stats, **KW)
    stopped = 0
    for r_texts, n_texts in zip(ref, new):
        assert [_cut(t, stop) for t in n_texts] == [_cut(t, stop) for t in r_texts]
        for r, n in zip(r_texts, n_texts):
            assert r.startswith(n)           # the reference's text, ended early
            stopped += bool(stop.search(n)) and len(n) < len(r)
    assert stopped > len(PROMPTS) * 9 // 2
    assert stats["sampled_tokens"] < ref_stats["sampled_tokens"]
    assert stats["samples"] == ref_stats["samples"] == len(PROMPTS) * 9


def test_protoqa_sentence_end(gpt2, tiny_lm_dir):
    """The ProtoQA cut: with the sentence ends as stop strings (what the workflow passes, through
    csbench.lm.backend.sample) every returned text ends at its first sentence end, and the answers
    are the reference's."""
    from csbench.lm.backend import sample
    from csbench.protoqa.baseline import SENTENCE_END, SENTENCE_ENDS, clean_completion

    assert all((SENTENCE_END.search(chr(c)) is not None) == (chr(c) in SENTENCE_ENDS)
               for c in range(0x3000))
    model, tok = gpt2
    ref = _reference(model, tok, PROMPTS, 6, chunk=4, **KW)
    new = sample(tiny_lm_dir, PROMPTS, 6, lm={"device": "cpu", "dtype": "float32"}, chunk=4,
                 stop=SENTENCE_ENDS, **KW)
    assert new == sample_completions(model, tok, PROMPTS, 6, chunk=4, stop=SENTENCE_END, **KW)
    for r_texts, n_texts in zip(ref, new):
        assert [clean_completion(t) for t in n_texts] == [clean_completion(t) for t in r_texts]
        for n in n_texts:
            m = SENTENCE_END.search(n)
            assert m is None or not SENTENCE_END.search(n, m.end())


def test_finished_rows_leave_the_batch(gpt2):
    """Forward passes after a row has stopped no longer include it; EOS ends a row as well."""
    model, tok = gpt2
    rows = []
    hook = model.register_forward_pre_hook(
        lambda mod, args, kw: rows.append(kw["input_ids"].shape[0]), with_kwargs=True)
    try:
        stats = {}
        out = sample_completions(model, tok, ["One sport is"], 8, chunk=8,
                                 stop=re.compile("[kmwy]"), stats=stats, **KW)
    finally:
        hook.remove()
    assert rows[0] == 1                                  # the prompt: once, batch 1
    assert len(rows) > 2 and rows[1:] == sorted(rows[1:], reverse=True)
    assert rows[-1] < rows[1] <= 8
    assert stats["decode_tokens"] == sum(rows[1:])
    assert stats["prompt_tokens"] == len(tok.encode("One sport is"))
    assert len(out[0]) == 8


def test_eos_ends_rows_and_chunks(gpt2):
    """With many EOS ids, whole chunks end early: texts and the stream of the following chunks
    stay those of the reference."""
    model, tok = gpt2
    old = model.generation_config.eos_token_id
    model.generation_config.eos_token_id = list(range(5, len(tok), 3))
    try:
        ref_stats = {}
        ref = _reference(model, tok, PROMPTS, 8, chunk=2, stats=ref_stats, **KW)
        stats = {}
        new = sample_completions(model, tok, PROMPTS, 8, chunk=2, stats=stats, **KW)
    finally:
        model.generation_config.eos_token_id = old
    assert ref_stats["short_chunks"] > 0 and stats["redecoded_chunks"] > 0
    assert new == ref


def test_cut_flags_mark_exactly_the_samples_the_budget_ended(gpt2):
    """``cut``: per sample, whether max_new_tokens ended it. With one chunk per prompt the random
    stream does not depend on the budget, so the same sample with a larger budget goes on
    exactly when it was cut, and one that ended at EOS or a stop match is the same text. Many
    EOS ids and a frequent stop pattern make all three endings occur."""
    model, tok = gpt2
    stop = re.compile("e")
    kw = dict(temperature=0.69, top_p=0.9, seed=3, chunk=60, stop=stop)
    old = model.generation_config.eos_token_id
    model.generation_config.eos_token_id = list(range(300))
    try:
        cut, more = [], []
        short = sample_completions(model, tok, PROMPTS[:2], 60, max_new_tokens=4, cut=cut, **kw)
        longer = sample_completions(model, tok, PROMPTS[:2], 60, max_new_tokens=7, cut=more,
                                    **kw)
    finally:
        model.generation_config.eos_token_id = old
    assert [len(c) for c in cut] == [60, 60]
    flat = [(s, c) for texts, flags in zip(short, cut) for s, c in zip(texts, flags)]
    assert all(isinstance(c, bool) for _, c in flat)
    for texts, long_texts, flags in zip(short, longer, cut):
        assert flags == [t != u for t, u in zip(texts, long_texts)]
    assert sum(c for _, c in flat) > 0                                     # cut by the budget
    assert sum(not c and stop.search(s) is not None for s, c in flat) > 0  # at a stop match
    assert sum(not c and stop.search(s) is None for s, c in flat) > 0      # at EOS
    assert not any(c and stop.search(s) for s, c in flat)


def test_cut_flags_across_chunks_and_workers(gpt2):
    """Several chunks decoded together, prompts in workers: the flags are the same, and a cut
    sample holds no stop match."""
    model, tok = gpt2
    stop = re.compile("[ae]")
    runs = []
    for workers in (1, 2):
        cut = []
        texts = sample_completions(model, tok, PROMPTS, 9, chunk=4, max_new_tokens=3, stop=stop,
                                   cut=cut, workers=workers, **{k: v for k, v in KW.items()
                                                                if k != "max_new_tokens"})
        runs.append((texts, cut))
    assert runs[0] == runs[1]
    texts, cut = runs[0]
    assert 0 < sum(map(sum, cut)) < 27
    assert all(stop.search(t) is None for ts, cs in zip(texts, cut) for t, c in zip(ts, cs) if c)


def test_last_position_logits_only(models):
    """The output layer sees the last position only, in the prefill and in every step, and the
    model is asked for logits_to_keep=1 (Gemma-3's 262k-entry vocabulary makes the head costly)."""
    for arch in ("gpt2", "gemma3"):
        model, tok = models[arch]
        head_rows, keep = [], []
        h1 = model.get_output_embeddings().register_forward_pre_hook(
            lambda mod, args: head_rows.append(tuple(args[0].shape[:-1])))
        h2 = model.register_forward_pre_hook(
            lambda mod, args, kw: keep.append(kw.get("logits_to_keep")), with_kwargs=True)
        try:
            sample_completions(model, tok, ["One thing you bring to the beach is"], 4, chunk=4,
                               **KW)
        finally:
            h1.remove()
            h2.remove()
        assert keep and all(k == 1 for k in keep)
        assert head_rows[0] == (1, 1)                    # prefill of a multi-token prompt
        assert all(r[1] == 1 for r in head_rows)


def test_seeded_deterministic_order_independent(gpt2):
    model, tok = gpt2
    stop = re.compile("[ae]")
    a = sample_completions(model, tok, PROMPTS, 5, chunk=2, stop=stop, **KW)
    b = sample_completions(model, tok, PROMPTS, 5, chunk=2, stop=stop, **KW)
    assert a == b
    c = sample_completions(model, tok, PROMPTS[::-1], 5, chunk=2, stop=stop, **KW)
    assert c == a[::-1]
    d = sample_completions(model, tok, [PROMPTS[1]], 5, chunk=2, stop=stop, **KW)
    assert d == [a[1]]
    other = sample_completions(model, tok, PROMPTS, 5, chunk=2, stop=stop, **{**KW, "seed": 4})
    assert other != a


@pytest.mark.parametrize("top_p", [0.9, 0.5, 0.99])
def test_top_p_equals_transformers_warper(top_p):
    """The faster top-p gives transformers' TopPLogitsWarper result bit for bit, ties at the
    cut-off included (such rows go to the warper itself)."""
    import torch
    from transformers.generation.logits_process import TopPLogitsWarper

    from csbench.lm.topp import TopP

    torch.manual_seed(0)
    for scale in (0.5, 3.0, 30.0):
        x = torch.randn(40, 3000) * scale
        x[1] = 0.0                                      # every value tied
        x[2, :1500], x[2, 1500:] = 1.0, 2.0             # two tied blocks
        x[3] = torch.round(x[3])                        # many ties
        x[4, :10] = float("-inf")                       # (after a top-k warper)
        assert torch.equal(TopP(top_p)(None, x.clone()), TopPLogitsWarper(top_p)(None, x.clone()))


def test_top_p_certain_rows_and_the_cut_off_edge():
    """Rows decided without sorting (certain_cut) give the warper's result; rows whose cut-off
    sits too close to 1 - top_p to be certain are sorted: a row family sweeping the tail mass
    across 0.1 in steps far below the bounds is equal to the warper everywhere, decided without
    sorting away from the switch and sorted next to it; peaked rows of a large vocabulary are
    decided without sorting, flat ones (cut-off past the 256 largest) are not."""
    import math

    import torch
    from transformers.generation.logits_process import TopPLogitsWarper

    from csbench.lm.topp import TopP, certain_cut

    g = torch.Generator().manual_seed(0)
    vocab = 2000
    base = torch.rand(vocab, generator=g) * 1e-3               # a tail of distinct values
    crit = math.log((vocab - 3) * 9 / 3)                       # tail mass 0.1 at this height
    x = base.repeat(301, 1)
    x[:, :3] += (crit + torch.linspace(-3e-4, 3e-4, 301, dtype=torch.float64)).float()[:, None]
    ref = TopPLogitsWarper(0.9)(None, x.clone())
    assert torch.equal(TopP(0.9)(None, x.clone()), ref)
    sure = ~torch.isnan(certain_cut(x, 0.9)[:, 0])
    kept = (ref > -float("inf")).sum(dim=-1)
    switch = [i for i in range(1, len(kept)) if kept[i] != kept[i - 1]]
    assert switch and sure.any()
    for i in switch:
        assert not sure[i - 1] and not sure[i]
    y = torch.randn(6, 50_000, generator=g)
    y[:3] *= 30                                                # peaked: a few tokens kept
    assert torch.equal(TopP(0.9)(None, y.clone()), TopPLogitsWarper(0.9)(None, y.clone()))
    assert (~torch.isnan(certain_cut(y, 0.9)[:, 0])).tolist() == [True] * 3 + [False] * 3


@pytest.mark.parametrize("raw", [False, True])
def test_pick_equals_full_argmax(raw):
    """The choice restricted to each row's non-zero probabilities is torch.multinomial's
    argmax(probs / noise) over the whole row, an exact-zero variate included (0 / 0 = NaN wins),
    from float variates or from raw int64 draws (the variates exponential_ makes of them)."""
    import math

    import torch

    from csbench.lm.noise import pick

    g = torch.Generator().manual_seed(1)
    probs = torch.softmax(torch.randn(4, 500, generator=g) * 3, dim=-1)
    probs[probs < 1e-3] = 0                             # what top-p leaves
    probs[3, 7] = probs[3, 9] = 0.5                    # a tie: the first index wins
    rows = [0, 0, 1, 2, 3, 3, 1]
    state = g.get_state()
    noise = torch.empty(len(rows), 500).exponential_(1, generator=g)
    g.set_state(state)
    bits = torch.empty(len(rows), 500, dtype=torch.int64).random_(generator=g)
    zero_at = int((probs[1] == 0).nonzero()[0])
    noise[2, zero_at], bits[2, zero_at] = 0.0, 1 << 60
    full = (probs[torch.tensor(rows)] / noise).argmax(dim=-1).tolist()
    assert full[2] == zero_at
    bits[4, 11] = 1 << 40                              # low 32 bits 0, not a 0 variate
    noise[4, 11] = -math.log1p(-(1 << 40) / 2.0 ** 53)
    full = (probs[torch.tensor(rows)] / noise).argmax(dim=-1).tolist()
    src = bits if raw else noise
    parts = [(src[:3], 0), (src[3:], 3)]
    assert pick(probs, rows, parts, lambda i: noise[i]) == full


@pytest.mark.parametrize("planned", [False, True])
def test_chunk_draws_are_multinomials_stream(planned):
    """A chunk's draws for some of its rows (raw bits, their variates, exponential_ redrawn
    for a row) and the state after it are those of drawing the whole chunk every step."""
    import torch

    from csbench.lm.noise import Chunk, variates

    n, vocab, steps = 4, 3000, 3
    g = torch.Generator().manual_seed(9)
    start = g.get_state()
    ref = [torch.empty(n, vocab).exponential_(1, generator=g) for _ in range(steps)]
    after = g.get_state()
    ch = Chunk(n, start, vocab, "cpu", followed=True)
    assert ch.raw
    if planned:
        assert torch.equal(ch.plan(steps), after)
    for step, rows in enumerate([[1, 3], [0, 1, 2, 3], [2]]):
        got = ch.draw(rows)
        f, sure = variates(got)
        assert torch.equal(f[sure], ref[step][rows][sure])
        for k, r in enumerate(rows):
            assert torch.equal(ch.exact(k), ref[step][r])
    ch.finish(steps)
    assert torch.equal(ch.end, after)


def test_raw_draws_equal_drawn_variates(gpt2, monkeypatch):
    """Raw draws (variates only where needed, finished rows skipped) where the torch build
    allows them; the samples are the same as when every variate is drawn."""
    from csbench.lm import noise

    model, tok = gpt2
    stop = re.compile("[kmwy]")
    assert noise.raw_ok("cpu")
    a = sample_completions(model, tok, PROMPTS, 7, chunk=3, stop=stop, **KW)
    monkeypatch.setattr(noise, "raw_ok", lambda device: False)   # every variate drawn
    assert sample_completions(model, tok, PROMPTS, 7, chunk=3, stop=stop, **KW) == a


def test_scorer_generate_stops_at_stop_strings(tiny_lm_dir):
    """The local scorer's generate hands its stop strings to the sampler: same texts as cutting
    the full samples of the reference."""
    from csbench.lm import open_scorer
    from csbench.lm.base import cut_at_stop

    s = open_scorer(tiny_lm_dir, {"device": "cpu", "dtype": "float32"})
    kw = dict(max_new_tokens=8, temperature=0.69, top_p=0.9, seed=2)
    out = s.generate(PROMPTS[:2], num_samples=5, stop=("e", "\n"), **kw)
    ref = _reference(s.model, s.tokenizer, PROMPTS[:2], 5, **kw)
    assert out == [cut_at_stop(x, ("e", "\n")) for x in ref]


def test_prompts_in_workers_give_the_same_samples(gpt2):
    """Prompts sampled side by side in worker threads (one-thread operations each) give the
    samples and counts of one prompt after the other; the thread setting is restored."""
    import torch

    model, tok = gpt2
    stop = re.compile("[kmwy]")
    threads = torch.get_num_threads()
    one, three = {}, {}
    a = sample_completions(model, tok, PROMPTS, 7, chunk=3, stop=stop, stats=one, workers=1,
                           **KW)
    b = sample_completions(model, tok, PROMPTS, 7, chunk=3, stop=stop, stats=three, workers=3,
                           **KW)
    assert a == b
    assert {k: v for k, v in one.items() if k != "seconds"} == \
        {k: v for k, v in three.items() if k != "seconds"}
    assert torch.get_num_threads() == threads


def test_global_rng_untouched(gpt2):
    import torch

    model, tok = gpt2
    torch.manual_seed(123)
    x = torch.rand(3)
    torch.manual_seed(123)
    sample_completions(model, tok, PROMPTS[:1], 3, chunk=3, **KW)
    assert torch.equal(torch.rand(3), x)


def test_progress_logged(gpt2, caplog):
    import logging

    model, tok = gpt2
    with caplog.at_level(logging.INFO):
        sample_completions(model, tok, PROMPTS[:2], 3, chunk=3, **KW)
    msgs = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("sampling: 6 samples of 6 samples") for m in msgs)
    assert any("tokens sampled" in m for m in msgs)
