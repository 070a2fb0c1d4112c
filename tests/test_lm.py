"""The shared LM scoring engine: lm-eval tokenisation, exactness, batch invariance, OOM backoff, cache."""
from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from csbench.lm import RequestError, encode_pair, open_scorer

REQS = [
    ("The cat sat on the", " mat."),
    ("The cat sat on the", " hat"),          # shares the context (single-token reuse)
    ("The cat sat on the ", "rug"),          # trailing space moves to the continuation
    ("Hello", " world, and a rather longer continuation of several tokens."),
    ("", "A text scored from the end-of-text token."),
    ("Sarah was a better surgeon than Maria so Sarah", " always got the easier cases."),
    ("Sarah was a better surgeon than Maria so Maria", " always got the easier cases."),
    ("x" * 5, " y"),
] * 2


def local(model_dir, cache_dir=None, **kw):
    """A local scorer through open_scorer (the only way in), on CPU: ``lm`` settings
    (batch_size, max_batch_size, dtype) and engine options (max_length, share_prefix, ...)."""
    lm = {k: kw.pop(k) for k in ("batch_size", "max_batch_size", "dtype") if k in kw}
    return open_scorer(model_dir, {"device": "cpu", **lm}, cache_dir, **kw)


def naive(scorer, context, continuation):
    """Reference: one unbatched forward pass, full-vocabulary log-softmax."""
    ctx, cont = scorer.encode(context, continuation)
    ids = torch.tensor([ctx + cont][0][:-1])[None]
    with torch.no_grad():
        logp = torch.log_softmax(scorer.model(ids).logits[0].float(), -1)
    start = len(ctx) - 1
    return sum(logp[start + k, t].item() for k, t in enumerate(cont)), len(cont)


@pytest.fixture(scope="module")
def scorer(tiny_lm_dir):
    return local(tiny_lm_dir, batch_size=4)


def test_encode_pair_follows_the_harness(scorer):
    tok = scorer.tokenizer
    ctx, cont = encode_pair(tok, "The cat sat on the ", "rug", 0)
    assert ctx == tok.encode("The cat sat on the")
    assert ctx + cont == tok.encode("The cat sat on the rug")
    ctx, cont = encode_pair(tok, "", "Only text", 7)
    assert ctx == [7] and cont == tok.encode("Only text")


def lm_eval_empty_context(tok, prefix_token_id, continuation):
    """lm-evaluation-harness 0.4.13's token ids of ("", continuation) (TemplateLM.loglikelihood,
    lm_eval/api/model.py), copied as the reference."""
    continuation_enc = tok.encode(continuation, add_special_tokens=False)
    return (([prefix_token_id], continuation_enc) if prefix_token_id != continuation_enc[0]
            else (continuation_enc[:1], continuation_enc[1:]))


@pytest.mark.parametrize("fixture", ["tiny_lm_dir", "tiny_bos_lm_dir"])
def test_empty_context_follows_lm_eval(fixture, request):
    """An empty context: the prefix token, then the continuation WITHOUT special tokens (a
    tokenizer that adds a start token adds none there); a continuation that starts with the
    prefix token has it as its context. Same ids from encode_pair, encode and encode_many, and
    the scores are those of these ids."""
    s = local(request.getfixturevalue(fixture), batch_size=4)
    tok, bos = s.tokenizer, s.encoder.prefix_token_id
    adds_bos = fixture == "tiny_bos_lm_dir"
    assert (tok.encode(" cat")[0] == bos) == adds_bos  # the fixture's tokenizer does what it says
    reqs = [("", " cat sat"), ("", "Only text"), ("", tok.bos_token + " cat"),
            ("The cat", " sat"), ("", " cat sat")]
    want = [lm_eval_empty_context(tok, bos, x) for _, x in reqs[:3]]
    assert want[0][0] == [bos] and want[0][1] == tok.encode(" cat sat", add_special_tokens=False)
    assert bos not in want[0][1]
    assert want[2] == ([bos], tok.encode(" cat", add_special_tokens=False))  # its own start token
    got = s.encode_many(reqs)
    assert got[:3] == want and got[4] == want[0]
    assert [encode_pair(tok, c, x, bos) for c, x in reqs[:3]] == want
    assert [s.encode(c, x) for c, x in reqs[:3]] == want
    assert (got[3][0][0] == bos) == adds_bos  # a non-empty context: the tokenizer's default
    scores = s.loglikelihood(reqs)
    for (c, x), (lp, n), (_, cont) in zip(reqs, scores, got):
        ref_lp, ref_n = naive(s, c, x)
        assert n == ref_n == len(cont) and abs(lp - ref_lp) <= 1e-5


