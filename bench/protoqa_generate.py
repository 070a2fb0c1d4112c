"""ProtoQA generation baseline on real weights: the decoding loop of ``csbench.lm.generate``
(each sample stops at its first sentence end, finished samples leave the batch) against the former
``model.generate`` path (``sample_completions_generate``), same model, threads and settings, in the
same run. Per question both paths run back to back (alternating which goes first, so a change of
machine load hits both); reported: wall and CPU seconds, tokens, and whether the final answers
(after the baseline's cut at the first sentence end and normalisation) and the ranked lists are
the same.

    nice -n 15 .venv/bin/python bench/protoqa_generate.py \
        --model-dir /tmp/real/resources/models/smollm2-135m \
        --questions ../shared/mirror/protoqa/dev.crowdsourced.jsonl --n-questions 8 \
        --threads 2 --out bench/out/protoqa_generate_smollm2.json
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import time
from collections import Counter
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
    ap.add_argument("--out", default=None, help="write the figures as JSON here")
    args = ap.parse_args()

    import torch

    from csbench.lm.generate import sample_completions, sample_completions_generate
    from csbench.logs import setup_logging
    from csbench.models import load_causal_lm, provenance
    from csbench.protoqa.baseline import (SENTENCE_ENDS, clean_completion, question_to_prompt,
                                          rank_answers)
    from csbench.protoqa.data import load_questions

    setup_logging()
    torch.set_num_threads(args.threads)
    model, tok = load_causal_lm(args.model_dir, "cpu", args.dtype)
    questions = load_questions(args.questions)
    qids = list(questions)[: args.n_questions]
    kw = dict(max_new_tokens=args.max_new_tokens, temperature=args.temperature,
              top_p=args.top_p, seed=args.seed, chunk=args.chunk)
    prov = provenance(args.model_dir)
    out = {"model_dir": str(args.model_dir), "spec": prov.get("spec"),
           "parameters": sum(p.numel() for p in model.parameters()),
           "vocab": model.config.get_text_config().vocab_size, "settings": kw,
           "num_samples": args.num_samples, "threads": torch.get_num_threads(),
           "dtype": args.dtype, "machine": platform.processor() or platform.machine(),
           "cpus": os.cpu_count(), "loadavg_start": os.getloadavg(), "questions": []}
    totals = {m: Counter() for m in ("old", "new")}
    for i, qid in enumerate(qids):
        prompt = question_to_prompt(questions[qid].question)
        res = {}
        order = ("old", "new") if i % 2 == 0 else ("new", "old")
        for m in order:
            stats: dict = {}
            if m == "old":
                def fn():
                    return sample_completions_generate(model, tok, [prompt], args.num_samples,
                                                       stats=stats, **kw)[0]
            else:
                def fn():
                    return sample_completions(model, tok, [prompt], args.num_samples,
                                              stop=SENTENCE_ENDS, stats=stats, **kw)[0]
            texts, wall, cpu = timed(fn)
            stats.pop("seconds", None)
            res[m] = {"texts": texts, "wall_s": wall, "cpu_s": cpu, **stats}
            totals[m].update({"wall_s": wall, "cpu_s": cpu, **stats})
        old_clean = [clean_completion(t) for t in res["old"]["texts"]]
        new_clean = [clean_completion(t) for t in res["new"]["texts"]]
        same = sum(a == b for a, b in zip(old_clean, new_clean))
        ranked_old = rank_answers(res["old"]["texts"])
        ranked_new = rank_answers(res["new"]["texts"])
        row = {"id": qid, "prompt": prompt, "first": order[0], "answers_equal": same,
               "ranked_equal": ranked_old == ranked_new,
               "top5_old": ranked_old[:5], "top5_new": ranked_new[:5],
               "distinct_answers_old": len(set(old_clean)),
               "distinct_answers_new": len(set(new_clean))}
        for m in ("old", "new"):
            row[m] = {k: v for k, v in res[m].items() if k != "texts"}
        out["questions"].append(row)
        print(f"{qid} {prompt!r}: old {res['old']['wall_s']:.1f} s"
              f" {res['old']['sampled_tokens']} tok, new {res['new']['wall_s']:.1f} s"
              f" {res['new']['sampled_tokens']} tok,"
              f" answers equal {same}/{len(old_clean)}, ranked equal {row['ranked_equal']}",
              flush=True)
    out["loadavg_end"] = os.getloadavg()
    out["totals"] = {m: dict(c) for m, c in totals.items()}
    o, n = totals["old"], totals["new"]
    out["ratios_old_over_new"] = {k: o[k] / n[k] for k in ("wall_s", "cpu_s", "sampled_tokens",
                                                           "decode_tokens", "prompt_tokens")
                                  if n[k]}
    out["answers_equal"] = sum(q["answers_equal"] for q in out["questions"])
    out["answers_total"] = len(qids) * args.num_samples
    out["ranked_equal"] = sum(q["ranked_equal"] for q in out["questions"])
    print(json.dumps({k: out[k] for k in ("totals", "ratios_old_over_new", "answers_equal",
                                          "answers_total", "ranked_equal")}, indent=1))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
