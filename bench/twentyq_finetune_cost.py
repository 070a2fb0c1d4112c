"""Training cost of the 20Q fine-tuned arm: optimizer steps of a causal LM on the arm's training
table (results/data/twentyq_ft/<benchmark>.parquet), float32 and bfloat16 autocast alternating in
chunks of 10 steps in one process (so load drifts hit both), with the spec's batch; examples/s and
process CPU seconds per example per dtype (on a loaded machine the CPU time is the figure to
extrapolate from), the ratio bf16 / fp32, and the extrapolated cost of one epoch over the table.

    python bench/twentyq_finetune_cost.py --model resources/models/smollm2-135m \\
        --table <run>/results/data/twentyq_ft/csqa2.parquet --steps 40 --batch 8
"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--table", required=True)
    ap.add_argument("--steps", type=int, default=40, help="timed optimizer steps per dtype")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--max-length", type=int, default=64)
    ap.add_argument("--dtypes", nargs="+", default=["float32", "bfloat16"])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()

    import torch

    from csbench.config import default
    from csbench.finetune import encode, pad_id, read_examples, train
    from csbench.models.load import load_causal_lm

    torch.set_num_threads(a.threads)
    examples = read_examples(a.table)
    model, tok = load_causal_lm(a.model, "cpu", "float32")
    encoded, _ = encode(tok, examples, a.max_length, "completion")
    pad = pad_id(tok)
    s = {**default("finetune"), "batch": a.batch, "grad_accum": 1, "epochs": 1}
    chunk = 10
    timed = {d: [0.0, 0] for d in a.dtypes}
    cpu = {d: 0.0 for d in a.dtypes}  # process CPU seconds: what a loaded machine does not inflate
    for c in range(max(1, a.steps // chunk)):
        for d in a.dtypes:
            start = (c * len(a.dtypes) + a.dtypes.index(d)) * chunk * a.batch % len(encoded)
            sub = [encoded[(start + i) % len(encoded)] for i in range(chunk * a.batch)]
            t0, c0 = time.perf_counter(), time.process_time()
            train(model, sub, {**s, "dtype": d, "seed": c}, pad)
            timed[d][0] += time.perf_counter() - t0
            cpu[d] += time.process_time() - c0
            timed[d][1] += len(sub)
        print({d: round(n / t, 2) for d, (t, n) in timed.items()}, "examples/s;",
              {d: round(cpu[d] / max(timed[d][1], 1), 3) for d in a.dtypes}, "CPU s/example after",
              c + 1, "chunks", flush=True)
    rate = {d: n / t for d, (t, n) in timed.items()}
    out = {"model": a.model, "table": a.table, "examples": len(encoded),
           "tokens_per_example": sum(len(x) for x, _ in encoded) / len(encoded),
           "batch": a.batch, "steps_per_dtype": timed[a.dtypes[0]][1] // a.batch,
           "threads": torch.get_num_threads(), "examples_per_s": rate,
           "epoch_wall_s": {d: len(encoded) / r for d, r in rate.items()},
           "cpu_s_per_example": {d: cpu[d] / timed[d][1] for d in a.dtypes},
           "epoch_cpu_s": {d: cpu[d] / timed[d][1] * len(encoded) for d in a.dtypes},
           "load_avg": os.getloadavg()}
    if len(rate) == 2:
        f, b = a.dtypes
        out[f"ratio_{b}_over_{f}"] = rate[b] / rate[f]
    print(json.dumps(out, indent=1))
    if a.out:
        Path(a.out).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
