"""Cost of the membership signals (contamination_signals) against the WinoWhat scoring
(winowhat_score) of the same model on the same items, with no LM cache.

Interleaved in ONE process (the item table cut into ``--chunks`` chunks; per chunk the WinoWhat
scoring of its items and the signals of their texts run back to back, the order alternating from
chunk to chunk, so background load on a shared machine hits both alike): wall and CPU seconds
of each, and their ratio (signals / WinoWhat). Also reads, when ``--run`` is given, the two
rules' Snakemake benchmark files of that run directory (``benchmarks/winowhat/<model>/score-*``
and ``benchmarks/contamination/signals/<model>.tsv``: whole jobs, weights loading included).

    .venv/bin/python bench/signals_cost.py --items <run>/results/winowhat/items.parquet \\
        --model resources/models/smollm2-135m --dtype bfloat16 --chunks 6 --run <run> \\
        --out bench/out/signals_cost_smollm2.json [--sample 300 --save <dir>]
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import time
from pathlib import Path

import pandas as pd


def job_seconds(run: str, model: str) -> dict:
    """Wall and CPU seconds of the two rules' jobs in a run directory (Snakemake benchmarks)."""
    def read(pattern):
        files = glob.glob(os.path.join(run, pattern))
        if not files:
            return None
        b = pd.concat([pd.read_csv(f, sep="\t") for f in files])
        return {"wall_s": float(b["s"].sum()), "cpu_s": float(b["cpu_time"].sum())}

    ww = read(f"benchmarks/winowhat/{model}/score-*.tsv")
    sig = read(f"benchmarks/contamination/signals/{model}.tsv")
    out = {"winowhat_score": ww, "contamination_signals": sig}
    if ww and sig:
        out["ratio_wall"] = sig["wall_s"] / ww["wall_s"]
        out["ratio_cpu"] = sig["cpu_s"] / ww["cpu_s"]
    return out


def sampled(items: pd.DataFrame, n: int, seed: int) -> pd.DataFrame:
    """N dev originals with their paraphrases and N test items, seeded, in table order."""
    dev = items[(items["dataset"] == "winogrande_dev") & (items["variant"] == "orig")]
    ids = set(dev.sample(n=min(n, len(dev)), random_state=seed)["orig_id"])
    test = items[items["dataset"] == "winogrande_test"]
    tids = set(test.sample(n=min(n, len(test)), random_state=seed)["item_id"])
    keep = (((items["dataset"] == "winogrande_dev") & items["orig_id"].isin(ids))
            | ((items["dataset"] == "winogrande_test") & items["item_id"].isin(tids)))
    return items[keep]


def save(out: Path, model: str, sig: pd.DataFrame, res: pd.DataFrame, n_boot: int) -> None:
    """The two per-item tables and the statistics the workflow's stats rule computes."""
    from csbench.contamination import signals_stats as st
    from csbench.contamination.signals_report import markdown, plot

    out.mkdir(parents=True, exist_ok=True)
    sig.to_parquet(out / f"signals_{model}.parquet")
    res.to_parquet(out / f"winowhat_{model}.parquet")
    auc = st.auroc_table(model, sig, n_boot)
    mw = st.mannwhitney_table(model, sig, res)
    qt = st.quartile_table(model, sig, res)
    for name, df in (("auroc", auc), ("mannwhitney", mw), ("quartiles", qt)):
        df.to_csv(out / f"{name}_{model}.tsv", sep="\t", index=False, float_format="%.4g")
    plot(auc, qt, out / f"signals_{model}.png")
    (out / f"section_{model}.md").write_text(markdown(auc, mw, qt) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", required=True, help="results/winowhat/items.parquet of a run")
    ap.add_argument("--model", required=True)
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--chunks", type=int, default=6)
    ap.add_argument("--sample", type=int, default=None,
                    help="a seeded sample of N WinoGrande dev originals (with their paraphrases) "
                         "and N test items; other datasets left out")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--save", default=None, help="directory: the signals table, the WinoWhat "
                    "per-item results and the signals' statistics of this run")
    ap.add_argument("--run", default=None, help="a run directory: also its jobs' benchmarks")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    from csbench.contamination.signals import item_texts, signals_table
    from csbench.lm import open_scorer
    from csbench.winowhat.scoring import score_items

    items = pd.read_parquet(args.items)
    if args.sample:
        items = sampled(items, args.sample, args.seed)
    lm = {"device": "cpu", "dtype": args.dtype}
    ww, sig = open_scorer(args.model, lm, None), open_scorer(args.model, lm, None)
    n = len(items)
    bounds = [n * i // args.chunks for i in range(args.chunks + 1)]
    spent = {"winowhat": [0.0, 0.0], "signals": [0.0, 0.0]}
    n_texts = 0

    def timed(name, fn):
        w, c = time.perf_counter(), time.process_time()
        fn()
        spent[name][0] += time.perf_counter() - w
        spent[name][1] += time.process_time() - c

    got = {"winowhat": [], "signals": []}
    for i in range(args.chunks):
        part = items.iloc[bounds[i]:bounds[i + 1]]
        texts = item_texts(part)
        n_texts += len(texts)
        jobs = [("winowhat", lambda: got["winowhat"].append(score_items(part, ww))),
                ("signals", lambda: got["signals"].append(signals_table(texts, sig)))]
        for name, fn in (jobs if i % 2 == 0 else jobs[::-1]):
            timed(name, fn)
        print(f"chunk {i + 1}/{args.chunks}: {spent}", flush=True)
    if args.save:
        save(Path(args.save), Path(args.model).name, pd.concat(got["signals"], ignore_index=True),
             pd.concat(got["winowhat"], ignore_index=True), 1000)
    res = {"model": Path(args.model).name, "dtype": args.dtype, "device": "cpu",
           "threads": int(os.environ.get("OMP_NUM_THREADS", "0") or 0) or None,
           "items": n, "winowhat_requests": ww.stats["requests"], "signal_texts": n_texts,
           "winowhat_wall_s": spent["winowhat"][0], "winowhat_cpu_s": spent["winowhat"][1],
           "signals_wall_s": spent["signals"][0], "signals_cpu_s": spent["signals"][1],
           "ratio_wall": spent["signals"][0] / spent["winowhat"][0],
           "ratio_cpu": spent["signals"][1] / spent["winowhat"][1],
           "winowhat_forward_tokens": ww.stats.get("forward_tokens"),
           "signals_forward_tokens": sig.stats.get("forward_tokens")}
    if args.run:
        res["jobs"] = job_seconds(args.run, Path(args.model).name)
    print(json.dumps(res, indent=1))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(res, indent=1) + "\n")


if __name__ == "__main__":
    main()
