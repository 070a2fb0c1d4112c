"""ProtoQA embedding matching on the real dev set: the current matcher
(``csbench.protoqa.matching.EmbeddingMatcher`` through ``csbench.protoqa.scoring``), cold (empty
embedding cache) and then warm (the same cache again) in the same run, with a bit-level check
that both give the same per-question scores.

    NLTK_DATA=resources/nltk_data .venv/bin/python bench/protoqa_embedding.py ../shared/mirror/protoqa

``--threads N`` (default 1, the ``threads`` of rule ``protoqa_eval``) sets the process up like a
workflow job (``csbench.runtime.job_environment`` + ``limit_threads(N)``); ``--threads 0`` leaves
the library defaults (torch and BLAS use every core), which is how the first 443 s figure in
docs/protoqa.md was taken. Each phase loads its own encoder (model loading is not timed); both
prediction files are scored with one scorer, as in bench/protoqa_wordnet.py.

This bench used to run a verbatim copy of the previous ``EmbeddingMatcher`` beside the current one;
it now measures the current matcher only (no old library code is kept here). The old/new figures
in docs/protoqa.md were taken with this script as of commit 314274a
(``git show 314274a:bench/protoqa_embedding.py``).
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


def run(cache_dir: Path, questions, preds) -> dict:
    from csbench.embed import Embedder
    from csbench.protoqa.scoring import Scorer, evaluate

    emb = Embedder(ENCODER, cache_dir=cache_dir)
    emb.dim                                     # load the model outside the timing
    scorer = Scorer("embedding", embedder=emb)
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
    out = {"questions": len(questions), "threads": args.threads or "library default",
           "load_average_start": os.getloadavg()}
    tables = {}
    with tempfile.TemporaryDirectory() as tmp:
        for phase in ("cold", "warm"):
            r = run(Path(tmp), questions, preds)
            tables[phase] = r.pop("tables")
            out[phase] = r
            print(f"{phase}: {r}", file=sys.stderr, flush=True)
    out["load_average_end"] = os.getloadavg()
    out["identical_per_question_scores"] = all(
        same_bits(tables["cold"][n], tables["warm"][n]) for n in FILES)
    out["warm_over_cold_wall"] = out["warm"]["wall_s"] / out["cold"]["wall_s"]
    t = tables["cold"]
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
