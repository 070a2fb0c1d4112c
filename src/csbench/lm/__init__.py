"""Shared LM scoring engine: summed continuation log-probabilities from a causal LM.

Two backends behind one interface (:class:`csbench.lm.base.Scorer`): the local PyTorch engine
(:class:`csbench.lm.score.LMScorer`) and a served model behind an OpenAI-compatible
``/v1/completions`` endpoint (:mod:`csbench.lm.served`). Tasks, tests and benchmarks get theirs
from :func:`open_scorer(model_dir, lm, cache_dir) <csbench.lm.backend.open_scorer>`, the only way
in; planning (:mod:`csbench.lm.plan`) and the cache (:mod:`csbench.lm.cache`) are shared, only
execution differs.

API (stable; 20Q, ProtoQA and WinoWhat code against it). The way in is :func:`open_scorer`;
no task constructs a backend itself::

    from csbench.lm import open_scorer
    from csbench.lm.backend import job_lm_cache, lm_cache_dir, sample

    scorer = open_scorer(model_dir,             # resources/models/<name> (materialised; a served
                                                #   model's directory records its endpoint)
                         lm,                    # the validated config["lm"] section: device, dtype,
                                                #   batch_size, max_batch_size (local) and served
                                                #   (endpoints), refresh_cache (True: read no cache
                                                #   entry, recompute, store anew), chat_template
                                                #   and system_instruction (the prompt format);
                                                #   defaults in the config schema. A workflow
                                                #   job: csbench.lm.route.LMJob.of(snakemake),
                                                #   its rule's params.lm over the section
                         cache_dir,             # job_lm_cache(snakemake) in a workflow job, or
                                                #   lm_cache_dir(config) (f"{config['cache_dir']}/lm"):
                                                #   per-item SQLite cache, one file per writing
                                                #   process (csbench.lm.cache_files), or None
                         needs=("loglikelihood",),  # a served model is checked for these now
                         **engine)              # local engine options (tests, benchmarks):
                                                #   max_length, share_prefix, min_shared_prefix,
                                                #   min_common_prefix, commit_every, add_bos_token
    out = scorer.loglikelihood([(context, continuation), ...], keys=None)
    # context: a text or a csbench.lm.prompt.Prompt (question, few-shot turns, description),
    #    rendered in the prompt format (raw, or the chat template as lm-eval's
    #    --apply_chat_template); the continuation carries its target delimiter (" yes").
    # -> list of (logprob: float, n_tokens: int), in request order.
    #    logprob = sum over the continuation's tokens of log p(token | context, previous tokens),
    #    n_tokens = number of continuation tokens.
    # keys: optional list of str cache keys, one per request (e.g. "winogrande_dev/orig/<id>/1");
    #    with cache_dir set, results are cached per (model, key, request text) and reused.
    # A continuation longer than the window is a RequestError (csbench.lm.base) naming the
    #    request; contexts cut to fit are counted in scorer.stats["truncated"] and logged.

    scorer.token_stats(texts, keys=None, full_vocab=True)
    # -> [csbench.lm.tokenstats.TokenStats(lp, mu, sigma)]: each text scored as one sequence after
    #    the model's start token (lm-eval's loglikelihood_rolling for a text inside the window, raw:
    #    no prompt format), per token its log-prob and, with full_vocab (local weights only; a
    #    served model refuses it), the full-vocabulary mean and deviation of the log-probs in fp32;
    #    cached per text through the cache's samples API (csbench.lm.tokenstats)

    scorer.generate(prompts, max_new_tokens=16, num_samples=1, temperature=1.0, top_k=0,
                    top_p=1.0, seed=0, stop=("\\n",), names=None, cut=None)
    # -> list[list[str]]; cut (a list): receives per prompt one bool per sample, whether
    #    max_new_tokens ended it (no stop string, no end of sequence)
    scorer.compute()    # -> {"compute_device": "cpu" | "cuda:0" | "served",
                        #     "compute_dtype": "float32" | "bfloat16" | "float16" | "served"}:
                        #    what actually computed the scores (resolved device and dtype)
    scorer.stats        # counters: requests, unique, cached, cache_rejected, seconds; local also
                        #    truncated, rows, shared_groups, batches, forward_tokens,
                        #    padded_tokens, oom_backoffs; served also http_requests, retries,
                        #    samples_cached, clamped_logprobs

    sample(model_dir, prompts, num_samples, lm=lm, cache_dir=cache_dir, max_new_tokens=20,
           temperature=0.69, top_p=0.9, seed=0, chunk=100, stop=..., cut=None)
    # -> list[list[str]]
    # ProtoQA's sampling: the local sampler (csbench.lm.generate, with its top-p filter in
    # csbench.lm.topp and its random stream in csbench.lm.noise; order-independent, seeded per
    # prompt) or the served model's completions

For a local model :func:`open_scorer` returns a :class:`~csbench.lm.score.LMScorer` (device
``auto | cpu | cuda[:N]``; dtype ``auto`` = bf16 on GPU, fp32 on CPU; batch size an int or
``auto``: the largest that fits, up to ``max_batch_size``, with OOM backoff); for an ``openai``
spec a :class:`csbench.lm.served.ServedScorer`.

The local engine is a facade (:mod:`csbench.lm.score`: cache lookup and commits in chunks, the
window check, validation of every score) over one module per strategy: request encoding
(:mod:`~csbench.lm.tokens`), the dtype and everything that depends on it
(:mod:`~csbench.lm.precision`), batching with out-of-memory backoff (:mod:`~csbench.lm.batching`),
the forward pass and log-probs at the continuation positions (:mod:`~csbench.lm.forward`, the
last layer at scored positions: :mod:`~csbench.lm.lastlayer`), the prefix trie and tree attention
(:mod:`~csbench.lm.tree`), KV reuse for shared prefixes and common headers
(:mod:`~csbench.lm.kvshare`), and the execution that picks among them (:mod:`~csbench.lm.engine`).

Tokenisation follows lm-evaluation-harness exactly (so scores mean what the harness means):
trailing whitespace of the context moves to the start of the continuation; the continuation's
tokens are those of ``tokenize(context + continuation)`` after the first ``len(tokenize(context))``;
an empty context is replaced by the start-of-text token (the end-of-text token if the
tokenizer has none) and its continuation is tokenised without special tokens (a tokenizer's own
start token is not added again; a continuation that starts with that token has it as its
context). Sequences longer than the model's window
are left-truncated as the harness does (the last ``window + 1`` tokens of context + continuation),
counted and logged; a continuation that does not fit in the window is an error (the harness
asserts it never happens). Every log-probability that enters a score is finite and <= 0 (up to
1e-4 for a served value); the cache stores nothing else and checks a checksum on every read
(:mod:`csbench.lm.cache`).

Speed: requests are tokenised in one batched call (each distinct text once), sorted by length
(longest first) and batched (right padding, no padding inside the real tokens; on CPU with the
automatic batch size a batch holds at most 32 rows and about 3,200 tokens); the final hidden
states are projected to the vocabulary only at the continuation positions (never a
full-vocabulary log-softmax over every position); requests that share a context and have
single-token continuations are answered from one forward pass; requests that share a token prefix
(the options of one item, twin items, few-shot prompts) are packed as a token trie into one
sequence and scored in ONE forward pass with tree attention (a 4-D mask: each token attends to its
ancestors and itself; position ids = depth), so every shared token runs once
(``share_prefix=True``; models whose attention takes no 4-D mask use a KV-cache second pass);
rows of a batch that all start with the same tokens but diverge too early to form a group (an
instruction header before different few-shot examples, as the 20Q prompts) run those tokens once
per batch and the rest on their KV cache (``min_common_prefix=8``); exact duplicate requests are
scored once; the last decoder layer runs only at the scored
positions (its keys/values at all positions are captured from the layer itself, see
:mod:`csbench.lm.lastlayer`; checked once per model against a full pass); transformers' Python
tanh-GELU is swapped for the fused kernel of the same formula.
Results do not depend on batch size or order (fp32: |difference| <= 1e-5 on the test models,
<= 3e-5 on SmolLM2 and Gemma-3 (bench/twentyq_header.py); the log-softmax is always computed in fp32).
With a cache, requests are scored and committed in chunks of ``commit_every=1024`` (cut from the
request list before the cache lookup, so a resumed run forms the same batches): a job killed
mid-way keeps every finished chunk.
"""
from __future__ import annotations

from .backend import open_scorer
from .base import RequestError
from .plan import encode_pair

__all__ = ["RequestError", "encode_pair", "open_scorer"]
