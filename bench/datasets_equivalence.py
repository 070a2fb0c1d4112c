"""User data sets (renamed-column copies of real sets) against the built-in path, item by item.

WinoWhat: WinoGrande dev and WinoWhat through the built-in item builder
(``csbench.winowhat.items.build_items``), and a CSV copy with renamed columns (answer as the right
option's text, the first WinoWhat paraphrase of each item, categories joined by ';') through
``csbench.datasets.read_dataset`` and ``build_dataset``. 20Q: CSQA2 dev through the built-in
``csqa2`` entry (few-shot pool ``csqa2_train``), and a TSV copy (dev rows, then train rows with
``split: train``; renamed columns, answers as true/false). Every item's requests (WinoWhat) and
every variant's prompts (20Q) are compared on the whole sets; the first ``--n`` items of each are
scored on both paths by separate scorers without a cache (same model, fp32, CPU) and compared
item by item. The copies are written under ``--out``.

    .venv/bin/python bench/datasets_equivalence.py --mirror ../shared/mirror \
        --model resources/models/smollm2-135m --n 40 --out /tmp/datasets_equivalence
"""
from __future__ import annotations

import argparse
import importlib.util
import json
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
from csbench.winowhat.items import build_dataset, build_items
from csbench.winowhat.scoring import score_items as score_wino

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("--mirror", type=Path, required=True)
ap.add_argument("--model", required=True, help="materialised model directory")
ap.add_argument("--n", type=int, default=40, help="items of each set scored on the model")
ap.add_argument("--limit", type=int, default=None, help="settings.limit of both CSQA2 paths")
ap.add_argument("--main-csqa2", default=None,
                help="the pre-registry csbench/twentyq/csqa2.py, to compare its CSQA2 items too")
ap.add_argument("--out", type=Path, required=True)
args = ap.parse_args()
torch.set_num_threads(1)
N, LIMIT, MIRROR, OUT, MODEL = args.n, args.limit, args.mirror, args.out, args.model
OUT.mkdir(parents=True, exist_ok=True)
LM = {**default("lm"), "device": "cpu", "dtype": "float32"}
res = {"n": N, "model": MODEL, "lm": {"device": "cpu", "dtype": "float32"}}

# ---------------- WinoWhat
dev = normalise("winogrande", "dev", {f: MIRROR / "winogrande" / f for f in ("dev.jsonl", "dev-labels.lst")})
ww = normalise("winowhat", "winowhat", {"WinoWhat.csv": MIRROR / "winowhat" / "WinoWhat.csv"})
key = set(zip(dev["sentence"], dev["option1"], dev["option2"]))
ww = ww[[k in key for k in zip(ww["sentence"], ww["option1"], ww["option2"])]].reset_index(drop=True)
builtin = build_items({"winogrande_dev": dev}, ww)
# the user's copy: renamed columns, answer as option text, one paraphrase per item (the first)
orig = builtin[(builtin["dataset"] == "winogrande_dev") & (builtin["variant"] == "orig")]
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
user = pd.DataFrame(build_dataset(read_dataset("mywino", cfg), "mywino"))
b_items = pd.concat([orig, first], ignore_index=True)
req = ["sentence", "option1", "option2", "label", "method", "ctx1", "cont1", "ctx2", "cont2",
       "ctx_sentence", "cont1_sentence", "cont2_sentence"]
full = b_items.merge(user, on=["item_id", "variant"], suffixes=("_b", "_u"))
res["winowhat_items"] = {"orig": int((full["variant"] == "orig").sum()), "transf": int((full["variant"] == "transf").sum()),
                         "builtin_rows": len(b_items), "user_rows": len(user),
                         "identical_items_and_requests": bool(len(full) == len(b_items) == len(user) and all(
                             (full[f"{c}_b"] == full[f"{c}_u"]).all() for c in req)),
                         "identical_categories": bool(all(sorted(a) == sorted(b) for a, b in zip(full["categories_b"], full["categories_u"])))}
print(json.dumps(res["winowhat_items"]), flush=True)
ids = set(orig["item_id"].head(N))
b_items = b_items[b_items["orig_id"].isin(ids)].reset_index(drop=True)
user = user[user["orig_id"].isin(ids)].reset_index(drop=True)
t0 = time.time()
sb = score_wino(b_items, open_scorer(MODEL, LM, None))
t1 = time.time()
su = score_wino(user, open_scorer(MODEL, LM, None))
t2 = time.time()
cols = ["loglik1", "loglik2", "loglik1_sentence", "loglik2_sentence"]
m = sb.merge(su, on=["item_id", "variant"], suffixes=("_b", "_u"))
w = {"items_orig": int((m["variant"] == "orig").sum()), "items_transf": int((m["variant"] == "transf").sum()),
     "rows_builtin": len(sb), "rows_user": len(su),
     "same_requests": bool(all((m[f"{c}_b"] == m[f"{c}_u"]).all() for c in
                              ["sentence", "option1", "option2", "label", "method"])),
     "max_abs_loglik_diff": float(max((m[f"{c}_b"] - m[f"{c}_u"]).abs().max() for c in cols)),
     "pred_equal": int(sum((m["pred_b"] == m["pred_u"]) & (m["pred_sentence_b"] == m["pred_sentence_u"]))),
     "categories_equal": bool(all(sorted(a) == sorted(b) for a, b in zip(m["categories_b"], m["categories_u"]))),
     "seconds_builtin": round(t1 - t0, 1), "seconds_user": round(t2 - t1, 1)}
