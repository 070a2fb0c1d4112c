"""Rows per batch on CPU: time the engine's plain batches of 20Q few-shot prompts (CSQA2 dev,
~200 tokens each) at several batch sizes, fastest of ``--repeats`` (the machine is shared).
Chose ``csbench.lm.batching.CPU_ROW_TOKENS``.

    .venv/bin/python bench/lm_batch_tokens.py --split results/twentyq/csqa2/split \
        --model resources/models/smollm2-135m --threads 2 --rows 48 --sizes 8 16 48
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def main() -> None:
    import pandas as pd
    import torch

    from csbench.lm import open_scorer
    from csbench.lm.plan import build_rows
    from csbench.twentyq.prompts import ANSWERS, build_prompts

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--split", type=Path, required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rows", type=int, default=64)
    ap.add_argument("--sizes", type=int, nargs="+", default=[4, 8, 16, 32, 64])
    ap.add_argument("--repeats", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    train, test = pd.read_parquet(a.split / "train.parquet"), pd.read_parquet(a.split / "test.parquet")
    s = open_scorer(a.model, {"device": "cpu"})
    prompts = [p.raw() for p in build_prompts(test, train, "few_shot", 0)[: a.rows]]
    enc = s.encode_many([(p, x) for p in prompts for x in ANSWERS])
    rows = sorted(build_rows(enc, 1 << 20), key=lambda r: -len(r.tokens))
    out = [None] * len(enc)
    best: dict[int, float] = {}
    with torch.inference_mode():
        s.engine.run_rows(rows[:8], out)  # warm: the engine's one-off checks
        for _ in range(a.repeats):
            for bs in a.sizes:
                t = time.perf_counter()
                for i in range(0, len(rows), bs):
                    s.engine.run_rows(rows[i:i + bs], out)
                best[bs] = min(best.get(bs, float("inf")), time.perf_counter() - t)
    print(json.dumps({"model": a.model, "threads": a.threads, "rows": len(rows),
                      "mean_tokens": sum(len(r.tokens) for r in rows) / len(rows),
                      "seconds_by_batch_size": {k: round(v, 2) for k, v in best.items()}}))


if __name__ == "__main__":
    main()
