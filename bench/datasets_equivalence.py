"""User data sets (renamed-column copies of real sets) against the built-in path, item by item.

WinoWhat: the built-in ``winogrande_dev`` (its normalised table read through the registry, the
WinoWhat paraphrases aligned by ``csbench.winowhat.items.build_items``, as rule
``winowhat_items`` does) and a CSV copy with renamed columns (``mywino``: answer as the right
option's text, the first WinoWhat paraphrase of each item in the ``paraphrase`` role, categories
joined by ';'), built beside it into one item table. 20Q: CSQA2 dev through the built-in
``csqa2`` entry (few-shot pool ``csqa2_train``) and a TSV copy (``myyesno``: dev rows, then train
rows with ``split: train``; renamed columns, answers as true/false). Items, requests (WinoWhat) and
prompts (20Q, every variant) are compared on the whole sets without a model.

Scoring (``--n`` items of each set, 0 = all; fp32 on the CPU, one torch thread):

* WinoWhat, with ``--cache-dir`` (an LM cache holding the model's WinoWhat requests): the built-in
  rows are scored through the cache; the user's rows under the built-in's request keys
  (``winogrande_dev/<variant>/<id>/<option>``: the cache key holds the set's name) through the same
  cache, so a request is a hit only if its text equals the built-in's; and the user's rows under
  their own name by a scorer without a cache (computed on the model), compared item by item.
  Without ``--cache-dir``: both sides by scorers without a cache.
* 20Q (first ``--twentyq-n`` test items, 0 = all): the built-in items, then the user's, through one
  scorer and ``--cache-dir`` (20Q's requests have no caller key: a user request equal to a built-in
  one is a hit); each pass's requests computed anew are counted.

    .venv/bin/python bench/datasets_equivalence.py --mirror ../shared/mirror \\
        --model resources/models/smollm2-135m --n 0 --cache-dir <copy of an LM cache> \\
        --twentyq-n 500 --out /tmp/datasets_equivalence
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import resource
import time
from pathlib import Path

import pandas as pd
import torch

from csbench.config import SCHEMA, default, validate
from csbench.data import normalise
from csbench.datasets import read_dataset
from csbench.lm import open_scorer
from csbench.twentyq.prompts import build_prompts
from csbench.twentyq.scoring import score_items as score_yesno
from csbench.twentyq.yesno import split_items
from csbench.winowhat.items import build_items
from csbench.winowhat.scoring import score_items as score_wino

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("--mirror", type=Path, required=True)
ap.add_argument("--model", required=True, help="materialised model directory")
ap.add_argument("--n", type=int, default=40, help="WinoWhat items of each set scored (0 = all)")
ap.add_argument("--twentyq-n", type=int, default=None, help="CSQA2 test items scored (0 = all; "
                "default --n)")
ap.add_argument("--cache-dir", default=None, help="LM cache directory (see above)")
ap.add_argument("--parts", default="winowhat,twentyq", help="which comparisons to run")
ap.add_argument("--limit", type=int, default=None, help="settings.limit of both CSQA2 paths")
ap.add_argument("--main-csqa2", default=None,
                help="the pre-registry csbench/twentyq/csqa2.py, to compare its CSQA2 items too")
ap.add_argument("--out", type=Path, required=True)
args = ap.parse_args()
torch.set_num_threads(1)
MIRROR, OUT, MODEL, CACHE = args.mirror, args.out, args.model, args.cache_dir
OUT.mkdir(parents=True, exist_ok=True)
LM = {**default("lm"), "device": "cpu", "dtype": "float32"}
res = {"model": MODEL, "lm": {"device": "cpu", "dtype": "float32"}, "cache_dir": CACHE}


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def scored(fn, scorer):
    """``fn(scorer)``, and the pass's requests, cache hits, requests computed anew, seconds."""
    before, t0, c0 = dict(scorer.stats), time.time(), cpu_s()
    out = fn(scorer)
    req, hit = (scorer.stats[k] - before[k] for k in ("requests", "cached"))
    return out, {"requests": req, "cached": hit, "computed": req - hit,
                 "wall_s": round(time.time() - t0, 1), "cpu_s": round(cpu_s() - c0, 1)}


def head(n: int | None, ids) -> set:
    return set(ids if not n else list(ids)[:n])


