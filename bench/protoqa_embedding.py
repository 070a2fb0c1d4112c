"""ProtoQA embedding matching on the real dev set: the previous implementation against the current
one in the same run, cold (empty embedding cache) and warm (same cache again), with a bit-level
check that both give the same per-question scores.

    NLTK_DATA=resources/nltk_data .venv/bin/python bench/protoqa_embedding.py ../shared/mirror/protoqa

``--threads N`` (default 1, the ``threads`` of rule ``protoqa_eval``) sets the process up like a
workflow job (``csbench.runtime.job_environment`` + ``limit_threads(N)``); ``--threads 0`` leaves
the library defaults (torch and BLAS use every core), which is how the first 443 s figure in
docs/protoqa.md was taken. Each implementation gets its own fresh cache directory and its own
loaded encoder (model loading is not timed); both prediction files are scored with one scorer, as
in bench/protoqa_wordnet.py.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

FILES = {"gpt2finetuned": "dev.predictions.gpt2finetuned.json",
         "human": "dev.predictions.human.jsonl"}
ENCODER = "sentence-transformers/all-MiniLM-L6-v2"


class OldEmbeddingMatcher:
    """``csbench.protoqa.matching.EmbeddingMatcher`` as of commit 9975260, kept verbatim (minus
    the docstring) as the baseline: texts encoded per question (targets on first use, then each
    answer list), GP work on the process's BLAS threads."""

    def __init__(self, embedder, threshold: float = 0.1, seed: int = 0):
        self.embedder = embedder
        self.threshold = threshold
        self.seed = seed
        self._models: dict[str, list] = {}

    def _text(self, question: str, answer: str) -> str:
        return f"{question} {answer}"

    def _fit(self, q) -> list:
        import numpy as np

        if q.qid in self._models:
            return self._models[q.qid]
        from sklearn.gaussian_process import GaussianProcessClassifier
        from sklearn.gaussian_process.kernels import RBF, ConstantKernel

        raw = [a for a, _ in q.raw] or []
        members = [set(c) for c in q.clusters]
        texts = list(dict.fromkeys(raw + [a for c in q.clusters for a in c]))
        X = self.embedder.encode([self._text(q.question, a) for a in texts])
        models = []
        kernel = None       # hyper-parameters fitted on the first listed cluster, then reused
        for mem in members:
            y = np.array([1 if a in mem else 0 for a in texts])
            if 0 < y.sum() < len(y):
                gpc = GaussianProcessClassifier(
                    kernel=kernel if kernel is not None else ConstantKernel(1.0) * RBF(1.0),
                    optimizer=None if kernel is not None else "fmin_l_bfgs_b",
                    random_state=self.seed)
                gpc.fit(X, y)
                kernel = gpc.kernel_
                models.append(("gp", gpc))
            else:
                models.append(("nn", X[y == 1]))
        self._models[q.qid] = models
        return models

    def matrix(self, answers: list[str], q):
        import numpy as np

        m = np.zeros((len(answers), len(q.clusters)))
        if not answers:
            return m
        models = self._fit(q)
        Z = self.embedder.encode([self._text(q.question, a) for a in answers])
        probs = np.zeros_like(m)
        for j, (kind, mdl) in enumerate(models):
            if kind == "gp":
                probs[:, j] = mdl.predict_proba(Z)[:, 1]
            else:
                probs[:, j] = np.clip((Z @ mdl.T).max(axis=1), 0.0, 1.0)
        best = probs.argmax(axis=1)
        ok = probs[np.arange(len(answers)), best] >= self.threshold
        m[np.arange(len(answers))[ok], best[ok]] = 1.0
        return m


def scorer_for(impl: str, embedder):
    from csbench.protoqa.scoring import Scorer

    scorer = Scorer("embedding", embedder=embedder)
    if impl == "old":
        scorer.embedding = None                 # no prefetch: Scorer.prepare does nothing
        scorer._matrix = OldEmbeddingMatcher(embedder).matrix
    return scorer


def run(impl: str, cache_dir: Path, questions, preds) -> dict:
    from csbench.embed import Embedder
    from csbench.protoqa.scoring import evaluate

    emb = Embedder(ENCODER, cache_dir=cache_dir)
    emb.dim                                     # load the model outside the timing
    scorer = scorer_for(impl, emb)
    t, c = time.perf_counter(), time.process_time()
    tables = {name: evaluate(p, questions, scorer) for name, p in preds.items()}
    return {"wall_s": time.perf_counter() - t, "cpu_s": time.process_time() - c,
            "texts_encoded": emb.n_encoded, "tables": tables}


def same_bits(a, b) -> bool:
    import numpy as np

    return (a.question_id.tolist() == b.question_id.tolist() and a.metric.tolist() == b.metric.tolist()
            and np.array_equal(a.score.to_numpy(np.float64).view(np.int64),
                               b.score.to_numpy(np.float64).view(np.int64)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mirror", help="folder with dev.crowdsourced.jsonl and the prediction files")
    ap.add_argument("--threads", type=int, default=1,
                    help="thread cap as in a workflow job (0: library defaults)")
    ap.add_argument("--no-old", action="store_true", help="time the current implementation only")
    ap.add_argument("--out", default=None, help="write the figures as JSON here")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.threads > 0:                        # before numpy/torch start their thread pools
        from csbench.runtime import job_environment, limit_threads

        job_environment()
        limit_threads(args.threads)

    from csbench.protoqa import METRICS
    from csbench.protoqa.data import load_predictions, load_questions

    mirror = Path(args.mirror)
    questions = load_questions(mirror / "dev.crowdsourced.jsonl")
    preds = {n: load_predictions(mirror / f) for n, f in FILES.items()}
    impls = ["new"] if args.no_old else ["old", "new"]
    out = {"questions": len(questions), "threads": args.threads or "library default",
           "load_average_start": os.getloadavg()}
    tables = {}
    with tempfile.TemporaryDirectory() as tmp:
        for phase in ("cold", "warm"):
            for impl in impls:
                r = run(impl, Path(tmp) / impl, questions, preds)
                tables[impl, phase] = r.pop("tables")
                out[f"{impl}_{phase}"] = r
                print(f"{impl} {phase}: {r}", file=sys.stderr, flush=True)
    out["load_average_end"] = os.getloadavg()
    ref = tables[impls[0], "cold"]
    out["identical_per_question_scores"] = all(
        same_bits(ref[n], t[n]) for t in tables.values() for n in FILES)
    if not args.no_old:
        for phase in ("cold", "warm"):
            out[f"speedup_{phase}"] = out[f"old_{phase}"]["wall_s"] / out[f"new_{phase}"]["wall_s"]
            out[f"speedup_{phase}_cpu"] = out[f"old_{phase}"]["cpu_s"] / out[f"new_{phase}"]["cpu_s"]
    t = tables["new", "cold"]
    out["means"] = {n: t[n][t[n].question_id == "mean"].set_index("metric")["score"].to_dict()
                    for n in FILES}
    print(f"{'metric':18s}" + "".join(f"{n:>16s}" for n in FILES))
    for m in METRICS:
        print(f"{m:18s}" + "".join(f"{out['means'][n][m]:16.4f}" for n in FILES))
    print(json.dumps({k: v for k, v in out.items() if k != "means"}, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
