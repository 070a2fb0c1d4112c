"""ProtoQA generation baseline on real weights: the sampler the ``protoqa_generate`` rule runs
(``csbench.lm.generate.sample_completions``, each sample stopping at its first sentence end), with
the workflow's settings, on the first questions of the dev file. Reported: wall and CPU seconds
(CPU / wall = cores kept busy), the sampler's token counts, the top answers per question.

``--check-order`` samples the questions again in reverse order in the same run and reports
whether every sample is the same (a prompt's samples must not depend on the other prompts or
their order).

``--compare REV`` times the sampler as of git revision ``REV`` (``src/csbench/lm/generate.py`` at
that commit, loaded beside the current one; same model object; what it imports from its package,
the top-p filter ``lm/topp.py`` and the random stream ``lm/noise.py`` included, is the current
code) against the current one, block by block of ``--block`` questions, alternating which runs
first, and checks that every sample is the same: the baseline with ``--baseline-threads`` torch
threads, the current sampler with ``--threads`` and ``--workers`` (prompts sampled at once, one-thread operations each).
``--sampler REV`` times the sampler of that revision alone (``bench/protoqa_cores.py`` runs this
script in several processes at once).

    nice -n 15 .venv/bin/python bench/protoqa_generate.py \\
        --model-dir resources/models/smollm2-135m \\
        --questions ../shared/mirror/protoqa/dev.crowdsourced.jsonl --n-questions 8 \\
        --compare bac7256 --out bench/out/protoqa_generate_smollm2.json

The old/new figures of the sampling loop against ``model.generate`` in docs/protoqa.md were taken
with this script as of commit 314274a (``git show 314274a:bench/protoqa_generate.py``).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import time
import zlib
from pathlib import Path

from csbench.runtime import job_environment

os.environ.setdefault("HF_HUB_OFFLINE", "1")
job_environment()                 # as in the workflow's jobs: OMP_WAIT_POLICY=PASSIVE (before torch)


def timed(fn):
    t, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - t, time.process_time() - c


def baseline_module(rev: str):
    """``csbench.lm.generate`` as of git revision ``rev``, as a module beside the current one."""
    import importlib.util

    repo = Path(__file__).resolve().parent.parent
    src = subprocess.run(["git", "show", f"{rev}:src/csbench/lm/generate.py"], cwd=repo,
                         capture_output=True, text=True, check=True).stdout
    spec = importlib.util.spec_from_loader("csbench.lm._generate_baseline", loader=None)
    mod = importlib.util.module_from_spec(spec)
    mod.__package__ = "csbench.lm"                 # its relative imports: the current package
    exec(compile(src, f"{rev}:src/csbench/lm/generate.py", "exec"), mod.__dict__)
    return mod


def add_sampling_args(ap) -> None:
    """The baseline's sampling settings (the workflow's defaults) and the thread count; also
    bench/protoqa_cut.py's."""
    ap.add_argument("--num-samples", type=int, default=300)
    ap.add_argument("--chunk", type=int, default=100)
    ap.add_argument("--max-new-tokens", type=int, default=20)
    ap.add_argument("--temperature", type=float, default=0.69)
    ap.add_argument("--top-p", type=float, default=0.9)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--questions", required=True, help="ProtoQA dev.crowdsourced.jsonl")
    ap.add_argument("--n-questions", type=int, default=8, help="first N questions of the file")
    ap.add_argument("--skip", type=int, default=0, help="after skipping this many")
    add_sampling_args(ap)
    ap.add_argument("--workers", type=int, default=None,
                    help="prompts sampled at once (default: --threads)")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--check-order", action="store_true",
                    help="sample again in reverse question order and compare")
    ap.add_argument("--compare", metavar="REV", default=None,
                    help="time the sampler of git revision REV against the current one")
    ap.add_argument("--baseline-threads", type=int, default=2)
    ap.add_argument("--sampler", metavar="REV", default=None,
                    help="time the sampler of git revision REV instead of the current one "
                         "(with --threads; no --compare)")
    ap.add_argument("--block", type=int, default=2, help="questions per timed block (--compare)")
    ap.add_argument("--out", default=None, help="write the figures as JSON here")
    args = ap.parse_args()

    import torch

    from csbench.lm.generate import sample_completions
    from csbench.logs import setup_logging
    from csbench.models.load import load_causal_lm
    from csbench.provenance import provenance
    from csbench.protoqa.baseline import SENTENCE_ENDS, question_to_prompt, rank_answers
    from csbench.protoqa.data import load_questions

    setup_logging()
    questions = load_questions(args.questions)
    qids = list(questions)[args.skip:args.skip + args.n_questions]
    prompts = [question_to_prompt(questions[q].question) for q in qids]
    kw = dict(max_new_tokens=args.max_new_tokens, temperature=args.temperature,
              top_p=args.top_p, seed=args.seed, chunk=args.chunk, stop=SENTENCE_ENDS)
    workers = args.threads if args.workers is None else args.workers
    out = {"model_dir": str(args.model_dir), "spec": provenance(args.model_dir).get("spec"),
           "settings": {k: v for k, v in kw.items() if k != "stop"},
           "num_samples": args.num_samples, "threads": args.threads, "workers": workers,
           "dtype": args.dtype, "machine": platform.processor() or platform.machine(),
           "cpus": os.cpu_count(), "loadavg_start": os.getloadavg()}
    (model, tokenizer), load_wall, load_cpu = timed(
        lambda: load_causal_lm(args.model_dir, "cpu", args.dtype))
    out["load"] = {"wall_s": load_wall, "cpu_s": load_cpu}

    def current(ps, stats):
        torch.set_num_threads(args.threads)
        if args.sampler:
            return baseline_module(args.sampler).sample_completions(
                model, tokenizer, ps, args.num_samples, stats=stats, **kw)
        return sample_completions(model, tokenizer, ps, args.num_samples, stats=stats,
                                  workers=workers, **kw)

    if args.compare:
        base = baseline_module(args.compare)

        def baseline(ps, stats):
            torch.set_num_threads(args.baseline_threads)
            return base.sample_completions(model, tokenizer, ps, args.num_samples, stats=stats,
                                           **kw)

        out["baseline"] = {"rev": args.compare, "threads": args.baseline_threads}
        blocks, texts, same = [], [], True
        for b, i in enumerate(range(0, len(prompts), args.block)):
            ps = prompts[i:i + args.block]
            runs = [("baseline", baseline), ("current", current)]
            row = {"questions": qids[i:i + args.block], "load": os.getloadavg()[0]}
            got = {}
            for name, fn in (runs if b % 2 == 0 else runs[::-1]):
                stats: dict = {}
                got[name], wall, cpu = timed(lambda fn=fn: fn(ps, stats))
                row[name] = {"wall_s": wall, "cpu_s": cpu, "sampled_tokens":
                             stats["sampled_tokens"], "decode_tokens": stats["decode_tokens"]}
            row["same_samples"] = got["baseline"] == got["current"]
            same &= row["same_samples"]
            texts.extend(got["current"])
            blocks.append(row)
            print(f"block {b} {row['questions']}: baseline {row['baseline']['wall_s']:.1f} s wall"
                  f" / {row['baseline']['cpu_s']:.1f} s CPU, current "
                  f"{row['current']['wall_s']:.1f} / {row['current']['cpu_s']:.1f}, same samples:"
                  f" {row['same_samples']}, load {row['load']:.1f}", flush=True)
        total = {name: {k: sum(r[name][k] for r in blocks) for k in ("wall_s", "cpu_s")}
                 for name in ("baseline", "current")}
        for t in total.values():
            t["cores_busy"] = t["cpu_s"] / t["wall_s"]
        total["wall_ratio"] = total["baseline"]["wall_s"] / total["current"]["wall_s"]
        total["cpu_ratio"] = total["baseline"]["cpu_s"] / total["current"]["cpu_s"]
        out.update(blocks=blocks, total=total, same_samples=same)
        print(json.dumps(total, indent=1), f"same samples: {same}", flush=True)
    else:
        stats: dict = {}
        begin = time.time()
        texts, wall, cpu = timed(lambda: current(prompts, stats))
        out["run"] = {"wall_s": wall, "cpu_s": cpu, "cores_busy": cpu / wall, "start": begin,
                      "end": time.time(), "sampler": args.sampler or "current", **stats}
        print(f"{len(qids)} questions x {args.num_samples} samples: {wall:.1f} s wall, {cpu:.1f} s"
              f" CPU, {stats['sampled_tokens']} tokens sampled", flush=True)
    if args.check_order:
        again: dict = {}
        rev, wall2, cpu2 = timed(lambda: current(prompts[::-1], again))
        out["reversed"] = {"wall_s": wall2, "cpu_s": cpu2, **again}
        out["same_samples_reversed"] = rev[::-1] == texts
        print(f"reversed order: {wall2:.1f} s wall, same samples: {out['same_samples_reversed']}",
              flush=True)
    out["questions"] = [{"id": q, "prompt": p, "top5": rank_answers(t)[:5]}
                        for q, p, t in zip(qids, prompts, texts)]
    out["samples_crc32"] = [zlib.crc32(json.dumps(t).encode("utf-8")) for t in texts]
    out["loadavg_end"] = os.getloadavg()
    print(json.dumps(out["questions"], indent=1, ensure_ascii=False))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
