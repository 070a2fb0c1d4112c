"""Official SQuAD 2.0 metric on the real dev file for the always-no-answer baseline.

    .venv/bin/python bench/qads_metric_baseline.py ../shared/mirror/squad_v2/dev-v2.0.json.gz
"""
import json
import sys
import time

from csbench.io import read_json
from csbench.qads.metric import evaluate

t = time.time()
data = read_json(sys.argv[1])["data"]
preds = {qa["id"]: "" for a in data for p in a["paragraphs"] for qa in p["qas"]}
res = evaluate(data, preds, {q: 0.0 for q in preds})
res["seconds"] = round(time.time() - t, 2)
print(json.dumps(res, indent=1))