def test_empty_context_with_nothing_to_score_is_refused(tiny_lm_dir):
    """A continuation that is only the prefix token leaves no continuation tokens (lm-eval
    fails on it too): refused naming the request."""
    s = local(tiny_lm_dir)
    assert encode_pair(s.tokenizer, "", s.tokenizer.bos_token, s.encoder.prefix_token_id)[1] == []
    with pytest.raises(RequestError, match="request 1: .*the continuation has no tokens"):
        s.loglikelihood([("", " cat"), ("", s.tokenizer.bos_token)])


@pytest.mark.parametrize("fixture", ["tiny_lm_dir", "tiny_neox_dir"])
def test_matches_unbatched_full_forward(fixture, request):
    s = local(request.getfixturevalue(fixture), batch_size=3)
    got = s.loglikelihood(REQS)
    for (c, x), (lp, n) in zip(REQS, got):
        ref_lp, ref_n = naive(s, c, x)
        assert n == ref_n
        assert abs(lp - ref_lp) <= 1e-5


def test_batch_size_and_order_invariance(tiny_lm_dir):
    base = local(tiny_lm_dir, batch_size=1).loglikelihood(REQS)
    order = list(range(len(REQS)))
    random.Random(1).shuffle(order)
    for bs in (2, 5, "auto"):
        s = local(tiny_lm_dir, batch_size=bs)
        got = s.loglikelihood([REQS[i] for i in order])
        for j, i in enumerate(order):
            assert got[j][1] == base[i][1]
            assert abs(got[j][0] - base[i][0]) <= 1e-5
    again = local(tiny_lm_dir, batch_size=1).loglikelihood(REQS)
    assert again == base  # deterministic


def test_logits_only_at_continuation_positions_and_shared_contexts(scorer):
    seen = []
    h = scorer.engine.forward.head.register_forward_hook(lambda m, i, o: seen.append(i[0].shape[0]))
    try:
        scorer.stats.update(rows=0)
        reqs = REQS[:8] + [("The dog sat on", " the"), ("The dog sat on", " a")]
        assert all(len(scorer.encode(*r)[1]) == 1 for r in reqs[-2:])
        out = scorer.loglikelihood(reqs)
    finally:
        h.remove()
    n_cont = sum(n for _, n in out)
    assert sum(seen) <= n_cont  # never vocabulary logits at context positions
    assert scorer.stats["rows"] == len(reqs) - 1  # the two one-token continuations share a row


def test_shared_prefixes_match_unshared(tiny_neox_dir):
    plain = local(tiny_neox_dir, batch_size=3, share_prefix=False)
    shared = local(tiny_neox_dir, batch_size=3)
    a, b = plain.loglikelihood(REQS), shared.loglikelihood(REQS)
    assert shared.stats["shared_groups"] >= 2 and plain.stats["shared_groups"] == 0
    assert shared.stats["forward_tokens"] < plain.stats["forward_tokens"]
    assert all(abs(x[0] - y[0]) <= 1e-5 and x[1] == y[1] for x, y in zip(a, b))


def test_oom_backoff_gives_same_numbers(tiny_lm_dir, monkeypatch):
    ref = local(tiny_lm_dir, batch_size=1).loglikelihood(REQS)
    s = local(tiny_lm_dir, batch_size="auto", max_batch_size=16)
    real = s.engine.forward.body

    def flaky(ids, **kw):
        if ids.shape[0] > 2:
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return real(ids, **kw)

    monkeypatch.setattr(s.engine.forward, "body", flaky)
    got = s.loglikelihood(REQS)
    assert s.stats["oom_backoffs"] >= 1 and s.engine.batcher.auto_size <= 2
    assert all(abs(a[0] - b[0]) <= 1e-5 and a[1] == b[1] for a, b in zip(got, ref))


