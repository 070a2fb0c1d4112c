"""What fine-tuning a causal LM on the ProtoQA GPT-2 training text costs (csbench.finetune).

Trains ``--model`` (a materialised model directory) on a seeded sample of ``--examples`` lines of
``--data`` (``finetune_train.txt``), once per ``--variants`` dtype in the order given (interleave
them: the machine is shared), with the settings of the config's ``finetune`` section (1 epoch,
batch 1, gradient accumulation 8, loss on the answer), and prints one JSON line per variant:
examples/s over the training loop, its ratio to the
first variant's, and the extrapolated wall time of the whole file and of ``--budget-s``'s share::

    nice -n 10 .venv/bin/python bench/finetune_cost.py --model resources/models/smollm2-135m \\
        --data ../shared/mirror/protoqa/gpt2/finetune_train.txt --examples 400 \\
        --variants float32 bfloat16 --threads 2
"""
from __future__ import annotations

import argparse
import json
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--examples", type=int, default=400)
    ap.add_argument("--variants", nargs="+", default=["float32", "bfloat16"])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--budget-s", type=float, default=45 * 60)
    a = ap.parse_args()

    import logging

    import torch

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")

    from csbench.config import default
    from csbench.data.protoqa import read_finetune_text
    from csbench.finetune import encode, pad_id, subset, train
    from csbench.compute import compute_columns
    from csbench.models.load import load_causal_lm

    torch.set_num_threads(a.threads)
    df = read_finetune_text(a.data)
    n_file = len(df)
    keep = subset(n_file, 1.0, a.examples, 0)
    examples = [(df["prompt"][i], df["completion"][i]) for i in keep]
    first = None
    for dtype in a.variants:
        model, tok = load_causal_lm(a.model, a.device, "float32")
        encoded, _ = encode(tok, examples, default("finetune.max_length"), "completion")
        s = {**default("finetune"), "dtype": dtype, "seed": 0}
        t0, c0 = time.perf_counter(), time.process_time()
        rows, _ = train(model, encoded, s, pad_id(tok))
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        rate = len(encoded) / wall
        first = first or rate
        train_rows = [r for r in rows if r["split"] == "train"]
        print(json.dumps({
            "model": a.model, **compute_columns(a.device, dtype), "threads": a.threads,
            "examples": len(encoded), "tokens": sum(len(x) for x, _ in encoded),
            "optimizer_steps": len(train_rows), "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
            "examples_per_s": round(rate, 2), "ratio_to_first": round(rate / first, 3),
            "first_loss": round(train_rows[0]["loss"], 3),
            "last_loss": round(sum(r["loss"] for r in train_rows[-5:]) / 5, 3),
            "full_file_lines": n_file, "full_file_h": round(n_file / rate / 3600, 2),
            "fraction_in_budget": round(min(1.0, a.budget_s * rate / n_file), 4)}), flush=True)


if __name__ == "__main__":
    main()