# ---------------------------------------------------------------- WinoWhat
def winowhat() -> dict:
    tabs = {"dev": OUT / "winogrande_dev.parquet", "ww": OUT / "winowhat.parquet"}
    normalise("winogrande", "dev", {f: MIRROR / "winogrande" / f for f in ("dev.jsonl", "dev-labels.lst")}
              ).to_parquet(tabs["dev"])
    normalise("winowhat", "winowhat", {"WinoWhat.csv": MIRROR / "winowhat" / "WinoWhat.csv"}
              ).to_parquet(tabs["ww"])
    cfg = validate({}, SCHEMA)
    dev, ww = read_dataset("winogrande_dev", cfg, tabs["dev"]), pd.read_parquet(tabs["ww"])
    builtin = build_items({"winogrande_dev": dev}, ww)
    # the user's copy: renamed columns, answer as option text, one paraphrase per item (the first)
    orig = builtin[builtin["variant"] == "orig"]
    first = builtin[(builtin["variant"] == "transf") & (builtin["item_id"] == builtin["orig_id"])]
    para = dict(zip(first["orig_id"], first["sentence"]))
    csv = pd.DataFrame({"qid": orig["item_id"], "text": orig["sentence"], "cand_a": orig["option1"],
                        "cand_b": orig["option2"],
                        "gold": [r.option1 if r.label == 1 else r.option2 for r in orig.itertuples()],
                        "reworded": [para.get(i, "") for i in orig["item_id"]],
                        "topics": [";".join(c) for c in orig["categories"]]})
    csv_path = OUT / "winogrande_dev_renamed.csv"
    csv.to_csv(csv_path, index=False)
    cfg = validate({"datasets": {"mywino": {"kind": "winograd", "path": str(csv_path), "columns": {
        "id": "qid", "sentence": "text", "option1": "cand_a", "option2": "cand_b", "answer": "gold",
        "paraphrase": "reworded", "categories": "topics"}}}}, SCHEMA)
    both = build_items({"winogrande_dev": dev, "mywino": read_dataset("mywino", cfg)}, ww)
    user = both[both["dataset"] == "mywino"].reset_index(drop=True)
    b_items = builtin[builtin["item_id"] == builtin["orig_id"]]  # the item with 2 paraphrases: its first
    req = ["sentence", "option1", "option2", "label", "method", "ctx1", "cont1", "ctx2", "cont2",
           "ctx_sentence", "cont1_sentence", "cont2_sentence"]
    full = b_items.merge(user, on=["item_id", "variant"], suffixes=("_b", "_u"))
    w = {"builtin_rows": len(builtin), "builtin_rows_compared": len(b_items), "user_rows": len(user),
         "orig": int((full["variant"] == "orig").sum()), "transf": int((full["variant"] == "transf").sum()),
         "identical_items_and_requests": bool(len(full) == len(b_items) == len(user) and all(
             (full[f"{c}_b"] == full[f"{c}_u"]).all() for c in req)),
         "categories_differ_as_sets": int(sum(set(a) != set(b) for a, b in
                                              zip(full["categories_b"], full["categories_u"])))}
    print(json.dumps(w), flush=True)
    ids = head(args.n, orig["item_id"])
    b_items = b_items[b_items["orig_id"].isin(ids)].reset_index(drop=True)
    user = user[user["orig_id"].isin(ids)].reset_index(drop=True)
    cached = open_scorer(MODEL, LM, CACHE)
    sb, w["builtin_pass"] = scored(lambda s: score_wino(b_items, s), cached)
    if CACHE:  # the user's requests under the built-in's keys: hits only where the text is equal
        _, w["user_pass_builtin_keys"] = scored(
            lambda s: score_wino(user.assign(dataset="winogrande_dev"), s), cached)
    su, w["user_pass_own_name_no_cache"] = scored(lambda s: score_wino(user, s),
                                                  open_scorer(MODEL, LM, None))
    cols = ["loglik1", "loglik2", "loglik1_sentence", "loglik2_sentence"]
    m = sb.merge(su, on=["item_id", "variant"], suffixes=("_b", "_u"))
    preds = ["pred", "pred_sentence", "pred_sentence_norm"]
    w.update({"scored_orig": int((m["variant"] == "orig").sum()),
              "scored_transf": int((m["variant"] == "transf").sum()),
              "max_abs_loglik_diff": float(max((m[f"{c}_b"] - m[f"{c}_u"]).abs().max() for c in cols)),
              "n_tokens_equal": bool(all((m[f"n_tokens{k}_b"] == m[f"n_tokens{k}_u"]).all()
                                         for k in ("1", "2", "1_sentence", "2_sentence"))),
              "rows_all_preds_equal": int(sum((m[f"{p}_b"] == m[f"{p}_u"]) for p in preds).eq(3).sum())})
    for v in ("orig", "transf"):
        for method in ("", "_sentence", "_sentence_norm"):
            g = m[m["variant"] == v]
            w[f"acc{method}_{v}"] = [round(100 * float(g[f"correct{method}_{s}"].astype(float).mean()), 2)
                                     for s in ("b", "u")]
    return w


