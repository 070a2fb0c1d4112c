"""The GPU paths, run on a GPU: the local LM engine's scores, the ProtoQA sampler and the QA
fine-tuning on ``cuda`` against the same calls on the CPU.

The weights are random (no real model can travel to a GPU machine here; docs/models.md), in the
test suite's shapes (tiny-gpt2, tiny-llama, tiny-neox: learned and rotary positions, grouped
keys) and Pythia-160m's shape (real-sized matrix products). The requests are csbench's WinoWhat
requests of the real WinoGrande dev items (``--dev``; the two options of an item share their
context, so the prefix trie and tree attention run) plus 20Q-like prompts behind one header (the
shared-KV path) and empty contexts; without ``--dev`` synthetic sentences stand in. Per shape:

- fp32 on cuda against fp32 on the CPU: max |delta loglik| (the lm-eval criterion, <= 1e-4) and
  the option predictions (all equal);
- bf16 on cuda against fp32 on the CPU: |delta| median / max, predictions equal;
- what ``compute()`` reports (device, dtype) and the engine's counters;
- the sampler on cuda (fp32 and bf16): samples per prompt, cut flags, and how many samples equal
  the CPU's (the same seeded stream; kernels may differ in the last bit, so not required);
- the QA fold (fine-tuning, then held-out prediction) on cuda in fp32 and under bf16 autocast.

    python bench/gpu_check.py --dev winogrande/dev.jsonl --items 400 --out gpu_check.json
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

SHAPES = ("tiny-gpt2", "tiny-llama", "tiny-neox", "pythia-160m")
WORDS = ("the a man woman dog cat house car tree river city school doctor teacher ball book "
         "because so but when after before always never quickly slowly big small red old new "
         "ran saw gave took made wanted liked could would was were is are had has").split()


def corpus(n: int = 3000, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 18))) + "." for _ in range(n)]


def requests(dev: str | None, n: int) -> tuple[list, int]:
    """(context, continuation) pairs (the items' two options first, in item order) and the
    number of items."""
    from csbench.winowhat.requests import partial_requests

    if dev:
        items = [json.loads(line) for line in Path(dev).read_text().splitlines()[:n]]
    else:
        rng = random.Random(1)
        items = [{"sentence": s.replace(" the ", " _ ", 1) if " the " in s else "_ " + s,
                  "option1": rng.choice(WORDS), "option2": rng.choice(WORDS)}
                 for s in corpus(n, seed=1)]
    reqs = []
    for it in items:
        reqs += partial_requests(it["sentence"], it["option1"], it["option2"])
    header = "Answer the question about the topic with yes or no. Think about it carefully first.\n"
    for s in corpus(n // 4, seed=2):
        reqs += [(header + "Question: " + s + "\nAnswer:", " yes"),
                 (header + "Question: " + s + "\nAnswer:", " no")]
    reqs += [("", " " + s) for s in corpus(8, seed=3)]
    return reqs, len(items)


def scores(model_dir, reqs, device: str, dtype: str) -> tuple[list[float], dict, float]:
    import torch

    from csbench.lm import open_scorer

    s = open_scorer(model_dir, {"device": device, "dtype": dtype, "batch_size": "auto"}, None)
    t0 = time.perf_counter()
    out = s.loglikelihood(reqs)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    sec = time.perf_counter() - t0
    stats = {k: v for k, v in s.stats.items() if isinstance(v, (int, float))}
    return [lp for lp, _ in out], {**s.compute(), **stats}, sec


def compare(ref: list[float], got: list[float], n_items: int) -> dict:
    d = [abs(a - b) for a, b in zip(ref, got)]
    pred = lambda x, i: x[2 * i + 1] > x[2 * i]  # noqa: E731 - option 2 wins (ties to option 1)
    equal = sum(pred(ref, i) == pred(got, i) for i in range(n_items))
    return {"max_abs_delta": max(d), "median_abs_delta": statistics.median(d),
            "over_1e-4": sum(x > 1e-4 for x in d), "requests": len(d),
            "predictions_equal": equal, "items": n_items}


def lm_check(shape: str, dev, n_items: int, work: Path, device: str = "cuda") -> dict:
    from csbench.lm.backend import sample
    from csbench.models.random import build_random_model

    model_dir = build_random_model(shape, work / shape, texts=corpus())
    reqs, n = requests(dev, n_items)
    ref, ref_info, ref_s = scores(model_dir, reqs, "cpu", "float32")
    row = {"shape": shape, "cpu_float32": {**ref_info, "seconds": ref_s}}
    for dtype in ("float32", "bfloat16"):
        got, info, sec = scores(model_dir, reqs, device, dtype)
        row[f"cuda_{dtype}"] = {**info, "seconds": sec, **compare(ref, got, n)}
    prompts = ["Name something people do at the beach:", "Name a thing in a kitchen:"]
    kw = dict(max_new_tokens=12, temperature=0.69, top_p=0.9, seed=0, stop=("\n",))
    cpu = sample(model_dir, prompts, 20, lm={"device": "cpu", "dtype": "float32"}, **kw)
    for dtype in ("float32", "bfloat16"):
        cut: list = []
        t0 = time.perf_counter()
        got = sample(model_dir, prompts, 20, lm={"device": device, "dtype": dtype}, cut=cut, **kw)
        row[f"sample_cuda_{dtype}"] = {
            "seconds": time.perf_counter() - t0, "samples": [len(g) for g in got],
            "cut_flags": [len(c) for c in cut], "cut": sum(map(sum, cut)),
            "equal_to_cpu_float32": sum(a == b for g, c in zip(got, cpu) for a, b in zip(g, c))}
    return row


def qa_check(work: Path, device: str = "cuda") -> dict:
    from csbench.models.random import build_random_model
    from csbench.qads import finetune as F

    model_dir = build_random_model("tiny-bert-qa", work / "tiny-bert-qa", texts=corpus())
    ctx = ("The Normans were the people who in the 10th and 11th centuries gave their name to "
           "Normandy, a region in France. They were descended from raiders led by Rollo.")
    qs = [("Who led the raiders?", "Rollo"), ("Where is Normandy?", "France"),
          ("What is a house?", None), ("Who gave their name?", "The Normans")]
    data = [{"title": "N", "paragraphs": [{"context": ctx, "qas": [
        {"id": f"q{g}-{v}", "question": q, "is_impossible": a is None,
         "answers": [] if a is None else [{"text": a, "answer_start": ctx.index(a)}]}
        for g, (q, a) in enumerate(qs) for v in (1, 2)]}]}]
    out = {}
    for device in dict.fromkeys(("cpu", device)):
        for dtype in ("float32", "bfloat16"):
            ft = dict(folds=2, seed=0, epochs=2, batch_size=4, learning_rate=1e-3, max_length=64,
                      doc_stride=16, dtype=dtype)
            qa = dict(device=device, batch_size=8, max_answer_len=30, null_threshold=0.0)
            rows = F.run_fold(model_dir, data, 0, ft, qa)
            out[f"{device}_{dtype}"] = [{k: r[k] for k in ("split", "n", "exact", "f1")}
                                        for r in rows]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dev", help="WinoGrande dev.jsonl (else synthetic sentences)")
    ap.add_argument("--items", type=int, default=400)
    ap.add_argument("--shape", action="append", choices=SHAPES)
    ap.add_argument("--device", default="cuda", help="the device checked (cpu: a dry run)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    import torch
    import transformers

    if a.device.startswith("cuda") and not torch.cuda.is_available():
        print("no CUDA device: nothing to check", file=sys.stderr)
        return 2
    gpu = torch.cuda.get_device_name(0) if a.device.startswith("cuda") else a.device
    report = {"torch": torch.__version__, "transformers": transformers.__version__, "gpu": gpu,
              "lm": [], "failures": []}
    with tempfile.TemporaryDirectory() as tmp:
        for shape in a.shape or SHAPES:
            try:
                report["lm"].append(lm_check(shape, a.dev, a.items, Path(tmp), a.device))
            except Exception as e:  # noqa: BLE001 - report every shape, then fail
                report["failures"].append(f"{shape}: {type(e).__name__}: {e}")
            print(json.dumps(report["lm"][-1:] or report["failures"][-1:], indent=1), flush=True)
        try:
            report["qa"] = qa_check(Path(tmp), a.device)
        except Exception as e:  # noqa: BLE001
            report["failures"].append(f"qa: {type(e).__name__}: {e}")
    for r in report["lm"]:
        c = r["cuda_float32"]
        if c["over_1e-4"] or c["predictions_equal"] != c["items"]:
            report["failures"].append(f"{r['shape']}: cuda fp32 differs from cpu fp32")
    Path(a.out).write_text(json.dumps(report, indent=1))
    print(json.dumps({k: report[k] for k in ("gpu", "failures")}, indent=1))
    return 1 if report["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
