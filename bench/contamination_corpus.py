"""The generated corpus of bench/contamination_bench.py: documents cut from text on this machine
(/usr/share/doc, Python sources under /usr/lib/python3*, the venv's site-packages), written as
JSON lines (plain files plus one .zst and one .gz file), with WinoGrande dev items planted in
random documents (verbatim, re-cased and re-punctuated, split across a line break) and WinoWhat
paraphrases; :func:`generate` returns the manifest of what was planted where."""
from __future__ import annotations

import glob
import gzip
import json
import os
import random
import re
import sys
from pathlib import Path

import pandas as pd
import zstandard

DOC_CHARS = 64_000


def source_files() -> list[str]:
    pats = ["/usr/share/doc/**/*", "/usr/lib/python3*/**/*.py",
            str(Path(sys.prefix) / "lib/python3*/site-packages/**/*.py"),
            str(Path(sys.prefix) / "lib/python3*/site-packages/**/*.txt"),
            str(Path(sys.prefix) / "lib/python3*/site-packages/**/*.md")]
    files = sorted({f for p in pats for f in glob.glob(p, recursive=True) if os.path.isfile(f)})
    return files


def read_text(path: str) -> str | None:
    try:
        raw = gzip.open(path).read() if path.endswith(".gz") else open(path, "rb").read()
    except (OSError, EOFError):
        return None
    if b"\x00" in raw[:4096]:
        return None
    return raw.decode("utf-8", errors="replace")


def variants(text: str, rng: random.Random) -> dict[str, str]:
    recased = "".join(c.upper() if rng.random() < 0.5 else c.lower() for c in text)
    recased = re.sub(r"\s+", lambda m: rng.choice([" ", " , ", " -- ", "  ", "; "]), recased)
    recased = recased.replace(".", "!?")
    words = text.split(" ")
    cut = rng.randint(1, max(1, len(words) - 1))
    split = " ".join(words[:cut]) + "\n" + " ".join(words[cut:])
    return {"verbatim": text, "recased": recased, "linebreak": split}


def generate(out: Path, target: int, wg: pd.DataFrame, ww: pd.DataFrame, seed: int = 0) -> dict:
    rng = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    texts = [t for t in (read_text(f) for f in source_files()) if t]
    docs_per_pass = []
    for t in texts:
        for i in range(0, len(t), DOC_CHARS):
            docs_per_pass.append(t[i:i + DOC_CHARS])
    pass_bytes = sum(len(d) for d in docs_per_pass)
    n_docs = int(len(docs_per_pass) * target / pass_bytes) + 1
    # planted items: answer-filled WinoGrande dev sentences
    items = wg.sample(frac=1.0, random_state=seed).reset_index(drop=True)
    plan = {}
    kinds = ["verbatim"] * 400 + ["recased"] * 200 + ["linebreak"] * 200
    for k, row in zip(kinds, items.itertuples(index=False)):
        filled = row.sentence.replace("_", row.option1 if str(row.answer) == "1" else row.option2)
        plan[rng.randrange(n_docs)] = (row.id, k, variants(filled, rng)[k])
    para = ww.sample(n=min(150, len(ww)), random_state=seed)
    used = {p[0] for p in plan.values()}
    for row in para.itertuples(index=False):
        if row.orig_id in used or "_" not in row.paraphrased_sentence:
            continue
        filled = row.paraphrased_sentence.replace(
            "_", row.option1 if str(row.label) == "1" else row.option2)
        plan[rng.randrange(n_docs)] = (row.orig_id, "paraphrase", filled)
    manifest = []
    n_files = max(3, -(-target // (256 << 20)))
    per_file = -(-n_docs // n_files)
    names = [f"corpus-{i:03d}.jsonl" for i in range(n_files)]
    names[-2] += ".zst"
    names[-1] += ".gz"
    d = 0
    for name in names:
        path = out / name
        if path.name.endswith(".zst"):
            fh = zstandard.ZstdCompressor(level=1, threads=2).stream_writer(open(path, "wb"))
        elif path.name.endswith(".gz"):
            fh = gzip.open(path, "wb", compresslevel=1)
        else:
            fh = open(path, "wb")
        with fh:
            for _ in range(per_file):
                if d >= n_docs:
                    break
                text = docs_per_pass[rng.randrange(len(docs_per_pass))]
                if d in plan:
                    item, kind, planted = plan[d]
                    cut = rng.randrange(len(text) + 1)
                    cut = text.rfind("\n", 0, cut) + 1
                    text = text[:cut] + planted + "\n" + text[cut:]
                    manifest.append(dict(doc_id=f"doc{d}", item_id=item, kind=kind, file=name,
                                         text=planted))
                fh.write((json.dumps({"id": f"doc{d}", "text": text}) + "\n").encode())
                d += 1
    return {"files": names, "documents": n_docs, "planted": manifest}
