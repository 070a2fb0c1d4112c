"""Audits of CommonsenseQA 2.0 and Com2Sense (train vs test) on the real files of a mirror.

    .venv/bin/python bench/audit_real.py --mirror ../shared/mirror --out results/bench/audit_real

Prints, per benchmark, the duplicate counts, the 15 most similar pairs under each method and the
top-1 similarity summary; writes the same tables under --out.
"""
import argparse
import logging
import time
from pathlib import Path

import pandas as pd

from csbench.audit.engine import run_audit
from csbench.data import com2sense, csqa2
from csbench.embed import Embedder
from csbench.io import write_parquet, write_tsv

AUDITS = {
    "csqa2": (csqa2, {"train": ["CSQA2_train.json.gz"], "test": ["CSQA2_test_no_answers.json.gz"]},
              ["question"], "topic_prompt"),
    "com2sense": (com2sense, {"train": ["train.json", "pair_id_train.json"],
                              "test": ["test.json", "pair_id_test.json"]}, ["sent"], None),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mirror", default="../shared/mirror")
    ap.add_argument("--out", default="results/bench/audit_real")
    ap.add_argument("--cache", default="results/cache/embeddings")
    ap.add_argument("--encoder", default="sentence-transformers/all-MiniLM-L6-v2")
    ap.add_argument("--top-k", type=int, default=15)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    pd.set_option("display.width", 250, "display.max_colwidth", 90)
    emb = Embedder(args.encoder, cache_dir=args.cache)
    rows = []
    for name, (mod, files, fields, short) in AUDITS.items():
        src = Path(args.mirror) / name
        tables = {t: mod.normalise(t, {f: src / f for f in fs}) for t, fs in files.items()}
        t0 = time.perf_counter()
        out = run_audit(tables["train"], tables["test"], emb.encode, fields, short_field=short,
                        top_k=args.top_k, name=name, threads=2)
        wall = time.perf_counter() - t0
        d = Path(args.out) / name
        write_parquet(out["top1"], d / "top1.parquet")
        write_tsv(out["duplicates"], d / "duplicates.tsv")
        for k, v in out.items():
            if k.startswith("top_pairs"):
                write_tsv(v, d / f"{k}.tsv", float_format="%.4f")
        s = out["summary"].assign(wall_s=wall)
        rows.append(s)
        print(f"\n===== {name}: train {len(tables['train'])} vs test {len(tables['test'])} ({wall:.1f}s)")
        print(out["duplicates"]["kind"].value_counts().to_string() if len(out["duplicates"]) else "no duplicates")
        for m in ("embedding", "trigram", "bm25", "wordnet"):
            print(f"--- top {args.top_k} pairs, {m}")
            print(out[f"top_pairs.{m}"][["rank", "score", "test_text", "train_text"]].to_string(index=False))
    summary = pd.concat(rows, ignore_index=True)
    write_tsv(summary, Path(args.out) / "summary.tsv", float_format="%.4f")
    print("\n===== summary")
    print(summary.T.to_string())


if __name__ == "__main__":
    main()