for v in ("orig", "transf"):
    for side in ("b", "u"):
        w[f"acc_{v}_{side}"] = float(m.loc[m["variant"] == v, f"correct_{side}"].astype(float).mean())
res["winowhat"] = w
print(json.dumps(w, indent=1), flush=True)

# ---------------- 20Q on CSQA2 dev
files = {f: MIRROR / "csqa2" / f for f in ("CSQA2_dev.json.gz", "CSQA2_train.json.gz")}
tabs = {t: OUT / f"csqa2_{t}.parquet" for t in ("dev", "train")}
raw = {t: normalise("csqa2", t, files) for t in tabs}
for t, p in tabs.items():
    raw[t].to_parquet(p)
cfg = validate({"datasets": {"csqa2": {"settings": {"limit": LIMIT, "seed": 0}}}}, SCHEMA)
b_train, b_test, _ = split_items(read_dataset("csqa2", cfg, tabs["dev"]),
                                 read_dataset("csqa2_train", cfg, tabs["train"]), "csqa2")
tsv = pd.concat([raw["dev"].assign(part="dev"), raw["train"].assign(part="train")], ignore_index=True)
tsv = pd.DataFrame({"item": tsv["id"], "claim": tsv["question"], "truth": tsv["answer"].map({"yes": "true", "no": "false"}),
                    "about": tsv["topic_prompt"], "part": tsv["part"]})
tsv_path = OUT / "csqa2_renamed.tsv"
tsv.to_csv(tsv_path, sep="\t", index=False)
cfg_u = validate({"datasets": {"myyesno": {"kind": "yesno", "path": str(tsv_path), "settings": {"limit": LIMIT, "seed": 0},
                                           "columns": {"id": "item", "question": "claim", "answer": "truth", "topic": "about", "split": "part"}}}}, SCHEMA)
u_train, u_test, _ = split_items(read_dataset("myyesno", cfg_u), None, "myyesno")
sel = ["id", "subject", "question", "label"]
q = {"test_items": len(b_test), "pool_items": len(b_train),
     "user_items_equal_builtin": bool(u_test[sel].equals(b_test[sel]) and u_train[sel].equals(b_train[sel]))}
if args.main_csqa2:  # the pre-registry built-in code (yesno_items + sample) on the same tables
    spec = importlib.util.spec_from_file_location("main_csqa2", args.main_csqa2)
    old = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(old)
    o_test = old.sample(old.yesno_items(raw["dev"], "dev")[0], LIMIT, 0)
    o_train = old.yesno_items(raw["train"], "train")[0]
    q["builtin_items_equal_main"] = bool(o_test[sel].equals(b_test[sel]) and o_train[sel].equals(b_train[sel]))
tq = default("twentyq")["scoring"]
q["identical_prompts_all_variants"] = bool(all(
    [p.raw() for p in build_prompts(b_test, b_train, v, tq["seed"])]
    == [p.raw() for p in build_prompts(u_test, u_train, v, tq["seed"])] for v in tq["variants"]))
print(json.dumps(q), flush=True)
b_test, u_test = b_test.head(N), u_test.head(N)
t0 = time.time()
sb = score_yesno(open_scorer(MODEL, LM, None).loglikelihood, b_test, b_train, tq["variants"], tq["seed"])
t1 = time.time()
su = score_yesno(open_scorer(MODEL, LM, None).loglikelihood, u_test, u_train, tq["variants"], tq["seed"])
t2 = time.time()
m = sb.merge(su, on=["variant", "id"], suffixes=("_b", "_u"))
q.update({"rows": len(m), "variants": tq["variants"],
          "max_abs_logprob_diff": float(max((m[f"{c}_b"] - m[f"{c}_u"]).abs().max() for c in ("logprob_yes", "logprob_no"))),
          "pred_equal": int((m["pred_b"] == m["pred_u"]).sum()),
          "seconds_builtin": round(t1 - t0, 1), "seconds_user": round(t2 - t1, 1)})
for v, g in m.groupby("variant", sort=False):
    q[f"acc_{v}"] = [float((g["pred_b"] == g["label_b"]).mean()), float((g["pred_u"] == g["label_u"]).mean())]
res["twentyq"] = q
print(json.dumps(q, indent=1), flush=True)
(OUT / f"result_{N}.json").write_text(json.dumps(res, indent=1))
print(json.dumps(res))
