"""bf16 against fp32 on this CPU: csbench's 20Q yes/no scoring of CSQA2 dev (the 20Q prompts).

Per model, in ONE run: the first ``--n`` test items of each prompt variant scored by an fp32 and
a bf16 scorer back to back (the order alternating from variant to variant, so background load hits
both alike), no LM cache. Per dtype: wall time and speed-up; |bf16 - fp32| of log p(" yes") and
log p(" no") and of the renormalised p(yes); predictions equal to fp32's; the paper's metrics
(F1 with yes positive, accuracy, NLL, % predicted yes) from ``csbench.twentyq.scoring``.

    .venv/bin/python bench/twentyq_bf16.py --split results/twentyq/csqa2/split \\
        --model resources/models/smollm2-135m --model resources/models/gemma3-270m --n 200 \\
        --threads 2 --out bench/out/twentyq_bf16.json
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as every workflow job (csbench.runtime)
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
DTYPES = ("float32", "bfloat16")


def bench_model(model: str, test, train, n: int) -> dict:
    import numpy as np
    import pandas as pd

    from csbench.lm import open_scorer
    from csbench.twentyq.prompts import ANSWERS, VARIANTS, build_prompts
    from csbench.twentyq.scoring import item_frame, metrics

    scorers = {d: open_scorer(model, {"device": "cpu", "dtype": d, "batch_size": "auto"}, None)
               for d in DTYPES}  # no cache: every score is computed
    warm = [(p, x) for p in build_prompts(test, train, "few_shot", 0)[-8:] for x in ANSWERS]
    for s in scorers.values():
        s.loglikelihood(warm)  # the engine's one-off checks, not timed
    secs = {d: 0.0 for d in DTYPES}
    frames = {d: [] for d in DTYPES}
    head = test.iloc[:n]
    for i, v in enumerate(VARIANTS):
        reqs = [(p, x) for p in build_prompts(test, train, v, 0)[:n] for x in ANSWERS]
        for d in (DTYPES if i % 2 == 0 else DTYPES[::-1]):
            t = time.perf_counter()
            lp = np.array([r[0] for r in scorers[d].loglikelihood(reqs)]).reshape(-1, 2)
            secs[d] += time.perf_counter() - t
            frames[d].append(item_frame(head, v, lp[:, 0], lp[:, 1]))
        print(f"  {Path(model).name} {v}: " + ", ".join(f"{d} {secs[d]:.1f}s" for d in DTYPES),
              file=sys.stderr, flush=True)
    items = {d: pd.concat(frames[d], ignore_index=True) for d in DTYPES}
    a, b = items["float32"], items["bfloat16"]
    dl = np.abs(np.concatenate([a["logprob_yes"] - b["logprob_yes"],
                                a["logprob_no"] - b["logprob_no"]]))
    dp = np.abs(a["p_yes"] - b["p_yes"]).to_numpy()
    res = {"model": Path(model).name, "items_per_variant": len(head), "variants": list(VARIANTS),
           "seconds": secs, "speedup": secs["float32"] / secs["bfloat16"],
           "abs_delta_logprob": {"median": float(np.median(dl)), "p95": float(np.quantile(dl, .95)),
                                 "max": float(dl.max())},
           "abs_delta_p_yes": {"median": float(np.median(dp)), "p95": float(np.quantile(dp, .95)),
                               "max": float(dp.max())},
           "predictions_equal": int((a["pred"] == b["pred"]).sum()), "predictions": len(a),
           "metrics": {d: metrics(items[d]).to_dict("records") for d in DTYPES},
           "compute": {d: scorers[d].compute() for d in DTYPES}}
    res["agreement"] = res["predictions_equal"] / res["predictions"]
    return res


def markdown(models: list[dict]) -> str:
    lines = ["| model | variant | F1 fp32 / bf16 | accuracy fp32 / bf16 | NLL fp32 / bf16 | "
             "% yes fp32 / bf16 |", "|---|---|---|---|---|---|"]
    for m in models:
        for r32, r16 in zip(m["metrics"]["float32"], m["metrics"]["bfloat16"]):
            lines.append(f"| {m['model']} | {r32['variant']} | {100 * r32['f1']:.1f} / "
                         f"{100 * r16['f1']:.1f} | {100 * r32['accuracy']:.1f} / "
                         f"{100 * r16['accuracy']:.1f} | {r32['nll']:.3f} / {r16['nll']:.3f} | "
                         f"{r32['pct_pred_yes']:.1f} / {r16['pct_pred_yes']:.1f} |")
    lines += ["", "| model | fp32 s | bf16 s | speed-up | abs delta log p median / p95 / max | "
              "abs delta p(yes) median / max | predictions equal |", "|---|---|---|---|---|---|---|"]
    for m in models:
        d, p = m["abs_delta_logprob"], m["abs_delta_p_yes"]
        lines.append(f"| {m['model']} | {m['seconds']['float32']:.1f} | "
                     f"{m['seconds']['bfloat16']:.1f} | {m['speedup']:.2f}x | {d['median']:.3f} / "
                     f"{d['p95']:.3f} / {d['max']:.3f} | {p['median']:.4f} / {p['max']:.3f} | "
                     f"{m['predictions_equal']} / {m['predictions']} "
                     f"({100 * m['agreement']:.1f}%) |")
    return "\n".join(lines)


def main(argv=None) -> int:
    import pandas as pd
    import torch

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--split", type=Path, required=True, help="dir with train.parquet, test.parquet")
    ap.add_argument("--model", action="append", required=True, help="a materialised model dir")
    ap.add_argument("--n", type=int, default=200, help="test items per prompt variant")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args(argv)
    torch.set_num_threads(a.threads)
    train = pd.read_parquet(a.split / "train.parquet")
    test = pd.read_parquet(a.split / "test.parquet")
    report = {"threads": a.threads, "load_before": os.getloadavg(), "models": []}
    for m in a.model:
        report["models"].append(bench_model(m, test, train, a.n))
        if a.out:  # what is done so far
            a.out.parent.mkdir(parents=True, exist_ok=True)
            a.out.write_text(json.dumps(report, indent=1))
    report["load_after"] = os.getloadavg()
    print(json.dumps(report, indent=1))
    print(markdown(report["models"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