# ---------------------------------------------------------------- 20Q on CSQA2 dev
def twentyq() -> dict:
    files = {f: MIRROR / "csqa2" / f for f in ("CSQA2_dev.json.gz", "CSQA2_train.json.gz")}
    tabs = {t: OUT / f"csqa2_{t}.parquet" for t in ("dev", "train")}
    raw = {t: normalise("csqa2", t, files) for t in tabs}
    for t, p in tabs.items():
        raw[t].to_parquet(p)
    cfg = validate({"datasets": {"csqa2": {"settings": {"limit": args.limit, "seed": 0}}}}, SCHEMA)
    b_train, b_test, _ = split_items(read_dataset("csqa2", cfg, tabs["dev"]),
                                     read_dataset("csqa2_train", cfg, tabs["train"]), "csqa2")
    tsv = pd.concat([raw["dev"].assign(part="dev"), raw["train"].assign(part="train")], ignore_index=True)
    tsv = pd.DataFrame({"item": tsv["id"], "claim": tsv["question"],
                        "truth": tsv["answer"].map({"yes": "true", "no": "false"}),
                        "about": tsv["topic_prompt"], "part": tsv["part"]})
    tsv_path = OUT / "csqa2_renamed.tsv"
    tsv.to_csv(tsv_path, sep="\t", index=False)
    cfg_u = validate({"datasets": {"myyesno": {
        "kind": "yesno", "path": str(tsv_path), "settings": {"limit": args.limit, "seed": 0},
        "columns": {"id": "item", "question": "claim", "answer": "truth", "topic": "about",
                    "split": "part"}}}}, SCHEMA)
    u_train, u_test, _ = split_items(read_dataset("myyesno", cfg_u), None, "myyesno")
    sel = ["id", "subject", "question", "label"]
    q = {"test_items": len(b_test), "pool_items": len(b_train),
         "user_items_equal_builtin": bool(u_test[sel].equals(b_test[sel]) and u_train[sel].equals(b_train[sel]))}
    if args.main_csqa2:  # the pre-registry built-in code (yesno_items + sample) on the same tables
        spec = importlib.util.spec_from_file_location("main_csqa2", args.main_csqa2)
        old = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(old)
        o_test = old.sample(old.yesno_items(raw["dev"], "dev")[0], args.limit, 0)
        o_train = old.yesno_items(raw["train"], "train")[0]
        q["builtin_items_equal_main"] = bool(o_test[sel].equals(b_test[sel]) and o_train[sel].equals(b_train[sel]))
    tq = default("twentyq")["scoring"]
    q["identical_prompts_all_variants"] = bool(all(
        [p.raw() for p in build_prompts(b_test, b_train, v, tq["seed"])]
        == [p.raw() for p in build_prompts(u_test, u_train, v, tq["seed"])] for v in tq["variants"]))
    print(json.dumps(q), flush=True)
    n = args.n if args.twentyq_n is None else args.twentyq_n
    b_test, u_test = (t.head(n) if n else t for t in (b_test, u_test))
    scorer = open_scorer(MODEL, LM, CACHE)
    sb, q["builtin_pass"] = scored(
        lambda s: score_yesno(s.loglikelihood, b_test, b_train, tq["variants"], tq["seed"]), scorer)
    if not CACHE:  # each side on its own scorer
        scorer = open_scorer(MODEL, LM, None)
    su, q["user_pass"] = scored(
        lambda s: score_yesno(s.loglikelihood, u_test, u_train, tq["variants"], tq["seed"]), scorer)
    m = sb.merge(su, on=["variant", "id"], suffixes=("_b", "_u"))
    q.update({"rows": len(m), "items": len(b_test), "variants": tq["variants"],
              "max_abs_logprob_diff": float(max((m[f"{c}_b"] - m[f"{c}_u"]).abs().max()
                                                for c in ("logprob_yes", "logprob_no"))),
              "pred_equal": int((m["pred_b"] == m["pred_u"]).sum())})
    for v, g in m.groupby("variant", sort=False):
        q[f"acc_{v}"] = [round(100 * float((g[f"pred_{s}"] == g[f"label_{s}"]).mean()), 2) for s in ("b", "u")]
    return q


for part in args.parts.split(","):
    res[part] = {"winowhat": winowhat, "twentyq": twentyq}[part]()
    print(json.dumps(res[part], indent=1), flush=True)
(OUT / "result.json").write_text(json.dumps(res, indent=1))
print(json.dumps(res))
