"""Speed of the output layer's fp32 GEMM ``[rows x hidden] @ [hidden x vocab]`` by the number of
rows per call (random weights of a model's head shape), as the per-token statistics run it
(:func:`csbench.lm.forward.head_chunks`): the weights are read from memory once per call, so with
a large vocabulary a few dozen rows per call spend their time reading them.

    OMP_NUM_THREADS=1 .venv/bin/python bench/lm_head_rows.py --hidden 640 --vocab 262144 \\
        --rows 16 64 128 256 512
"""
from __future__ import annotations

import argparse
import time

import torch


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hidden", type=int, default=640, help="Gemma-3-270m: 640")
    ap.add_argument("--vocab", type=int, default=262144, help="Gemma-3-270m: 262144")
    ap.add_argument("--rows", type=int, nargs="+", default=[16, 64, 128, 256, 512])
    ap.add_argument("--seconds", type=float, default=3.0, help="CPU seconds per row count")
    args = ap.parse_args()
    w = torch.randn(args.vocab, args.hidden) * 0.02
    print(f"threads {torch.get_num_threads()}, float32, hidden {args.hidden}, vocab {args.vocab}")
    for rows in args.rows:
        h = torch.randn(rows, args.hidden)
        torch.nn.functional.linear(h, w)
        c, n = time.process_time(), 0
        while time.process_time() - c < args.seconds:
            torch.nn.functional.linear(h, w)
            n += 1
        dt = (time.process_time() - c) / n
        print(f"rows {rows:5d}: {dt / rows * 1e3:6.2f} CPU ms per row, "
              f"{2 * rows * args.hidden * args.vocab / dt / 1e9:5.1f} GFLOPS", flush=True)


if __name__ == "__main__":
    main()
