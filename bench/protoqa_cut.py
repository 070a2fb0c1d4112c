"""ProtoQA: what the ranked list should do with samples that ``max_new_tokens`` cut (issue 28).

Samples the dev questions once with the workflow's sampler and settings (300 samples,
temperature 0.69, top-p 0.9, 20 new tokens, chunk 100, seed 0, each sample stopping at its first
sentence end), keeping per sample whether the token budget ended it, and writes them to
``--samples`` (an existing file is read instead: sampling runs once). Then builds the top-20
ranked lists under every cut policy (``keep``, ``drop``, ``complete_words``:
``csbench.protoqa.baseline.rank_answers``) from the same samples and scores them (Max
Answers@k / Max Incorrect@k; exact and WordNet matching, plus embedding with ``--encoder``).
Reported: the share of cut samples (all, per question), the figures per policy and how many
list entries came from cut samples. ``--chat``: the prompts in the model's chat template (the
completion prompt as the user's message; needs ``csbench.lm.prompt``, the ``lm.chat_template``
setting), for the raw-prompt vs chat-prompt comparison. ``--recipe`` (``raw`` by default here):
where a sample stops and what its answer is (``csbench.protoqa.baseline.RECIPES``); with
``--from-parquet`` it re-counts a run's stored samples under another recipe's answers (e.g. the
paper's stop-word removal on samples drawn with the raw recipe), no sampling.

    nice -n 5 .venv/bin/python bench/protoqa_cut.py \\
        --model-dir resources/models/smollm2-135m --dtype bfloat16 \\
        --questions ../shared/mirror/protoqa/dev.crowdsourced.jsonl \\
        --samples bench/out/protoqa_cut_smollm2.samples.json --out bench/out/protoqa_cut_smollm2.json
    # the samples of a reproduce run instead (every dev question, the run's prompt format)
    .venv/bin/python bench/protoqa_cut.py --questions ../shared/mirror/protoqa/dev.crowdsourced.jsonl \\
        --from-parquet results/protoqa/protoqa_dev/generated/gemma3-270m/samples.parquet --out bench/out/cut_gemma.json
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections import Counter
from pathlib import Path

from csbench.runtime import job_environment
from protoqa_generate import add_sampling_args  # bench/ (the script's own directory)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
job_environment()                 # as in the workflow's jobs: OMP_WAIT_POLICY=PASSIVE (before torch)


def sample_all(args, questions, qids) -> dict:
    import torch

    from csbench.lm.generate import sample_completions
    from csbench.models.load import load_causal_lm
    from csbench.protoqa.baseline import RECIPES, question_to_prompt

    torch.set_num_threads(args.threads)
    prompts = [question_to_prompt(questions[q].question) for q in qids]
    model, tokenizer = load_causal_lm(args.model_dir, "cpu", args.dtype)
    if args.chat:   # the prompt as the user's message in the model's chat template
        from csbench.lm.prompt import Formatter, PromptFormat   # the chat-template setting's

        fmt = Formatter(PromptFormat(chat=True), tokenizer, str(args.model_dir))
        prompts = [fmt.text(p) for p in prompts]
    stats, texts, cut = Counter(), [], []
    t, c = time.perf_counter(), time.process_time()
    # blocks of questions (a question's samples do not depend on the others), so that a run
    # stopped by --max-minutes keeps the questions it finished
    for i in range(0, len(prompts), args.block):
        if time.perf_counter() - t > 60 * args.max_minutes:
            print(f"--max-minutes {args.max_minutes}: stopped after {i} questions", flush=True)
            break
        one: dict = {}
        texts += sample_completions(model, tokenizer, prompts[i:i + args.block], args.num_samples,
                                    max_new_tokens=args.max_new_tokens,
                                    temperature=args.temperature, top_p=args.top_p,
                                    seed=args.seed, chunk=args.chunk,
                                    stop=RECIPES[args.recipe]["stop"],
                                    stats=one, cut=cut, workers=args.threads)
        stats.update(one)
    run = {"wall_s": time.perf_counter() - t, "cpu_s": time.process_time() - c, **stats,
           "recipe": args.recipe, "prompt_format": "chat" if args.chat else "raw", "dtype": args.dtype, "threads": args.threads, "model_dir": str(args.model_dir),
           "settings": {k: getattr(args, k) for k in ("num_samples", "max_new_tokens",
                                                      "temperature", "top_p", "seed", "chunk")}}
    return {"run": run, "questions": {q: {"prompt": p, "samples": s, "cut": k}
                                      for q, p, s, k in zip(qids, prompts, texts, cut)}}


def from_parquet(path) -> dict:
    """The samples of a workflow run (``samples.parquet`` and the ``meta.json`` beside it) in
    this script's samples layout."""
    import pandas as pd

    table = pd.read_parquet(path).sort_values(["question_id", "sample"], kind="stable")
    meta_path = Path(path).with_name("meta.json")
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    run = {"from": str(path), **{k: meta[k] for k in ("prompt_format", "compute_dtype", "settings")
                                 if k in meta}}
    return {"run": run, "questions": {
        str(q): {"samples": g["text"].tolist(), "cut": [bool(c) for c in g["cut"]]}
        for q, g in table.groupby("question_id", sort=False)}}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model-dir", help="the model to sample (not with --from-parquet)")
    ap.add_argument("--questions", required=True, help="ProtoQA dev.crowdsourced.jsonl")
    ap.add_argument("--n-questions", type=int, default=None, help="first N questions (all)")
    ap.add_argument("--samples", help="samples file (written once, then read)")
    ap.add_argument("--from-parquet", help="a workflow run's results/protoqa/protoqa_dev/generated/<model>/"
                                           "samples.parquet instead of sampling (--samples unused)")
    add_sampling_args(ap)
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--block", type=int, default=4, help="questions per sampling call")
    ap.add_argument("--max-minutes", type=float, default=10.0,
                    help="start no sampling block after this many minutes")
    ap.add_argument("--chat", action="store_true",
                    help="chat prompt: each completion prompt as the user message of the model's "
                         "chat template (csbench.lm.prompt, the lm.chat_template setting)")
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--recipe", default="raw", choices=["paper", "raw"],
                    help="csbench.protoqa.baseline.RECIPES: where a sample stops when sampled here "
                         "(raw: the first sentence end; paper: the first '.'; give --max-new-tokens "
                         "10 for the paper's budget) and what its answer is (raw: the folded "
                         "text; paper: folded, without NLTK's English stop words)")
    ap.add_argument("--similarities", default="exact,wordnet")
    ap.add_argument("--encoder", default=None, help="embedding matching with this encoder")
    ap.add_argument("--out", default=None, help="write the figures as JSON here")
    args = ap.parse_args()
    if not (args.from_parquet or (args.samples and args.model_dir)):
        ap.error("--from-parquet, or --samples and --model-dir, are required")

    from csbench.logs import setup_logging
    from csbench.protoqa.baseline import CUT_POLICIES, rank_answers, sample_answer
    from csbench.protoqa.data import Predictions, load_questions
    from csbench.protoqa.scoring import Scorer, evaluate

    setup_logging()
    questions = load_questions(args.questions)
    qids = list(questions)[:args.n_questions]
    if args.from_parquet:   # a workflow run's samples (protoqa_generate), no sampling here
        data = from_parquet(args.from_parquet)
    elif (path := Path(args.samples)).exists():
        data = json.loads(path.read_text())
    else:
        data = sample_all(args, questions, qids)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, ensure_ascii=False) + "\n")
        print(f"sampled {len(data['questions'])} questions: {data['run']['wall_s']:.1f} s wall, "
              f"{data['run']['cpu_s']:.1f} s CPU", flush=True)
    got = data["questions"]
    qids = [q for q in qids if q in got]
    n = sum(len(got[q]["cut"]) for q in qids)
    n_cut = sum(sum(got[q]["cut"]) for q in qids)
    per_q = {q: sum(got[q]["cut"]) / len(got[q]["cut"]) for q in qids}
    out = {"run": data.get("run"), "recipe": args.recipe, "questions": len(qids), "samples": n, "cut": n_cut,
           "cut_share": n_cut / n, "cut_share_per_question": {
               "min": min(per_q.values()), "median": statistics.median(per_q.values()),
               "max": max(per_q.values())}, "policies": {}}
    print(f"{len(qids)} questions, {n} samples, cut by the budget: {n_cut} "
          f"({100 * n_cut / n:.1f}%); per question min/median/max "
          f"{out['cut_share_per_question']}", flush=True)
    embedder = None
    sims = args.similarities.split(",") + (["embedding"] if args.encoder else [])
    if args.encoder:
        from csbench.embed import Embedder

        embedder = Embedder(args.encoder, cache_dir=None)
    scorers = {s: Scorer(s, embedder=embedder) for s in sims}
    for policy in CUT_POLICIES:
        ranked = {q: rank_answers(got[q]["samples"], args.top, got[q]["cut"], policy,
                                  args.recipe)
                  for q in qids}
        # list entries that some cut sample gave (under this policy), and those only cut ones gave
        from_cut, only_cut = 0, 0
        for q in qids:
            by = {}
            for s, c in zip(got[q]["samples"], got[q]["cut"]):
                a = sample_answer(s, c, policy, args.recipe)
                if a:
                    by.setdefault(a, set()).add(bool(c))
            from_cut += sum(True in by[a] for a in ranked[q])
            only_cut += sum(by[a] == {True} for a in ranked[q])
        row = {"list_entries": sum(len(r) for r in ranked.values()),
               "entries_from_cut_samples": from_cut, "entries_only_from_cut_samples": only_cut,
               "answers_kept": sum(bool(sample_answer(s, c, policy, args.recipe)) for q in qids
                                   for s, c in zip(got[q]["samples"], got[q]["cut"])),
               "example": {q: ranked[q][:8] for q in qids[:4]}}
        for sim, scorer in scorers.items():
            t = time.perf_counter()
            df = evaluate(Predictions(ranked), {q: questions[q] for q in qids}, scorer)
            means = df[df.question_id == "mean"].set_index("metric")["score"]
            row[sim] = {m: float(v) for m, v in means.items()}
            print(f"{policy} / {sim}: {time.perf_counter() - t:.1f} s", flush=True)
        out["policies"][policy] = row
    metrics = list(next(iter(out["policies"].values()))[sims[0]])
    for sim in sims:
        print(f"\n{sim}:\n| metric | " + " | ".join(CUT_POLICIES) + " |")
        for m in metrics:
            print(f"| {m} | " + " | ".join(f"{100 * out['policies'][p][sim][m]:.2f}"
                                           for p in CUT_POLICIES) + " |")
    for p in CUT_POLICIES:
        r = out["policies"][p]
        print(p, {k: v for k, v in r.items() if not isinstance(v, dict)})
    cut_answers = Counter(sample_answer(s, True, "keep") for q in qids
                          for s, c in zip(got[q]["samples"], got[q]["cut"]) if c)
    out["frequent_cut_texts"] = cut_answers.most_common(15)
    print("frequent cut texts:", out["frequent_cut_texts"])
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
