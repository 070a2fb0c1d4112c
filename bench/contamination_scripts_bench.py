"""Fused-scan throughput on text in scripts with characters that are not context-free.

    .venv/bin/python bench/contamination_scripts_bench.py --out /tmp/c7_scripts --rounds 5

Writes three JSON-lines files under ``--out`` (never in the repo; about 80 MB of text each):
Hindi (Devanagari words with vowel signs and viramas), Vietnamese in NFD (Latin letters with
combining accents) and Chinese (context-free characters, no spaces, with punctuation), built
from small word and character lists, since no real text in these scripts is on this machine.
Then, per file, ``--rounds`` alternating rounds of the fused ``ngram`` scan (WinoGrande dev
probes from ``--winogrande``) with the run cache (what the workflow runs) and without it
(``RunCache.MAX_RUNS = 0``: every line with such a run parsed and folded in Python, as before
the cache), in MB of text per CPU-second, median and every round, and their ratio. Hit tables
must be equal.
"""
from __future__ import annotations

import argparse
import json
import time
import unicodedata
from pathlib import Path

import numpy as np

from csbench.contamination.kernels import runs as run_cache
from csbench.contamination.items import extract
from csbench.contamination.scan import ProbeIndex, Scanner
from csbench.data import winogrande as wgmod

HINDI = ("नमस्ते भारत हिन्दी की है में और से को का एक यह लिए पर था कि भी हैं कर गया वह अपने किया "
         "सकता रहा होने बहुत दिन समय साथ लोग काम")
VIET = ("tiếng việt người nước những không được trong này một của có cho với các đã là và "
        "thành phố học sinh")
CHINESE = "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过"


def write(out: Path, rng) -> dict[str, Path]:
    files = {"hindi": out / "hindi.jsonl", "vietnamese_nfd": out / "vi_nfd.jsonl",
             "chinese": out / "zh.jsonl"}
    hi, vi = HINDI.split(), unicodedata.normalize("NFD", VIET).split()
    with open(files["hindi"], "w", encoding="utf-8") as h, \
            open(files["vietnamese_nfd"], "w", encoding="utf-8") as v, \
            open(files["chinese"], "w", encoding="utf-8") as z:
        for i in range(3000):
            h.write(json.dumps({"id": f"h{i}", "text": " ".join(rng.choice(hi, 3000))},
                               ensure_ascii=False) + "\n")
            v.write(json.dumps({"id": f"v{i}", "text": " ".join(rng.choice(vi, 3000))},
                               ensure_ascii=False) + "\n")
            t = "".join(rng.choice(list(CHINESE), 6000))
            z.write(json.dumps({"id": f"z{i}", "text": "，".join(
                t[j:j + 30] for j in range(0, len(t), 30))}, ensure_ascii=False) + "\n")
    return files


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="/tmp/c7_scripts")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--winogrande", default="../shared/mirror/winogrande/dev.jsonl")
    ap.add_argument("--report", default="/tmp/c7_scripts_report.json")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    files = write(out, np.random.default_rng(0))
    wg = wgmod.normalise("dev", {"dev.jsonl": Path(a.winogrande)})
    idx = ProbeIndex(extract("winogrande_dev", wg), n=13, min_words=8, methods=("ngram",))
    limit = run_cache.RunCache.MAX_RUNS
    runs: dict[str, dict[str, list]] = {k: {} for k in files}
    for f in files.values():                                    # compile and warm up
        Scanner(idx).scan_pieces([(str(f), 0, -1)], "jsonl", "text", "id", max_bytes=1_000_000)
    for _ in range(a.rounds):
        for kind, f in files.items():
            for name, cap in (("run_cache", limit), ("python_fallback", 0)):
                run_cache.RunCache.MAX_RUNS = cap
                run_cache._RUNS.clear()                             # each round from an empty cache
                t0 = time.process_time()
                sc = Scanner(idx).scan_pieces([(str(f), 0, -1)], "jsonl", "text", "id")
                runs[kind].setdefault(name, []).append(sc.bytes / 1e6 / (time.process_time() - t0))
                runs[kind].setdefault(name + "_rows", []).append(len(sc.table()))
    run_cache.RunCache.MAX_RUNS = limit
    report = {}
    for kind, r in runs.items():
        assert len(set(r["run_cache_rows"] + r["python_fallback_rows"])) == 1, kind
        med = {k: round(float(np.median(v)), 1) for k, v in r.items() if not k.endswith("rows")}
        med["ratio"] = round(med["run_cache"] / med["python_fallback"], 2)
        med["rounds"] = {k: [round(x, 1) for x in v] for k, v in r.items()
                         if not k.endswith("rows")}
        report[kind] = med
    Path(a.report).write_text(json.dumps(report, indent=1))
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
