"""QADS fine-tuning in bf16 on the CPU: what the matrix units give, and a reduced fold.

``kernels``: fp32 against bf16 in the same process, alternating, best of ``--repeats``: a
2048^3 matmul (bf16 inputs), and one MiniLM QA training step (forward, backward, AdamW) on
``--batch`` full windows of each ``--lengths`` under ``torch.autocast("cpu", bfloat16)``::

    .venv/bin/python bench/qa_bf16.py kernels --threads 2

``fold``: one reduced fold of the reproduce fine-tuning (config/reproduce.yaml ``qads.finetune``:
article folds of SQuAD 2.0 dev, train on ``--train-limit`` sampled training questions, score a
fixed seeded sample of ``--held-out`` held-out questions), once per ``--variants`` entry
(``float32``, ``bfloat16``; a ``+nogroup`` suffix trains on plain shuffled batches cut to their
longest window instead of length-grouped ones: the cost of padding every window to the maximum),
in the order given (interleave them: the machine is shared); one JSON line per variant with
windows/s, the fold's times and the official metric; ``--seed`` changes the QA head's
initialisation and the training order, not the sampled questions::

    .venv/bin/python bench/qa_bf16.py fold --squad ../shared/mirror/squad_v2/dev-v2.0.json.gz \\
        --model sentence-transformers/all-MiniLM-L6-v2 --train-limit 800 --held-out 400 \\
        --variants float32 bfloat16 float32 bfloat16
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def _best(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def kernels(a) -> None:
    import torch

    from csbench.models.load import load_qa_model

    torch.manual_seed(0)
    n = 2048
    x, y = torch.randn(n, n), torch.randn(n, n)
    xb, yb = x.bfloat16(), y.bfloat16()
    x @ y, xb @ yb  # warm
    t32, t16 = float("inf"), float("inf")
    for _ in range(a.repeats):  # alternating
        t32 = min(t32, _best(lambda: x @ y, 1))
        t16 = min(t16, _best(lambda: xb @ yb, 1))
    flop = 2 * n ** 3
    print(json.dumps({"what": f"matmul {n}^3", "threads": a.threads,
                      "fp32_tflops": round(flop / t32 / 1e12, 3),
                      "bf16_tflops": round(flop / t16 / 1e12, 3), "ratio": round(t32 / t16, 2)}),
          flush=True)

    model, _ = load_qa_model(a.model, device="cpu", dtype="float32", seed=0)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
    vocab = model.config.vocab_size
    for length in a.lengths:
        ids = torch.randint(1000, vocab, (a.batch, length))
        ids[:, 0] = 101
        batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids),
                 "token_type_ids": torch.zeros_like(ids),
                 "start_positions": torch.randint(0, length, (a.batch,)),
                 "end_positions": torch.randint(0, length, (a.batch,))}

        def step(dtype):
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype == "bfloat16"):
                loss = model(**batch).loss
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)

        def forward(dtype):
            with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16,
                                                 enabled=dtype == "bfloat16"):
                model(**{k: v for k, v in batch.items() if not k.endswith("_positions")})

        for fn, what in ((step, "train step"), (forward, "forward (no grad)")):
            fn("float32"), fn("bfloat16")  # warm
            best = {"float32": float("inf"), "bfloat16": float("inf")}
            for _ in range(a.repeats):
                for dt in best:
                    best[dt] = min(best[dt], _best(lambda: fn(dt), 1))
            print(json.dumps({"what": f"MiniLM QA {what}, {a.batch} x {length} tokens",
                              "threads": a.threads,
                              "fp32_windows_s": round(a.batch / best["float32"], 2),
                              "bf16_windows_s": round(a.batch / best["bfloat16"], 2),
                              "ratio": round(best["float32"] / best["bfloat16"], 2)}), flush=True)


def _shuffled_batches(lengths, batch_size, gen):
    """Batches of the plain shuffled order (what training used before length grouping)."""
    import torch

    perm = torch.randperm(len(lengths), generator=gen).numpy()
    return [perm[i:i + batch_size] for i in range(0, len(perm), batch_size)]


def fold(a) -> None:
    import random

    import numpy as np
    import torch

    from csbench.io import read_json, write_json
    from csbench.models.load import load_qa_model
    from csbench.qads import finetune as F
    from csbench.qads.metric import evaluate

    # config/reproduce.yaml's qads.finetune (written out: no config module needed on another machine)
    ft = {"group_by": "article", "train_on": "squad", "folds": 2, "epochs": a.epochs,
          "batch_size": a.batch_size, "learning_rate": a.learning_rate, "warmup": 0.1,
          "weight_decay": 0.01, "max_grad_norm": 1.0, "max_length": 256, "doc_stride": 64,
          "seed": a.seed}
    qa = {"device": "cpu", "batch_size": 32, "max_answer_len": 30, "null_threshold": 0.0}
    data = read_json(a.squad)["data"]
    plan = F.fold_plan({"squad": data}, "squad", ft["folds"], 0, "article")  # the reproduce folds
    rows = F.flatten(data)
    train_rows = [r for r in rows if plan[r["title"]] != a.fold]
    # the training sample and the held-out sample do not depend on --seed (head and order do)
    if 0 < a.train_limit < len(train_rows):
        keep = sorted(random.Random(a.fold).sample(range(len(train_rows)), a.train_limit))
        train_rows = [train_rows[i] for i in keep]
    held = [r["id"] for r in rows if plan[r["title"]] == a.fold]
    test = F.subset(data, set(random.Random(1).sample(held, a.held_out)))
    for variant in a.variants:
        dtype, _, flag = variant.partition("+")
        ft_v = {**ft, "dtype": dtype}
        wall0 = time.perf_counter()
        model, tok = load_qa_model(a.model, device="cpu", dtype="float32", seed=ft["seed"] + a.fold)
        feats = F.prepare_features(tok, [r["question"] for r in train_rows],
                                   [r["context"] for r in train_rows],
                                   [r["answers"] for r in train_rows],
                                   max_length=ft["max_length"], doc_stride=ft["doc_stride"])
        n = len(feats["start_positions"])
        lengths = feats["attention_mask"].sum(axis=1)
        torch.manual_seed(ft["seed"] + a.fold)
        grouped = F.length_grouped_batches
        if flag == "nogroup":  # the plain shuffled order, batches cut to their longest window
            F.length_grouped_batches = _shuffled_batches
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            losses = F.train(model, feats, epochs=ft["epochs"], learning_rate=ft["learning_rate"],
                             batch_size=ft["batch_size"], seed=ft["seed"] + a.fold,
                             weight_decay=ft["weight_decay"], warmup=ft["warmup"],
                             max_grad_norm=ft["max_grad_norm"], dtype=dtype)
        finally:
            F.length_grouped_batches = grouped
        train_s, train_cpu = time.perf_counter() - t0, time.process_time() - c0
        t0, c0 = time.perf_counter(), time.process_time()
        # one pass: every question's best span (forced) and its no-answer score; the pipeline's
        # answers are the forced ones where null - best <= qads.qa.null_threshold (0)
        forced, na = F.predict_set(model, tok, test, ft_v, {**qa, "null_threshold": 1e9})
        predict_s, predict_cpu = time.perf_counter() - t0, time.process_time() - c0
        preds = {q: ("" if na[q] > qa["null_threshold"] else a) for q, a in forced.items()}
        sc = F.score(test, preds, na)
        span = evaluate(test, forced, na)  # span quality whatever the no-answer calibration
        print(json.dumps({
            "variant": variant, "seed": a.seed, "fold": a.fold, "train_questions": len(train_rows),
            "batch_size": ft["batch_size"], "learning_rate": ft["learning_rate"],
            "windows": n, "epochs": ft["epochs"], "steps": len(losses),
            "mean_window_tokens": round(float(np.mean(lengths)), 1),
            "train_s": round(train_s, 1), "train_cpu_s": round(train_cpu, 1),
            "windows_per_s": round(n * ft["epochs"] / train_s, 2),
            "windows_per_cpu_s": round(n * ft["epochs"] / train_cpu, 2),
            "held_out": sc["n"], "predict_s": round(predict_s, 1),
            "predict_cpu_s": round(predict_cpu, 1),
            "fold_wall_s": round(time.perf_counter() - wall0, 1),
            "loss_first": round(losses[0], 4), "loss_last10": round(float(np.mean(losses[-10:])), 4),
            **{k: round(float(sc[k]), 2) for k in ("exact", "f1", "HasAns_exact", "HasAns_f1",
                                                   "NoAns_exact")},
            "answered": sum(1 for v in preds.values() if v),
            "forced_HasAns_exact": round(span["HasAns_exact"], 2),
            "forced_HasAns_f1": round(span["HasAns_f1"], 2),
            "best_f1": round(span["best_f1"], 2)}), flush=True)
        if a.dump:
            write_json({"variant": variant, "seed": a.seed, "losses": losses, "forced": forced,
                        "na_probs": na}, Path(a.dump) / f"{variant}.seed{a.seed}.json")


def main() -> None:
    import torch

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    k = sub.add_parser("kernels")
    k.add_argument("--model", default="sentence-transformers/all-MiniLM-L6-v2")
    k.add_argument("--lengths", type=int, nargs="+", default=[384, 256])
    k.add_argument("--batch", type=int, default=32)
    f = sub.add_parser("fold")
    f.add_argument("--squad", required=True)
    f.add_argument("--model", default="sentence-transformers/all-MiniLM-L6-v2")
    f.add_argument("--fold", type=int, default=1)
    f.add_argument("--train-limit", type=int, default=800, help="0 = every training question")
    f.add_argument("--held-out", type=int, default=400)
    f.add_argument("--epochs", type=int, default=2)
    f.add_argument("--learning-rate", type=float, default=2e-4)
    f.add_argument("--batch-size", type=int, default=32)
    f.add_argument("--variants", nargs="+", default=["float32", "bfloat16"])
    f.add_argument("--seed", type=int, default=0, help="qads.finetune.seed (head and order)")
    f.add_argument("--dump", help="folder: <variant>.seed<seed>.json with losses and predictions")
    for p in (k, f):
        p.add_argument("--threads", type=int, default=2)
        p.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    kernels(a) if a.cmd == "kernels" else fold(a)


if __name__ == "__main__":
    main()
