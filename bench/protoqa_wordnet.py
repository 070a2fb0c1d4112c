"""ProtoQA on the real dev set: mean scores (exact, WordNet) of the release's two prediction files,
and wall time of WordNet scoring (cached matcher) against a plain uncached implementation of the
same matching, measured in the same run. Optionally the embedding matcher too.

    NLTK_DATA=resources/nltk_data .venv/bin/python bench/protoqa_wordnet.py ../shared/mirror/protoqa
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from csbench.protoqa import METRICS
from csbench.protoqa.data import load_predictions, load_questions
from csbench.protoqa.matching import lemma_index, preprocess, tokenize, wordnet_matrix_plain
from csbench.protoqa.scoring import Scorer, evaluate, oracle_answers, score_question
from csbench.wordnet import wordnet

FILES = {"gpt2finetuned": "dev.predictions.gpt2finetuned.json",
         "human": "dev.predictions.human.jsonl"}


def plain_means(preds, questions):
    """Per-question scores with the uncached WordNet matching (matrix computed once per question)."""
    rows = {m: [] for m in METRICS}
    for qid, answers in preds.answers.items():
        if qid not in questions:
            continue
        q = questions[qid]
        ans = [preprocess(a) for a in answers]
        if not ans:
            scores = {m: 0.0 for m in METRICS}
        else:
            mat = wordnet_matrix_plain(ans, q.clusters)
            orc = wordnet_matrix_plain([preprocess(a) for a in oracle_answers(q)], q.clusters)
            scores = score_question(mat, orc, q.counts)
        for m in METRICS:
            rows[m].append(scores[m])
    return {m: float(np.mean(v)) for m, v in rows.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mirror", help="folder with dev.crowdsourced.jsonl and the prediction files")
    ap.add_argument("--no-plain", action="store_true", help="skip the slow baseline")
    ap.add_argument("--embedding", action="store_true", help="also score with MiniLM + GP")
    ap.add_argument("--out", default=None, help="write the figures as JSON here")
    args = ap.parse_args()
    mirror = Path(args.mirror)
    questions = load_questions(mirror / "dev.crowdsourced.jsonl")
    preds = {n: load_predictions(mirror / f) for n, f in FILES.items()}
    tokenize("warm up")                  # imports nltk (tokenizer), shared by both implementations
    out = {"questions": len(questions), "means": {}}
    t, c = time.perf_counter(), time.process_time()
    lemma_index()
    out["lemma_index_build_s"] = time.perf_counter() - t
    out["lemma_index_build_cpu_s"] = time.process_time() - c
    for sim in ["exact", "wordnet"] + (["embedding"] if args.embedding else []):
        embedder = None
        if sim == "embedding":
            from csbench.embed import Embedder

            embedder = Embedder("sentence-transformers/all-MiniLM-L6-v2", cache_dir=None)
        scorer = Scorer(sim, embedder=embedder)     # one matcher (and cache) for both files
        t, c = time.perf_counter(), time.process_time()
        for name, p in preds.items():
            df = evaluate(p, questions, scorer)
            means = df[df.question_id == "mean"].set_index("metric")["score"]
            out["means"][f"{sim}/{name}"] = {m: float(means[m]) for m in METRICS}
        out[f"{sim}_scoring_s"] = time.perf_counter() - t
        out[f"{sim}_scoring_cpu_s"] = time.process_time() - c
    if not args.no_plain:
        t, c = time.perf_counter(), time.process_time()
        wordnet()
        out["nltk_wordnet_load_s"] = time.perf_counter() - t
        out["nltk_wordnet_load_cpu_s"] = time.process_time() - c
        t, c = time.perf_counter(), time.process_time()
        plain = {n: plain_means(p, questions) for n, p in preds.items()}
        out["wordnet_plain_s"] = time.perf_counter() - t
        out["wordnet_plain_cpu_s"] = time.process_time() - c
        out["plain_equals_cached"] = all(
            abs(plain[n][m] - out["means"][f"wordnet/{n}"][m]) < 1e-12 for n in plain for m in METRICS)
        out["speedup_vs_plain"] = out["wordnet_plain_s"] / out["wordnet_scoring_s"]
        out["speedup_vs_plain_cpu"] = out["wordnet_plain_cpu_s"] / out["wordnet_scoring_cpu_s"]
        total = out["lemma_index_build_s"] + out["wordnet_scoring_s"]
        out["wordnet_total_with_index_s"] = total
    print(f"{'metric':18s}" + "".join(f"{k:>26s}" for k in out["means"]))
    for m in METRICS:
        print(f"{m:18s}" + "".join(f"{v[m]:26.4f}" for v in out["means"].values()))
    print(json.dumps({k: v for k, v in out.items() if k != "means"}, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