def test_fixed_batch_size_does_not_hide_errors(tiny_lm_dir, monkeypatch):
    s = local(tiny_lm_dir, batch_size=4)
    monkeypatch.setattr(s.engine.forward, "body", lambda ids, **kw: (_ for _ in ()).throw(
        torch.OutOfMemoryError("out of memory")))
    with pytest.raises(torch.OutOfMemoryError):
        s.loglikelihood(REQS[:2])


def test_cache_per_model_key_and_request(tiny_lm_dir, tmp_path):
    keys = [f"ds/orig/{i}" for i in range(len(REQS))]
    s1 = local(tiny_lm_dir, tmp_path)
    first = s1.loglikelihood(REQS, keys=keys)
    s2 = local(tiny_lm_dir, tmp_path)
    second = s2.loglikelihood(REQS, keys=keys)
    assert second == first and s2.stats["cached"] == len(REQS) and s2.stats["unique"] == 0
    changed = s2.loglikelihood([("The cat sat on the", " sofa")], keys=[keys[0]])
    assert s2.stats["unique"] == 1 and changed[0] != first[0]  # edited item text is rescored


def test_open_scorer_and_generate(tiny_lm_dir, tmp_path):
    lm = {"device": "cpu", "dtype": "float32", "batch_size": 2, "max_batch_size": 8}
    s = open_scorer(tiny_lm_dir, lm, tmp_path / "lm")
    assert s.backend == "local" and s.compute() == {"compute_device": "cpu",
                                                    "compute_dtype": "float32"}
    assert s.engine.batcher.batch_size == 2 and s.engine.batcher.max_batch_size == 8
    assert s.cache is not None
    out = s.generate(["Name something", "Q"], max_new_tokens=4, num_samples=3, seed=1)
    assert len(out) == 2 and all(len(x) == 3 and all(isinstance(t, str) for t in x) for x in out)
    with pytest.raises(ValueError):
        s.loglikelihood([("a", "")])


def test_prefix_sharing_falls_back_when_unsupported(tiny_lm_dir, monkeypatch):
    ref = local(tiny_lm_dir, share_prefix=False).loglikelihood(REQS)
    s = local(tiny_lm_dir)
    monkeypatch.setattr(s.engine.tree, "run", lambda *a: (_ for _ in ()).throw(
        NotImplementedError("no cache reuse")))
    got = s.loglikelihood(REQS)
    assert not s.engine.share_prefix
    assert all(abs(a[0] - b[0]) <= 1e-5 and a[1] == b[1] for a, b in zip(got, ref))


def test_long_shared_prefix_groups_are_capped(tiny_lm_dir):
    shot = "Q: Is it alive? A: yes. " * 6
    reqs = [(f"{shot}Q: Is thing {i} big? A:", a) for i in range(12) for a in (" yes", " no")]
    s = local(tiny_lm_dir, batch_size=4)
    got = s.loglikelihood(reqs)
    ref = local(tiny_lm_dir, batch_size=4, share_prefix=False).loglikelihood(reqs)
    assert s.stats["shared_groups"] >= 3  # 12 rows, at most 4 per group
    assert all(abs(a[0] - b[0]) <= 1e-5 for a, b in zip(got, ref))


TWINS = [  # WinoGrande-like twins: partial-evaluation requests branching at the option and after
    (f"The trophy does not fit in the suitcase because the {o}", f" is too {w}.")
    for o in ("trophy", "suitcase") for w in ("big", "small")
] + [("The trophy does not fit in the box", " at all, sadly."), ("Totally unrelated", " text")]


@pytest.mark.parametrize("fixture", ["tiny_lm_dir", "tiny_neox_dir"])
@pytest.mark.parametrize("mode", ["sdpa", "eager", "kv"])
def test_tree_attention_matches_unshared(fixture, mode, request):
    d = request.getfixturevalue(fixture)
    ref = local(d, batch_size=2, share_prefix=False).loglikelihood(TWINS)
    s = local(d, batch_size=2)
    if mode == "kv":
        s.engine.tree.enabled = False
    else:
        s.engine.forward.attn_impl = mode  # eager: additive float mask instead of the boolean one
    calls = []
    real = s.engine.forward.body
    s.engine.forward.body = lambda ids, **kw: calls.append(ids.shape) or real(ids, **kw)
    got = s.loglikelihood(TWINS)
    assert s.stats["shared_groups"] >= 1
    for (lp, n), (rlp, rn) in zip(got, ref):
        assert n == rn and abs(lp - rlp) <= 1e-5
    if mode != "kv":  # one forward pass per batch (+2 for the one-off check); shared once
        assert s.engine.tree.enabled and s.engine.tree.checked
        assert len(calls) == s.stats["batches"] + 2
        assert s.stats["forward_tokens"] < sum(len(sum(s.encode(*r), [])) - 1 for r in TWINS)


