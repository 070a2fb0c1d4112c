"""What WinoWhat's metric-confound control costs: the item table scored with the paper's requests
only, then with the paper's and the control's (``*_sentence``) in one engine call, as
``winowhat_score`` sends them; same model, same process, no LM cache, runs interleaved (A B B A).

Reports per run the wall and CPU seconds and the engine's counters (tokens run through the body,
with padding, rows, batches) and the ratios paper+control / paper. The control's requests share
their tokens up to the blank with the paper's (an original's partial and sentence requests are
one token sequence), so the prefix trie should add scored positions, not forward tokens.

    .venv/bin/python bench/winowhat_control_cost.py --items <run>/results/winowhat/items.parquet \\
        --model resources/models/smollm2-135m --limit 400 --threads 1 \\
        --out bench/out/winowhat_control_cost.json
    # --model random:tiny-gpt2 builds a randomly initialised model (token counts only)
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

COUNTERS = ("forward_tokens", "padded_tokens", "rows", "batches", "shared_groups")


def run(model_dir, items, control: bool, dtype: str) -> dict:
    from csbench.lm import open_scorer

    scorer = open_scorer(model_dir, {"device": "cpu", "dtype": dtype, "batch_size": 32}, None)
    reqs = []
    for r in items.itertuples(index=False):
        reqs += [(r.ctx1, r.cont1), (r.ctx2, r.cont2)]
        if control:
            reqs += [(r.ctx_sentence, r.cont1_sentence), (r.ctx_sentence, r.cont2_sentence)]
    t0, c0 = time.perf_counter(), time.process_time()
    scorer.loglikelihood(reqs)
    out = {"requests": len(reqs), "wall_s": time.perf_counter() - t0,
           "cpu_s": time.process_time() - c0}
    out.update({k: scorer.stats.get(k) for k in COUNTERS})
    return out


def main() -> None:
    import pandas as pd
    import torch

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--items", required=True, help="results/winowhat/items.parquet of a run")
    ap.add_argument("--model", required=True, help="a materialised model directory or random:<shape>")
    ap.add_argument("--limit", type=int, default=400, help="first N items (dev orig and transf alike)")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    model = a.model
    if model.startswith("random:"):
        from csbench.models.random import build_random_model

        model = build_random_model(model.split(":", 1)[1], tempfile.mkdtemp())
    items = pd.read_parquet(a.items)
    items = items[items["dataset"] == "winogrande_dev"].head(a.limit)
    runs = [("paper", False), ("paper+control", True), ("paper+control", True), ("paper", False)]
    res: dict[str, list] = {}
    for name, control in runs:
        res.setdefault(name, []).append(run(model, items, control, a.dtype))
    best = {k: min(v, key=lambda r: r["cpu_s"]) for k, v in res.items()}
    ratio = {k: (best["paper+control"][k] / best["paper"][k]) if best["paper"][k] else None
             for k in ("requests", "cpu_s", "wall_s", "forward_tokens", "padded_tokens")}
    report = {"model": a.model, "items": len(items), "dtype": a.dtype, "threads": a.threads,
              "device": "cpu", "runs": res, "ratio_control_over_paper": ratio}
    print(json.dumps(ratio, indent=1))
    if a.out:
        with open(a.out, "w") as fh:
            json.dump(report, fh, indent=1)


if __name__ == "__main__":
    main()
