"""Served vs local scoring of the same GGUF on WinoGrande dev (partial evaluation, as WinoWhat).

The served backend asks llama-cpp-python's server (llama.cpp running the quantised Q4_1 weights);
the local backend runs csbench's PyTorch engine on the same GGUF dequantised to fp32
(resources/models/smollm2-135m). Reports the agreement of predictions, mean |delta log-lik|
per option, each backend's accuracy, and throughput (items/s, cold: empty caches).

    nice -n 19 .venv/bin/python bench/served_agreement.py \
        --dev ../shared/mirror/winogrande/dev.jsonl --local resources/models/smollm2-135m \
        --out bench/out/served_agreement_full.json   # all 1,267 items; figures: docs/models.md
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path


def read_dev(path: Path, labels: Path | None, limit: int | None) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    if labels is not None and labels.exists():
        for r, lab in zip(rows, labels.read_text().split()):
            r["answer"] = lab
    return rows[:limit] if limit else rows


def score(scorer, rows, start: str = "") -> tuple[list[tuple[float, int]], float]:
    from csbench.winowhat.requests import partial_requests

    reqs = [(start + c, x) for d in rows
            for c, x in partial_requests(d["sentence"], d["option1"], d["option2"])]
    t0 = time.perf_counter()
    out = scorer.loglikelihood(reqs)
    return out, time.perf_counter() - t0


def summary(rows, res) -> dict:
    preds = [1 if res[2 * i][0] >= res[2 * i + 1][0] else 2 for i in range(len(rows))]
    gold = [int(r["answer"]) for r in rows]
    return {"preds": preds, "accuracy": sum(p == g for p, g in zip(preds, gold)) / len(rows)}


def main(argv=None):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # (test support code)
    from llama_server import DEMO_EMPTY_CONTEXT, LlamaServer, demo_gguf, server_python

    from csbench.lm import open_scorer
    from csbench.lm.served import Endpoint, ServedScorer

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dev", type=Path, required=True)
    ap.add_argument("--labels", type=Path, default=None, help="default: dev-labels.lst beside --dev")
    ap.add_argument("--local", type=Path, required=True, help="materialised smollm2-135m directory")
    ap.add_argument("--gguf", type=Path, default=Path("resources/raw/gguf/SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    import torch

    torch.set_num_threads(a.threads)
    rows = read_dev(a.dev, a.labels or a.dev.with_name("dev-labels.lst"), a.limit)
    py, info = server_python()
    if py is None:
        raise SystemExit(info)
    gguf = demo_gguf(a.gguf)
    with tempfile.TemporaryDirectory() as tmp:
        with LlamaServer(py, gguf, threads=a.threads, log_path=Path(tmp) / "server.log") as srv:
            served = ServedScorer(Endpoint(srv.base_url, srv.alias, None, DEMO_EMPTY_CONTEXT),
                                  cache_dir=None, max_concurrency=a.concurrency)
            served.check("loglikelihood")
            s_res, s_sec = score(served, rows)
        t0 = time.perf_counter()
        local = open_scorer(a.local, {"device": "cpu", "dtype": "float32"}, None)
        load = time.perf_counter() - t0
        l_res, l_sec = score(local, rows)
        # the server ran in start-token mode when its prefix is set: the same conditioning locally
        prefix = served._prefix
        ls_res = score(local, rows, prefix)[0] if prefix else l_res
    s, l, ls = summary(rows, s_res), summary(rows, l_res), summary(rows, ls_res)
    deltas = [abs(x[0] - y[0]) for x, y in zip(s_res, l_res)]
    deltas_s = [abs(x[0] - y[0]) for x, y in zip(s_res, ls_res)]
    same_n = sum(x[1] == y[1] for x, y in zip(s_res, l_res)) / len(s_res)
    out = {
        "served_start_token_mode": bool(prefix),
        "agreement_same_conditioning": sum(p == q for p, q in zip(s["preds"], ls["preds"]))
        / len(rows),
        "mean_abs_delta_loglik_same_conditioning": sum(deltas_s) / len(deltas_s),
        "accuracy_local_same_conditioning": ls["accuracy"],
        "items": len(rows), "requests": len(s_res), "llama_cpp_python": info,
        "agreement": sum(p == q for p, q in zip(s["preds"], l["preds"])) / len(rows),
        "mean_abs_delta_loglik": sum(deltas) / len(deltas),
        "max_abs_delta_loglik": max(deltas),
        "same_token_count": same_n,
        "accuracy_served": s["accuracy"], "accuracy_local": l["accuracy"],
        "served_items_per_s": len(rows) / s_sec, "local_items_per_s": len(rows) / l_sec,
        "served_seconds": s_sec, "local_seconds": l_sec, "local_load_seconds": load,
        "served_stats": served.stats, "local_stats": local.stats,
        "threads": a.threads, "concurrency": a.concurrency, "machine": platform.platform(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(out, indent=1, default=str) + "\n")
    print(json.dumps({k: v for k, v in out.items() if not k.endswith("_stats")}, indent=1))


if __name__ == "__main__":
    main()