def test_fused_gelu_equals_gelu_new():
    from transformers.activations import GELUTanh, NewGELUActivation

    x = torch.linspace(-6, 6, 10001)
    assert torch.allclose(GELUTanh()(x), NewGELUActivation()(x), atol=1e-6, rtol=0)


def test_tree_attention_disabled_when_the_model_disagrees(tiny_lm_dir):
    ref = local(tiny_lm_dir, share_prefix=False).loglikelihood(TWINS)
    s = local(tiny_lm_dir)
    real = s.engine.tree.forward_tries

    def broken(groups, **kw):  # e.g. a model that ignores position_ids / the 4-D mask
        hidden, *rest = real(groups, **kw)
        return (hidden + 1.0, *rest)

    s.engine.tree.forward_tries = broken
    got = s.loglikelihood(TWINS)
    assert s.engine.tree.checked and not s.engine.tree.enabled and s.stats["shared_groups"] >= 1
    assert all(abs(a[0] - b[0]) <= 1e-5 and a[1] == b[1] for a, b in zip(got, ref))


def twin_texts():
    return [c + w for c, w in TWINS]


def test_token_stats_share_prefixes_on_the_kv_path(tiny_lm_dir):
    """A model without tree attention: per-token statistics of prefix groups through the KV
    cache, the prefix's positions read from its own pass, with the numbers of unshared rows."""
    texts = twin_texts()
    ref = local(tiny_lm_dir, share_prefix=False).token_stats(texts)
    s = local(tiny_lm_dir)
    s.engine.tree.enabled = False
    got = s.token_stats(texts)
    assert s.stats["shared_groups"] >= 1
    for a, b in zip(got, ref):
        assert a.n == b.n
        for name in ("lp", "mu", "sigma"):
            assert np.allclose(getattr(a, name), getattr(b, name), atol=1e-5, rtol=0), name


@pytest.mark.parametrize("broken", [False, True])
def test_token_stats_share_prefixes_as_tries(tiny_lm_dir, broken):
    """Per-token statistics score every token, the shared prefix's too: twins run as tries
    (each shared position through the output layer once) with the numbers of unshared rows; a
    model whose tree attention fails its check runs those groups as plain rows, never on the
    KV-cache path (which scores only after its prefix)."""
    texts = twin_texts()
    ref = local(tiny_lm_dir, share_prefix=False).token_stats(texts)
    s = local(tiny_lm_dir)
    if broken:
        real = s.engine.tree.forward_tries
        s.engine.tree.forward_tries = lambda g, **kw: (lambda h, *r: (h + 1.0, *r))(
            *real(g, **kw))

        def no_kv(*a, **kw):
            raise AssertionError("the KV-cache path scores only after its prefix")

        s.engine.kv.run = no_kv
    got = s.token_stats(texts)
    assert s.stats["shared_groups"] >= 1 if not broken else not s.engine.tree.enabled
    for a, b in zip(got, ref):
        assert a.n == b.n
        for name in ("lp", "mu", "sigma"):
            assert np.allclose(getattr(a, name), getattr(b, name), atol=1e-5, rtol=0), name


def test_trie_groups_join_rows_sharing_a_prefix_with_the_previous_one():
    from csbench.lm.plan import Row, trie_groups

    rows = [Row(t, [(i, 0, t)]) for i, t in enumerate(
        [[1, 2, 3, 4, 5], [1, 2, 3, 4, 6], [1, 2, 3, 9], [1, 2, 3, 4, 5, 7], [8, 8]])]
    groups, singles = trie_groups(rows, 4)
    assert [[r.tokens for r in g] for _, g in groups] == [[[1, 2, 3, 4, 5], [1, 2, 3, 4, 5, 7],
                                                           [1, 2, 3, 4, 6]]]
    assert sorted(r.tokens for r in singles) == [[1, 2, 3, 9], [8, 8]]
    groups, singles = trie_groups(rows, 4, max_group=2)
    assert [len(g) for _, g in groups] == [2] and len(singles) == 3


