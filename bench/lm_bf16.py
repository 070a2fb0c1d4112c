"""bf16 against fp32 on this CPU: csbench's WinoWhat scoring of the real WinoGrande dev items.

Per model, in ONE run and interleaved (the dev items cut into ``--chunks`` chunks; each chunk is
scored by the fp32 and the bf16 scorer back to back, the order alternating from chunk to chunk,
so background load on a shared machine hits both alike), with no LM cache (every score
computed):

- wall time of each dtype and the speed-up (fp32 seconds / bf16 seconds), overall and per chunk;
- |bf16 - fp32| of the summed continuation log-likelihoods (median, p95, max; also per token);
- prediction agreement (the option with the higher log-likelihood, ties to option 1, as
  ``csbench.winowhat.scoring``) and the accuracy of each dtype with 95% bootstrap intervals;
- achieved model TFLOP/s (2 x body parameters per token run + 2 x head parameters per scored
  token, as bench/winowhat_lmeval.py counts them) against this CPU's measured matmul rate in the
  same dtype (2048^3, ``--threads`` threads, fp32 and bf16 interleaved).

The requests are csbench's WinoWhat requests for the original WinoGrande method
(``csbench.winowhat.requests.partial_requests``), as ``winowhat_score`` sends them.

    .venv/bin/python bench/lm_bf16.py --dev ../shared/mirror/winogrande/dev.jsonl \\
        --model resources/models/smollm2-135m --model resources/models/gemma3-270m \\
        --model resources/models/qwen2.5-coder-0.5b --threads 2 --out bench/out/lm_bf16.json
    # --model <dir>:300 scores the first 300 dev items only (a shorter run for a larger model)

The engine applies the output layer in fp32 in a half dtype (``Precision.vocabulary_head``);
the figures in docs/reproduce.md before that change ran it in bf16.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as every workflow job (csbench.runtime)
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))


def matmul_rates(threads: int, rounds: int = 5, n: int = 2048) -> dict:
    """TFLOP/s of an n^3 matmul in fp32 and bf16, interleaved: per round the best of three of
    each; the median over rounds. Also fp16 at 512^3 (one product: slow without fp16 units)."""
    import torch

    torch.set_num_threads(threads)
    mats = {dt: (torch.randn(n, n).to(getattr(torch, dt)), torch.randn(n, n).to(getattr(torch, dt)))
            for dt in ("float32", "bfloat16")}
    for a, b in mats.values():
        a @ b  # warm-up
    got = {dt: [] for dt in mats}
    for r in range(rounds):
        for dt in (("float32", "bfloat16") if r % 2 == 0 else ("bfloat16", "float32")):
            a, b = mats[dt]
            best = float("inf")
            for _ in range(3):
                t0 = time.perf_counter()
                a @ b
                best = min(best, time.perf_counter() - t0)
            got[dt].append(2 * n ** 3 / best / 1e12)
    out = {dt: {"tflops": statistics.median(v), "rounds": [round(x, 4) for x in v]}
           for dt, v in got.items()}
    out["bf16_over_fp32"] = out["bfloat16"]["tflops"] / out["float32"]["tflops"]
    small = {}
    for dt in ("float32", "float16"):
        a = torch.randn(512, 512).to(getattr(torch, dt))
        t0 = time.perf_counter()
        a @ a
        small[dt] = 2 * 512 ** 3 / (time.perf_counter() - t0) / 1e12
    out["fp16_512_over_fp32_512"] = small["float16"] / small["float32"]
    return out


def bench_model(model_dir: Path, rows: list[dict], chunks: int, threads: int, peak: dict) -> dict:
    import torch

    from csbench.lm import open_scorer
    from csbench.winowhat.requests import partial_requests
    from csbench.winowhat.stats import bootstrap_ci
    from winowhat_lmeval import flop_params

    torch.set_num_threads(threads)
    variants = ["float32", "bfloat16"]
    scorers = {}
    for v in variants:
        t0 = time.perf_counter()
        s = open_scorer(model_dir, {"device": "cpu", "dtype": v.split("+")[0], "batch_size": "auto"},
                        None)  # no cache: every score is computed
        s.loglikelihood(partial_requests("A warm-up _ sentence.", "a", "b") * 4)  # not timed
        s.stats.update({k: 0 for k in s.stats})
        scorers[v] = s
        print(f"{model_dir.name} {v}: loaded in {time.perf_counter() - t0:.1f}s, {s.describe()}",
              file=sys.stderr, flush=True)
    reqs = [r for d in rows for r in partial_requests(d["sentence"], d["option1"], d["option2"])]
    size = -(-len(rows) // chunks)
    secs = {v: [] for v in variants}
    out = {v: [] for v in variants}
    for c in range(chunks):
        part = reqs[2 * c * size: 2 * (c + 1) * size]
        order = variants if c % 2 == 0 else variants[::-1]
        for v in order:
            t0 = time.perf_counter()
            got = scorers[v].loglikelihood(part)
            secs[v].append(time.perf_counter() - t0)
            out[v] += got
        print(f"  chunk {c + 1}/{chunks}: " + ", ".join(f"{v} {secs[v][-1]:.1f}s" for v in variants),
              file=sys.stderr, flush=True)
    body, head = flop_params(scorers["float32"].model)
    enc = scorers["float32"].encode_many(reqs)
    scored = sum(len(x) for _, x in enc)
    labels = [int(d["answer"]) for d in rows]
    res = {"model": model_dir.name, "items": len(rows), "requests": len(reqs),
           "scored_tokens": scored, "body_params": body, "head_params": head, "variants": {}}
    ref = out["float32"]
    for v in variants:
        ll = out[v]
        pred = [2 if ll[2 * i + 1][0] > ll[2 * i][0] else 1 for i in range(len(rows))]
        acc, lo, hi = bootstrap_ci([p == y for p, y in zip(pred, labels)])
        total = sum(secs[v])
        st = scorers[v].stats
        flops = 2 * body * st["forward_tokens"] + 2 * head * scored
        dt = v.split("+")[0]
        r = {"seconds": total, "chunk_seconds": [round(x, 2) for x in secs[v]],
             "items_per_s": len(rows) / total, "accuracy": acc, "ci_low": lo, "ci_high": hi,
             "achieved_tflops": flops / total / 1e12,
             "of_matmul_peak": flops / total / 1e12 / peak[dt]["tflops"],
             "forward_tokens": st["forward_tokens"], "batches": st["batches"]}
        if v != "float32":
            d = sorted(abs(a[0] - b[0]) for a, b in zip(ll, ref))
            dn = sorted(abs(a[0] - b[0]) / a[1] for a, b in zip(ll, ref))
            pref = [2 if ref[2 * i + 1][0] > ref[2 * i][0] else 1 for i in range(len(rows))]

            def q(x, p):
                return x[min(len(x) - 1, int(p * len(x)))]

            r.update({
                "speedup_vs_fp32": sum(secs["float32"]) / total,
                "speedup_per_chunk": [round(a / b, 3) for a, b in zip(secs["float32"], secs[v])],
                "abs_delta_loglik": {"median": statistics.median(d), "p95": q(d, 0.95),
                                     "max": d[-1], "mean": statistics.fmean(d)},
                "abs_delta_per_token": {"median": statistics.median(dn), "p95": q(dn, 0.95),
                                        "max": dn[-1]},
                "predictions_equal_fp32": sum(a == b for a, b in zip(pred, pref)),
                "agreement_fp32": sum(a == b for a, b in zip(pred, pref)) / len(rows)})
        res["variants"][v] = r
    del scorers
    return res


def markdown(report: dict) -> str:
    p = report["matmul"]
    lines = [f"matmul 2048^3, {report['threads']} threads: fp32 {p['float32']['tflops']:.3f}, bf16 "
             f"{p['bfloat16']['tflops']:.3f} TFLOP/s ({p['bf16_over_fp32']:.2f}x); fp16 (512^3) "
             f"{p['fp16_512_over_fp32_512']:.3f}x fp32", "",
             "| model | dtype | s | speed-up | median / p95 / max abs delta loglik | agreement with "
             "fp32 | accuracy [95% CI] | TFLOP/s | of matmul peak |", "|" + "---|" * 9]
    for m in report["models"]:
        for v, r in m["variants"].items():
            dl = r.get("abs_delta_loglik")
            delta = f"{dl['median']:.3f} / {dl['p95']:.3f} / {dl['max']:.3f}" if dl else "–"
            agree = f"{100 * r['agreement_fp32']:.1f}%" if dl else "–"
            lines.append(f"| {m['model']} | {v} | {r['seconds']:.1f} | "
                         f"{r.get('speedup_vs_fp32', 1.0):.2f}x | {delta} | {agree} | "
                         f"{100 * r['accuracy']:.1f} [{100 * r['ci_low']:.1f}, "
                         f"{100 * r['ci_high']:.1f}] | {r['achieved_tflops']:.3f} | "
                         f"{100 * r['of_matmul_peak']:.0f}% |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dev", default="../shared/mirror/winogrande/dev.jsonl")
    ap.add_argument("--model", action="append", required=True,
                    help="a materialised model dir, optionally :N for its first N dev items only")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--chunks", type=int, default=4)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    import torch

    from csbench.compute import HALF_CPU_FLAGS, cpu_flags

    rows = [json.loads(line) for line in open(a.dev, encoding="utf-8") if line.strip()]
    rows = rows[:a.limit] if a.limit else rows
    flags = cpu_flags() or frozenset()
    report = {"host": platform.node(), "cpu": platform.processor() or platform.machine(),
              "cpu_half_flags": sorted(f for fs in HALF_CPU_FLAGS.values() for f in fs
                                       if f in flags) + sorted(f for f in flags
                                                               if f.startswith("amx")),
              "torch": torch.__version__, "torch_cpu_capability":
                  torch.backends.cpu.get_cpu_capability(), "threads": a.threads,
              "chunks": a.chunks, "dev": a.dev, "load_before": os.getloadavg()}
    report["matmul"] = matmul_rates(a.threads)
    print(json.dumps(report["matmul"]), file=sys.stderr, flush=True)
    report["models"] = []
    for m in a.model:
        path, _, n = m.rpartition(":") if m.rpartition(":")[2].isdigit() else (m, "", "")
        report["models"].append(bench_model(Path(path), rows[:int(n)] if n else rows, a.chunks,
                                            a.threads, report["matmul"]))
        if a.out:  # what is done so far
            Path(a.out).parent.mkdir(parents=True, exist_ok=True)
            Path(a.out).write_text(json.dumps(report, indent=1))
    report["load_after"] = os.getloadavg()
    text = json.dumps(report, indent=1)
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(text)
    print(text)
    print(markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
