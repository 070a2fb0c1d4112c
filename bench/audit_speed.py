"""Audit speed on synthetic short texts: FAISS blocked exact search vs straightforward baselines.

    .venv/bin/python bench/audit_speed.py --n 100000 --stage search
    .venv/bin/python bench/audit_speed.py --n 100000 --stage end2end --cache /tmp/emb_cache

``search``: precomputed normalised embeddings (n train x n test, MiniLM dimension 384, random
unit vectors); csbench.nearest.top1 (FAISS IndexFlatIP, queries streamed in blocks) against
blocked numpy all-pairs (matrix product + argmax) and sklearn NearestNeighbors (brute, cosine),
all in the same run. ``end2end``: synthetic sentences encoded through csbench.embed.Embedder
(cold cache, then warm cache) and the full embedding audit; the baseline encodes with the same
model without a cache and runs the numpy all-pairs search. ``lexical``: trigram and BM25 best
matches. Ratios are against the baseline measured in the same run.
"""
import argparse
import json
import time

import numpy as np


def unit(rng, n, d):
    x = rng.standard_normal((n, d), dtype=np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def sentences(n, seed):
    from csbench.wordnet import wordnet

    rng = np.random.default_rng(seed)
    lemmas = sorted({l.name().replace("_", " ") for s in wordnet().all_synsets("n") for l in s.lemmas()})[:20000]
    verbs = ["is", "has", "can", "uses", "needs", "makes", "likes", "sees", "holds", "breaks"]
    out = []
    for _ in range(n):
        a, b = rng.choice(len(lemmas), 2)
        out.append(f"A {lemmas[a]} {verbs[rng.integers(len(verbs))]} the {lemmas[b]} "
                   f"{rng.choice(['today', 'at night', 'in winter', 'sometimes', 'often'])}.")
    return out


def timed(fn, *a, **kw):
    t0 = time.perf_counter()
    r = fn(*a, **kw)
    return r, time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100000)
    ap.add_argument("--stage", choices=["search", "warm", "end2end", "lexical"], default="search")
    ap.add_argument("--methods", default="embedding", help="audit methods for --stage warm (comma list)")
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--cache", default="/tmp/csbench_bench_emb")
    ap.add_argument("--sklearn", action="store_true", help="also time sklearn NearestNeighbors")
    ap.add_argument("--no-baseline", action="store_true", help="end2end: skip the baseline run")
    args = ap.parse_args()
    from csbench import nearest

    res = {"n_train": args.n, "n_test": args.n, "stage": args.stage}
    if args.stage == "search":
        rng = np.random.default_rng(0)
        base, q = unit(rng, args.n, args.dim), unit(rng, args.n, args.dim)
        (fs, fi), res["faiss_exact_s"] = timed(nearest.top1, q, base, block=16384, threads=2)
        (ns, ni), res["numpy_blocked_s"] = timed(nearest.numpy_top1, q, base)
        res["agree"] = float((fi == ni).mean())
        res["max_abs_diff"] = float(np.abs(fs - ns).max())
        res["speedup_vs_numpy"] = res["numpy_blocked_s"] / res["faiss_exact_s"]
        if args.sklearn:
            from sklearn.neighbors import NearestNeighbors

            nn = NearestNeighbors(n_neighbors=1, algorithm="brute", metric="cosine", n_jobs=2).fit(base)
            (_, si), res["sklearn_brute_s"] = timed(nn.kneighbors, q)
            res["speedup_vs_sklearn"] = res["sklearn_brute_s"] / res["faiss_exact_s"]
        (_, vi), res["faiss_ivf_s"] = timed(nearest.top1, q, base, method="ivf", threads=2)
        res["ivf_recall_at_1"] = float((vi == ni).mean())
    elif args.stage == "end2end":
        import pandas as pd

        from csbench.audit.engine import run_audit
        from csbench.embed import Embedder

        tr, te = sentences(args.n, 1), sentences(args.n, 2)
        res["distinct_texts"] = len(set(tr) | set(te))
        train, test = pd.DataFrame({"id": range(args.n), "t": tr}), pd.DataFrame({"id": range(args.n), "t": te})
        base_emb = Embedder("sentence-transformers/all-MiniLM-L6-v2", cache_dir=None, batch_size=128)

        def baseline():
            return nearest.numpy_top1(base_emb.encode(te), base_emb.encode(tr))

        if not args.no_baseline:
            _, res["baseline_encode_numpy_s"] = timed(baseline)
        emb = Embedder("sentence-transformers/all-MiniLM-L6-v2", cache_dir=args.cache)
        kw = dict(methods=["embedding"], threads=2)
        _, res["audit_cold_cache_s"] = timed(run_audit, train, test, emb.encode, ["t"], **kw)
        emb2 = Embedder("sentence-transformers/all-MiniLM-L6-v2", cache_dir=args.cache)
        _, res["audit_warm_cache_s"] = timed(run_audit, train, test, emb2.encode, ["t"], **kw)
        res["warm_encoded_texts"] = emb2.n_encoded
        if not args.no_baseline:
            res["speedup_cold_vs_baseline"] = res["baseline_encode_numpy_s"] / res["audit_cold_cache_s"]
            res["speedup_warm_vs_baseline"] = res["baseline_encode_numpy_s"] / res["audit_warm_cache_s"]
    elif args.stage == "warm":
        # the full audit through Embedder with every text's vector already cached (random unit
        # vectors stand in for encoder outputs), against numpy all-pairs on the same vectors
        import pandas as pd

        from csbench.audit.engine import run_audit
        from csbench.embed import EmbeddingCache, Embedder, cache_file, text_key

        tr, te = sentences(args.n, 1), sentences(args.n, 2)
        uniq = list(dict.fromkeys(tr + te))
        spec = f"synthetic-random-{args.dim}"
        cache = EmbeddingCache(cache_file(args.cache, spec))
        vecs = unit(np.random.default_rng(0), len(uniq), args.dim)
        _, res["cache_fill_s"] = timed(cache.put, [text_key(t) for t in uniq], vecs)
        index = dict(zip(uniq, vecs))
        (ns, ni), res["numpy_allpairs_s"] = timed(
            nearest.numpy_top1, np.stack([index[t] for t in te]), np.stack([index[t] for t in tr]))
        train, test = pd.DataFrame({"id": range(args.n), "t": tr}), pd.DataFrame({"id": range(args.n), "t": te})
        emb = Embedder(spec, cache_dir=args.cache)
        out, res["audit_s"] = timed(run_audit, train, test, emb.encode, ["t"],
                                    methods=args.methods.split(","), threads=2)
        res.update({k: round(float(v), 2) for k, v in out["summary"].iloc[0].items() if k.endswith("_s")})
        res["encoded_by_model"] = emb.n_encoded
        res["agree_with_numpy"] = float((out["top1"]["similarity"].to_numpy() - ns < 1e-5).mean())
        res["search_speedup_vs_numpy"] = res["numpy_allpairs_s"] / res["search_s"]
    else:
        from csbench.audit import lexical

        tr, te = sentences(args.n, 1), sentences(args.n, 2)
        _, res["trigram_s"] = timed(lexical.trigram_top1, te, tr)
        _, res["bm25_s"] = timed(lexical.bm25_top1, te, tr)
        _, res["duplicates_s"] = timed(lexical.duplicates, range(args.n), te, range(args.n), tr)
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
