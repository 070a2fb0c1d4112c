"""What a larger model costs against a smaller one on the LM tasks' own work, on this CPU.

Two materialised models in one dtype, in one process, interleaved on the same work (each task
run A B then B A, ProtoQA once each), no LM cache; wall and CPU seconds of each run (CPU seconds
stay meaningful when other jobs load the machine):

- WinoGrande dev: the first ``--winogrande`` items, the original method's requests
  (``csbench.winowhat.requests.partial_requests``), as ``winowhat_score`` sends them;
- 20Q on CSQA2 dev: the first ``--twentyq`` items of each of the four prompt variants (few-shot
  examples from CSQA2 train, seed 0), as ``twentyq_score`` builds them;
- ProtoQA sampling: the first dev question, ``--protoqa`` samples with the workflow's defaults
  (temperature 0.69, top-p 0.9, 20 new tokens, chunk 100, sentence-end stop), one worker.

Also the 2048^3 matmul rate in the dtype and in fp32 (CPU seconds, best of 5). Models with the
same tokenizer (Qwen2.5-Coder 0.5B and 1.5B) have the same token counts on every task, so the
ratio times the smaller model's measured task time estimates the larger one's.

    .venv/bin/python bench/lm_model_ratio.py --mirror ../shared/mirror \\
        --small resources/models/qwen2.5-coder-0.5b --large resources/models/qwen2.5-coder-1.5b \\
        --threads 1 --out bench/out/lm_model_ratio_qwen.json
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


def matmul_tflops(dtype, n: int = 2048) -> float:
    import torch

    a, b = torch.randn(n, n).to(dtype), torch.randn(n, n).to(dtype)
    a @ b  # warm-up
    best = float("inf")
    for _ in range(5):
        c = time.process_time()
        a @ b
        best = min(best, time.process_time() - c)
    return 2 * n ** 3 / best / 1e12


def workloads(mirror: Path, n_wg: int, n_tq: int):
    from csbench.data.csqa2 import normalise
    from csbench.protoqa.baseline import question_to_prompt
    from csbench.protoqa.data import load_questions
    from csbench.twentyq.yesno import yesno_items
    from csbench.twentyq.prompts import ANSWERS, VARIANTS, build_prompts
    from csbench.winowhat.requests import partial_requests

    rows = [json.loads(line) for line in open(mirror / "winogrande/dev.jsonl", encoding="utf-8")
            if line.strip()][:n_wg]
    wg = [r for d in rows for r in partial_requests(d["sentence"], d["option1"], d["option2"])]
    files = {f: str(mirror / "csqa2" / f) for f in ("CSQA2_dev.json.gz", "CSQA2_train.json.gz")}
    test, train = (yesno_items(normalise(t, files).rename(columns={"topic_prompt": "topic"})
                               .assign(split=t))[0] for t in ("dev", "train"))
    tq = [(p, a) for v in VARIANTS for p in build_prompts(test, train, v, 0)[:n_tq] for a in ANSWERS]
    qs = load_questions(mirror / "protoqa/dev.crowdsourced.jsonl")
    return wg, tq, [question_to_prompt(qs[next(iter(qs))].question)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mirror", type=Path, default=Path("../shared/mirror"))
    ap.add_argument("--small", required=True, help="materialised model directory")
    ap.add_argument("--large", required=True, help="materialised model directory")
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--winogrande", type=int, default=40, help="WinoGrande dev items")
    ap.add_argument("--twentyq", type=int, default=4, help="CSQA2 dev items per prompt variant")
    ap.add_argument("--protoqa", type=int, default=300, help="samples of one ProtoQA question")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args(argv)
    import torch

    from csbench.lm import open_scorer
    from csbench.lm.generate import sample_completions
    from csbench.protoqa.baseline import SENTENCE_ENDS
    from csbench.winowhat.requests import partial_requests

    torch.set_num_threads(a.threads)
    wg, tq, pq = workloads(a.mirror, a.winogrande, a.twentyq)
    scorers = {}
    for role in ("large", "small"):
        s = open_scorer(getattr(a, role), {"device": "cpu", "dtype": a.dtype}, None)  # no cache
        s.loglikelihood(partial_requests("A warm-up _ sentence.", "a", "b") * 4)  # not timed
        scorers[role] = s

    def score(role, reqs):
        s = scorers[role]
        f0, p0 = s.stats["forward_tokens"], s.stats["padded_tokens"]
        t, c = time.perf_counter(), time.process_time()
        s.loglikelihood(reqs)
        return dict(seconds=time.perf_counter() - t, cpu_seconds=time.process_time() - c,
                    forward_tokens=s.stats["forward_tokens"] - f0,
                    padded_tokens=s.stats["padded_tokens"] - p0)

    def sample(role):
        s, st = scorers[role], {}
        t, c = time.perf_counter(), time.process_time()
        sample_completions(s.model, s.tokenizer, pq, a.protoqa, max_new_tokens=20,
                           temperature=0.69, top_p=0.9, seed=0, chunk=100, stop=SENTENCE_ENDS,
                           stats=st, workers=1)
        st.update(seconds=time.perf_counter() - t, cpu_seconds=time.process_time() - c)
        return st

    res = {"small": a.small, "large": a.large, "dtype": a.dtype, "threads": a.threads,
           "items": {"winogrande": a.winogrande, "twentyq_per_variant": a.twentyq,
                     "protoqa_samples": a.protoqa},
           "matmul_tflops_per_cpu_s": {"dtype": matmul_tflops(getattr(torch, a.dtype)),
                                       "float32": matmul_tflops(torch.float32)},
           "load_start": os.getloadavg(), "runs": [], "ratio_cpu": {}}
    tasks = (("winogrande", lambda r: score(r, wg), 2), ("twentyq", lambda r: score(r, tq), 2),
             ("protoqa", sample, 1))
    for task, run, rounds in tasks:
        cpu = {"large": 0.0, "small": 0.0}
        for order in (("large", "small"), ("small", "large"))[:rounds]:
            for role in order:
                r = dict(task=task, model=role, load=os.getloadavg()[0], **run(role))
                cpu[role] += r["cpu_seconds"]
                res["runs"].append(r)
                print(r, file=sys.stderr, flush=True)
        res["ratio_cpu"][task] = cpu["large"] / cpu["small"]
    res["load_end"] = os.getloadavg()
    text = json.dumps(res, indent=1)
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
