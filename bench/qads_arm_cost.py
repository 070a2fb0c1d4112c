"""Cost of the QADS arm (qads.finetune.add_rewritten) against the plain fine-tuning run, measured
in one process on the real sets: per fold, the training questions and windows of both runs (exact,
from the fold plan and the tokenizer), and the training throughput (windows/s) of the QA head on a
few steps of each run's windows, alternating; the extrapolated training wall time per fold and the
ratio arm / plain.

    python bench/qads_arm_cost.py --run /work/runs/<dir> --model resources/models/minilm-l6 \\
        --config config/reproduce.yaml --steps 40
(--run: a directory where `results/qads/{original,qads-one}.json` and the SQuAD 2.0 dev table were
built with that config.)"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import yaml


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--run", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--config", default="config/reproduce.yaml")
    ap.add_argument("--mode", default="one")
    ap.add_argument("--steps", type=int, default=40, help="timed optimizer steps per run")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()

    import numpy as np
    import torch

    from csbench.config import default
    from csbench.models.load import load_qa_model
    from csbench.qads import finetune as F
    from csbench.qads.workflow import finetune_inputs

    cfg = yaml.safe_load(Path(a.config).read_text())["qads"]
    ft = {**default("qads.finetune"), **cfg.get("finetune", {})}
    select = {**default("qads.questions"), **cfg.get("questions", {})}
    run = Path(a.run)
    names = ["original", a.mode]
    sets = finetune_inputs(names, [run / "results/qads/original.json",
                                   run / f"results/qads/qads-{a.mode}.json"],
                           [run / f"results/data/squad_v2/{select['table']}.parquet"], select)
    by, train_on = ft["group_by"], ft["train_on"] or ft["questions"]
    plan = F.fold_plan({k: sets[k] for k in (train_on, *ft["score_on"]) if k in sets}, train_on,
                       ft["folds"], ft["seed"], by)
    model, tok = load_qa_model(a.model, device="cpu", dtype="float32", seed=0)
    max_len = min(ft["max_length"], model.config.max_position_embeddings)

    def windows(rows):
        f = F.prepare_features(tok, [r["question"] for r in rows], [r["context"] for r in rows],
                               [r["answers"] for r in rows], max_len, ft["doc_stride"])
        return f

    folds = []
    feats = {}
    for fold in range(ft["folds"]):
        plain = [r for r in F.flatten(sets[train_on]) if plan[F.group_key(r, by)] != fold]
        added = [r for r in F.flatten(sets[a.mode])
                 if F.group_key(r, by) in plan and plan[F.group_key(r, by)] != fold]
        fp, fa = windows(plain), windows(added)
        folds.append({"fold": fold, "plain_questions": len(plain), "added_questions": len(added),
                      "plain_windows": len(fp["start_positions"]),
                      "added_windows": len(fa["start_positions"])})
        if fold == 0:
            feats["plain"] = fp
            feats["added"] = fa
    print(json.dumps(folds, indent=1))

    # throughput: the same fresh head, `steps` batches of plain windows, then of rewritten ones
    # (the arm trains on both), alternating in chunks of 10 steps so load drifts hit both
    torch.set_num_threads(int(os.environ.get("THREADS", "2")))
    timed = {"plain": [0.0, 0], "added": [0.0, 0]}
    bs = ft["batch_size"]
    rng = np.random.default_rng(0)
    for chunk in range(max(1, a.steps // 10)):
        for kind in ("plain", "added"):
            f = feats[kind]
            n = len(f["start_positions"])
            idx = rng.choice(n, size=10 * bs, replace=False)
            sub = {k: v[idx] for k, v in f.items()}
            t0 = time.perf_counter()
            F.train(model, sub, epochs=1, learning_rate=ft["learning_rate"], batch_size=bs,
                    seed=chunk, dtype=ft["dtype"])
            timed[kind][0] += time.perf_counter() - t0
            timed[kind][1] += 10 * bs
    rate = {k: w / s for k, (s, w) in timed.items()}
    out = {"folds": folds, "dtype": ft["dtype"], "batch_size": bs, "max_length": max_len,
           "epochs": ft["epochs"], "threads": torch.get_num_threads(),
           "windows_per_s": rate, "timed_s": {k: v[0] for k, v in timed.items()},
           "load_avg": os.getloadavg()}
    r = (rate["plain"] * timed["plain"][1] + rate["added"] * timed["added"][1]) / \
        (timed["plain"][1] + timed["added"][1])
    for f in folds:
        f["plain_train_s"] = f["plain_windows"] * ft["epochs"] / rate["plain"]
        f["arm_train_s"] = (f["plain_windows"] / rate["plain"]
                            + f["added_windows"] / rate["added"]) * ft["epochs"]
        f["arm_over_plain"] = f["arm_train_s"] / f["plain_train_s"]
    out["mean_windows_per_s"] = r
    print(json.dumps(out, indent=1))
    if a.out:
        Path(a.out).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