def test_vocab_stats_equal_the_masked_formula():
    """In place and unmasked, the same numbers as sum p log p and sum p (log p - mu)^2 with
    0 log 0 = 0; a row with an impossible token (-inf) too."""
    from csbench.lm.forward import vocab_stats

    g = torch.Generator().manual_seed(0)
    logits = torch.randn(5, 300, generator=g) * 4
    logits[2, :7] = float("-inf")
    logp = torch.log_softmax(logits, -1)
    p = logp.exp()
    live = p > 0
    mu = torch.where(live, p * logp, torch.zeros_like(p)).sum(-1)
    dev = torch.where(live, logp - mu[:, None], torch.zeros_like(p))
    sigma = (p * dev * dev).sum(-1).sqrt()
    for rows in ([0, 1, 3, 4], [0, 1, 2, 3, 4]):
        got_mu, got_sigma = vocab_stats(logp[rows].clone())
        assert torch.allclose(got_mu, mu[rows], atol=1e-6) and torch.isfinite(got_mu).all()
        assert torch.allclose(got_sigma, sigma[rows], atol=1e-6)


def test_head_chunks_are_contiguous_and_large_enough():
    """The output layer's chunks cover the positions in order, each of ``step`` to
    ``2 step - 1`` rows (at least HEAD_MIN_ROWS, whatever the vocabulary), fewer only when
    there are fewer positions."""
    from csbench.lm.forward import HEAD_MIN_ROWS, head_chunks

    for n, vocab in ((1, 262144), (255, 262144), (256, 262144), (700, 262144),
                     (1023, 151936), (5000, 49152), (40, 300)):
        chunks = head_chunks(n, vocab)
        step = max(HEAD_MIN_ROWS, (1 << 24) // vocab)
        assert chunks[0][0] == 0 and chunks[-1][1] == n
        assert all(a[1] == b[0] for a, b in zip(chunks, chunks[1:]))
        assert all(step <= e - s < 2 * step for s, e in chunks) or chunks == [(0, n)]


def test_token_stats_do_not_depend_on_the_head_chunks(tiny_lm_dir, monkeypatch):
    """Per-token statistics with the output layer on chunks of 3 positions: the numbers of one
    chunk per batch, up to fp32 rounding (the GEMM's kernel depends on its row count)."""
    from csbench.lm import forward

    texts = twin_texts()
    ref = local(tiny_lm_dir).token_stats(texts)
    monkeypatch.setattr(forward, "head_chunks",
                        lambda n, vocab: [(a, min(a + 3, n)) for a in range(0, n, 3)])
    got = local(tiny_lm_dir).token_stats(texts)
    for a, b in zip(got, ref):
        for name in ("lp", "mu", "sigma"):
            assert np.allclose(getattr(a, name), getattr(b, name), atol=1e-5, rtol=0), name


def test_half_precision_checks_scale_with_the_hidden_states():
    """bf16 noise on large hidden states (Qwen2.5's |h| reach 70-100, one bf16 step 0.5) passes
    the one-off checks; a state off by its own size (a wrong mask) does not; float32 stays
    elementwise."""
    import torch

    from csbench.lm.precision import Precision

    g = torch.Generator().manual_seed(0)
    ref = torch.randn(3, 5, 64, generator=g) * 30
    ref[..., 0] = 100.0
    noisy = (ref + torch.randn(ref.shape, generator=g) * 0.5).bfloat16()
    bf16 = Precision(torch.nn.Linear(2, 2).bfloat16())
    fp32 = Precision(torch.nn.Linear(2, 2))
    assert (noisy.float() - ref).abs().max() > 0.5 + 5e-2 * 0.5  # elementwise 5e-2 would refuse
    assert bf16.agrees(noisy, ref, 1e-3)
    wrong = ref.clone()
    wrong[1, 2] = ref[2, 3]  # one position's state taken from another
    assert not bf16.agrees(wrong, ref, 1e-3)
    assert fp32.agrees(ref + 1e-5, ref, 1e-3) and not fp32.agrees(noisy.float(), ref, 1e-3)


@pytest.fixture(scope="module")
def tiny_llama_dir(tmp_path_factory):
    from csbench.models.random import build_random_model

    return build_random_model("tiny-llama", tmp_path_factory.mktemp("tiny-llama"))


@pytest.mark.parametrize("fixture", ["tiny_lm_dir", "tiny_neox_dir", "tiny_llama_dir"])
@pytest.mark.parametrize("mode", ["sdpa", "eager"])
def test_last_layer_only_at_scored_positions(fixture, mode, request):
    """The last decoder layer runs only where log-probs are read (plain rows and tries), with
    the same numbers as full passes, for GPT-2, GPT-NeoX and Llama layers."""
    from csbench.lm import lastlayer

    d = request.getfixturevalue(fixture)
    reqs = REQS + TWINS
    ref = local(d, batch_size=3)
    ref.engine.forward.scored_only = False
    want = ref.loglikelihood(reqs)
    s = local(d, batch_size=3)
    s.engine.forward.attn_impl = mode
    used = []
    real = lastlayer._LastLayerAt.__call__
    orig = lastlayer._LastLayerAt.__call__
    try:
        lastlayer._LastLayerAt.__call__ = lambda self, *a, **k: used.append(1) or real(self, *a, **k)
        got = s.loglikelihood(reqs)
    finally:
        lastlayer._LastLayerAt.__call__ = orig
    assert s.engine.forward.scored_only and s.engine.forward.scored_checked
    assert len(used) >= s.stats["batches"]
    assert s.stats["shared_groups"] >= 1
    for (lp, n), (rlp, rn) in zip(got, want):
        assert n == rn and abs(lp - rlp) <= 1e-5


def test_last_layer_swap_disabled_when_it_disagrees(tiny_neox_dir, monkeypatch):
    from csbench.lm import lastlayer

    want = local(tiny_neox_dir, share_prefix=False).loglikelihood(TWINS)
    real = lastlayer._LastLayerAt.__call__

    def broken(self, *a, **k):  # (noise, since the final norm ignores shifts and scales)
        out = real(self, *a, **k)
        return out + torch.randn(out.shape, generator=torch.Generator().manual_seed(0))

    monkeypatch.setattr(lastlayer._LastLayerAt, "__call__", broken)
    s = local(tiny_neox_dir)
    got = s.loglikelihood(TWINS)
    assert s.engine.forward.scored_checked and not s.engine.forward.scored_only
    assert all(abs(a[0] - b[0]) <= 1e-5 and a[1] == b[1] for a, b in zip(got, want))
    # the model's own layer list is restored after every call
    assert not any(isinstance(m, torch.nn.Module) and type(m).__name__ == "_Module"
                   for m in lastlayer.decoder_layers(s.engine.forward.base))


def test_plan_chunks_covers_rows_once_and_cuts_padding():
    from csbench.lm.lastlayer import plan_chunks

    sizes = [1, 1, 2, 2, 30, 31, 1, 2, 29, 3] * 4
    chunks = plan_chunks(sizes, penalty=16)
    assert sorted(i for c in chunks for i in c) == list(range(len(sizes)))
    padded = sum(len(c) * max(sizes[i] for i in c) for c in chunks)
    assert 1 < len(chunks) < len(sizes) and padded < 0.5 * len(sizes) * max(sizes)
    assert plan_chunks([5, 5, 5], penalty=16) == [[0, 1, 2]]
    assert plan_chunks([], penalty=16) == []


HEADER = "Answer with yes or no.\n\n"
QUESTIONS = ["Can a cat climb a tall tree in the garden", "Would water boil on a cold mountain top",
             "Is a violin louder than a drum in a small room", "Do penguins fly south every winter",
             "Should bread be kept in the freezer for weeks", "Are most rivers saltier than the sea",
             "Will ice melt faster in the sun than in shade", "Could a horse outrun a train",
             "Does paper burn more easily than wet wood"]
HEADED = [(HEADER + f"{q}, or not? Think about it.\nAnswer:", (" yes", " no")[i % 2])
          for i, q in enumerate(QUESTIONS)]


@pytest.mark.parametrize("fixture", ["tiny_lm_dir", "tiny_neox_dir"])
def test_common_header_runs_once_per_batch(fixture, request):
    """Prompts that differ after a shared instruction header (not enough for a prefix group):
    each batch runs the header once through the KV cache, with the same numbers."""
    d = request.getfixturevalue(fixture)
    plain = local(d, batch_size=4, share_prefix=False)
    shared = local(d, batch_size=4)
    a, b = plain.loglikelihood(HEADED), shared.loglikelihood(HEADED)
    assert all(abs(x[0] - y[0]) <= 1e-5 and x[1] == y[1] for x, y in zip(a, b))
    assert shared.stats["forward_tokens"] < plain.stats["forward_tokens"]
    for (c, x), (lp, n) in zip(HEADED, b):
        assert abs(lp - naive(shared, c, x)[0]) <= 1e-5
    off = local(d, batch_size=4, min_common_prefix=10_000)
    assert off.loglikelihood(HEADED)
    assert shared.stats["forward_tokens"] < off.stats["forward_tokens"] <= plain.stats["forward_tokens"]


def test_cached_scoring_commits_in_chunks(tiny_lm_dir, tmp_path, monkeypatch):
    """A job killed mid-way keeps the chunks it finished; the rerun scores only the rest and
    gets the numbers of an uninterrupted run."""
    whole = local(tiny_lm_dir, tmp_path / "a", commit_every=3)
    ref = whole.loglikelihood(HEADED)
    killed = local(tiny_lm_dir, tmp_path / "b", commit_every=3)
    real, calls = killed.engine.score, []

    def dies_on_third_chunk(enc):
        calls.append(len(enc))
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(enc)

    monkeypatch.setattr(killed.engine, "score", dies_on_third_chunk)
    with pytest.raises(KeyboardInterrupt):
        killed.loglikelihood(HEADED)
    again = local(tiny_lm_dir, tmp_path / "b", commit_every=3)
    assert again.loglikelihood(HEADED) == ref
    assert again.stats["cached"] == 6 and again.stats["unique"] == len(HEADED) - 6 > 0


def test_cpu_auto_batches_hold_fewer_long_rows(tiny_lm_dir, monkeypatch):
    """CPU, automatic batch size: long rows count by their tokens (same numbers as one per batch)."""
    from csbench.lm import batching
    from csbench.lm.plan import Row

    monkeypatch.setattr(batching, "CPU_ROW_TOKENS", 10)
    s = local(tiny_lm_dir, share_prefix=False)
    sizes = []
    real = s.engine.run_rows
    monkeypatch.setattr(s.engine, "run_rows", lambda b, out: (sizes.append(len(b)), real(b, out)))
    got = s.loglikelihood(HEADED)
    assert max(sizes) <= 8  # rows of 39-47 tokens count 3.9-4.7 of the 32
    ref = local(tiny_lm_dir, batch_size=1, share_prefix=False).loglikelihood(HEADED)
    assert all(abs(x[0] - y[0]) <= 1e-5 and x[1] == y[1] for x, y in zip(got, ref))
    fixed = local(tiny_lm_dir, batch_size=32)
    assert fixed.engine.batcher.row_weight(Row(list(range(500)))) == 1


# ---------------------------------------------------------------- the window (issue 29)
def harness(scorer, context, continuation, L):
    """lm-evaluation-harness 0.4's HFLM._loglikelihood_tokens for one request and window L."""
    ctx, cont = scorer.encode(context, continuation)
    assert len(cont) <= L  # the harness asserts it
    inp = (ctx + cont)[-(L + 1):][:-1]
    with torch.no_grad():
        logp = torch.log_softmax(scorer.model(torch.tensor([inp])).logits[0].float(), -1)
    rows = logp[len(inp) - len(cont):len(inp)]
    return sum(rows[k, t].item() for k, t in enumerate(cont)), len(cont)


LONG_CTX = " ".join(f"word{i}" for i in range(30))


def test_context_truncation_is_counted_logged_and_matches_the_harness(tiny_lm_dir, caplog):
    s = local(tiny_lm_dir, max_length=16)
    reqs = [(LONG_CTX, " and the end."), (LONG_CTX, " x"), ("Short", " fits.")] + REQS[:4]
    with caplog.at_level("WARNING", logger="csbench.lm.score"):
        got = s.loglikelihood(reqs, keys=[f"k{i}" for i in range(len(reqs))])
    for (c, x), (lp, n) in zip(reqs, got):
        ref_lp, ref_n = harness(s, c, x, 16)
        assert n == ref_n and abs(lp - ref_lp) <= 1e-5
    cut = sum(len(c) + len(x) > 17 for c, x in (s.encode(*r) for r in reqs))
    assert 2 <= cut < len(reqs) and s.stats["truncated"] == cut
    msg = "\n".join(r.getMessage() for r in caplog.records)
    assert (f"{cut} of 7 requests had their context left-truncated to fit the model's window of "
            "16 tokens (lm-evaluation-harness truncates the same way)") in msg
    assert "request 0 (key 'k0')" in msg
    again = local(tiny_lm_dir)  # the model's own window (512): nothing cut
    again.loglikelihood(reqs)
    assert again.stats["truncated"] == 0


def test_continuation_longer_than_the_window_is_an_error(tiny_lm_dir, tmp_path):
    from csbench.lm.base import RequestError

    s = local(tiny_lm_dir, max_length=16, cache_dir=tmp_path)
    _, cont = s.encode("Hello", " " + LONG_CTX)
    assert len(cont) > 16
    with pytest.raises(RequestError, match=rf"request 1 \(key 'wg/orig/7/2'\): context 'Hello', "
                                           rf"continuation ' word0 word1.*: the continuation is "
                                           rf"{len(cont)} tokens, longer than the model's window "
                                           "of 16 tokens"):
        s.loglikelihood([("Hello", " there"), ("Hello", " " + LONG_CTX)],
                        keys=["wg/orig/7/1", "wg/orig/7/2"])
    # a continuation of exactly the window fits (the harness's limit), scored as the harness does
    exact = next(t for t in (" a" * k for k in range(1, 40)) if len(s.encode("Hello", t)[1]) == 16)
    (lp, n), = s.loglikelihood([("Hello", exact)])
    assert n == 16 and abs(lp - harness(s, "Hello", exact, 16)[0]) <= 1e-5


def test_scorer_generate_refuses_prompts_past_the_window(tiny_lm_dir):
    from csbench.lm.base import RequestError

    s = local(tiny_lm_dir, max_length=16)
    with pytest.raises(RequestError, match=r"prompt 1 \(question q9\) 'word0.*: \d+ prompt tokens "
                                           r"\+ max_new_tokens 4 exceed the model's window of 16"):
        s.generate(["Hi", LONG_CTX], max_new_tokens=4, names=["question q1", "question q9"])


def test_bf16_scores_with_fp32_log_softmax_and_compute_names_what_ran(tiny_lm_dir, scorer,
                                                                    monkeypatch):
    """lm.dtype bfloat16 on a CPU: the model runs in bf16, the log-softmax and the sums in fp32
    (double on the host); compute() says what computed the scores (the provenance columns)."""
    from csbench.lm import open_scorer

    bf = open_scorer(tiny_lm_dir, {"device": "cpu", "dtype": "bfloat16", "batch_size": 4})
    assert bf.model.dtype == torch.bfloat16 and bf.dtype == torch.bfloat16
    assert bf.compute() == {"compute_device": "cpu", "compute_dtype": "bfloat16"}
    assert scorer.compute() == {"compute_device": "cpu", "compute_dtype": "float32"}
    got = bf.loglikelihood(REQS)
    assert all(type(lp) is float and lp <= 0 for lp, _ in got)
    # the bf16 reference: the same bf16 logits, log-softmax in fp32
    for (lp, n), (c, x) in zip(got, REQS):
        assert n == naive(bf, c, x)[1]
        assert lp == pytest.approx(naive(bf, c, x)[0], abs=0.05 * n)
    seen = []
    real = torch.log_softmax
    monkeypatch.setattr(torch, "log_softmax", lambda t, dim: seen.append(t.dtype) or real(t, dim))
    bf.loglikelihood([("A new", " request")])
    assert seen and set(seen) == {torch.float32}, seen
