"""ProtoQA generation baseline on real weights: the sampler the ``protoqa_generate`` rule runs
(``csbench.lm.backend.sample``: the decoding loop of ``csbench.lm.generate``, each sample stopping
at its first sentence end), with the workflow's settings, on the first questions of the dev file.
Reported: wall and CPU seconds (model loading included, as in the job), the sampler's token counts,
the top answers per question; ``--check-order`` samples the questions again in reverse order in
the same run and reports whether every sample is the same (a prompt's samples must not depend on
the other prompts or their order).

This bench used to run the former ``model.generate`` path beside the loop; that path was removed
from the library (``tests/test_lm_generate.py`` keeps a ``model.generate`` reference and checks
the loop gives its samples on tiny models). The old/new figures in docs/protoqa.md were taken with
this script as of commit 314274a (``git show 314274a:bench/protoqa_generate.py``).

    nice -n 15 .venv/bin/python bench/protoqa_generate.py \
        --model-dir resources/models/smollm2-135m \
        --questions ../shared/mirror/protoqa/dev.crowdsourced.jsonl --n-questions 8 \
        --threads 2 --out bench/out/protoqa_generate_smollm2.json
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def timed(fn):
    t, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - t, time.process_time() - c


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--questions", required=True, help="ProtoQA dev.crowdsourced.jsonl")
    ap.add_argument("--n-questions", type=int, default=8, help="first N questions of the file")
    ap.add_argument("--num-samples", type=int, default=300)
    ap.add_argument("--chunk", type=int, default=100)
    ap.add_argument("--max-new-tokens", type=int, default=20)
    ap.add_argument("--temperature", type=float, default=0.69)
    ap.add_argument("--top-p", type=float, default=0.9)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--check-order", action="store_true",
                    help="sample again in reverse question order and compare")
    ap.add_argument("--out", default=None, help="write the figures as JSON here")
    args = ap.parse_args()

    import torch

    from csbench.lm.backend import sample
    from csbench.logs import setup_logging
    from csbench.provenance import provenance
    from csbench.protoqa.baseline import SENTENCE_ENDS, question_to_prompt, rank_answers
    from csbench.protoqa.data import load_questions

    setup_logging()
    torch.set_num_threads(args.threads)
    questions = load_questions(args.questions)
    qids = list(questions)[: args.n_questions]
    prompts = [question_to_prompt(questions[q].question) for q in qids]
    kw = dict(max_new_tokens=args.max_new_tokens, temperature=args.temperature,
              top_p=args.top_p, seed=args.seed, chunk=args.chunk)
    lm = {"device": "cpu", "dtype": args.dtype}
    out = {"model_dir": str(args.model_dir), "spec": provenance(args.model_dir).get("spec"),
           "settings": kw, "num_samples": args.num_samples, "threads": torch.get_num_threads(),
           "dtype": args.dtype, "machine": platform.processor() or platform.machine(),
           "cpus": os.cpu_count(), "loadavg_start": os.getloadavg()}

    def run(ps, stats):
        return sample(args.model_dir, ps, args.num_samples, lm=lm, stop=SENTENCE_ENDS,
                      stats=stats, **kw)

    stats: dict = {}
    texts, wall, cpu = timed(lambda: run(prompts, stats))
    out["run"] = {"wall_s": wall, "cpu_s": cpu, **stats}
    print(f"{len(qids)} questions x {args.num_samples} samples: {wall:.1f} s wall, {cpu:.1f} s CPU,"
          f" {stats['sampled_tokens']} tokens sampled", flush=True)
    if args.check_order:
        again: dict = {}
        rev, wall2, cpu2 = timed(lambda: run(prompts[::-1], again))
        out["reversed"] = {"wall_s": wall2, "cpu_s": cpu2, **again}
        out["same_samples_reversed"] = rev[::-1] == texts
        print(f"reversed order: {wall2:.1f} s wall, same samples: {out['same_samples_reversed']}",
              flush=True)
    out["questions"] = [{"id": q, "prompt": p, "top5": rank_answers(t)[:5]}
                        for q, p, t in zip(qids, prompts, texts)]
    out["loadavg_end"] = os.getloadavg()
    print(json.dumps({k: out[k] for k in ("run", "questions")}, indent=1, ensure_ascii=False))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
