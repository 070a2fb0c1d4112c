"""The two encoder backends of ``csbench.embed.Embedder``: the plain ``transformers`` stack
(``csbench.embed_plain.PlainEncoder``) against ``SentenceTransformer``, on the same texts through
the Embedder's own batching (texts of one token length per call), asserting bit-identical vectors;
then the CPU seconds of a fresh process that loads each backend and encodes 100 texts (median of
``--repeats``, the two backends alternating in the same run).

    PYTHONPATH=src HF_HUB_OFFLINE=1 .venv/bin/python bench/embed_backend.py /work/shared/mirror

Texts: every string of the demo mirror (``resources/demo/mirror``: ProtoQA questions and answers
and ``"<question> <answer>"`` pairs, 20Q/CSQA2/SQuAD questions, SQuAD contexts, WSD sentences...),
CSQA2 dev questions, ProtoQA dev answers and ``"<question> <answer>"`` pairs, SQuAD 2.0 dev
questions and contexts (past the 256-token limit, so truncated) from the real mirror, and edge
cases (empty, whitespace around, upper case, unicode). Encoders: the spec
``sentence-transformers/all-MiniLM-L6-v2`` (resolved offline) and any extra directory given with
``--model``, and with ``--tiny`` random tiny encoders of each accepted architecture (BERT, MPNet,
RoBERTa, XLM-R, DistilBERT; mean and CLS pooling; with and without Normalize and lower-casing).
Runs on CPU in float32 with ``--threads`` torch threads (1, as workflow jobs run).
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPEC = "sentence-transformers/all-MiniLM-L6-v2"
EDGE = ["", " ", "  leading", "trailing  ", "\tTabbed\n", "ALL UPPER CASE TEXT", "MiXeD CaSe",
        "café naïve résumé", "東京は日本の首都です", "emoji 🙂 test", "Ελληνικά κείμενα", "a" * 3000,
        " ".join(["word"] * 600), "x", "?", "New\nline"]


def _strings(obj, out: list) -> None:
    if isinstance(obj, str):
        out.append(obj)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            _strings(k, out)
            _strings(v, out)
    elif isinstance(obj, list):
        for v in obj:
            _strings(v, out)


def _load(path: Path):
    text = gzip.open(path, "rt", encoding="utf-8").read() if path.suffix == ".gz" else path.read_text("utf-8")
    try:
        return json.loads(text)
    except ValueError:
        return [json.loads(line) for line in text.splitlines() if line.strip()]


def demo_texts() -> list[str]:
    out: list[str] = []
    for p in sorted((ROOT / "resources/demo/mirror").rglob("*")):
        if p.is_file() and p.suffix in (".json", ".jsonl", ".gz", ".csv", ".txt", ".xml", ".key"):
            if p.suffix in (".json", ".jsonl", ".gz"):
                try:
                    _strings(_load(p), out)
                except (ValueError, UnicodeDecodeError):
                    pass
            else:
                out.extend(p.read_text("utf-8", errors="replace").splitlines())
    for p in (ROOT / "resources/demo/mirror/protoqa").glob("*.jsonl"):
        for q in _load(p):
            if isinstance(q, dict) and isinstance(q.get("question"), dict) and "answers" in q:
                out.extend(f"{q['question']['normalized']} {a}" for a in q["answers"].get("raw", {}))
    return out


def real_texts(mirror: Path, per_source: int) -> list[str]:
    rng = random.Random(0)
    csqa2 = [json.loads(line)["question"] for line in
             gzip.open(mirror / "csqa2/CSQA2_dev.json.gz", "rt", encoding="utf-8") if line.strip()]
    proto, pairs = [], []
    for q in _load(mirror / "protoqa/dev.crowdsourced.jsonl"):
        for a in q["answers"]["raw"]:
            proto.append(a)
            pairs.append(f"{q['question']['normalized']} {a}")
    squad = _load(mirror / "squad_v2/dev-v2.0.json.gz")
    sq_q = [qa["question"] for art in squad["data"] for par in art["paragraphs"] for qa in par["qas"]]
    sq_c = [par["context"] for art in squad["data"] for par in art["paragraphs"]]

    def pick(xs, n):
        xs = list(dict.fromkeys(xs))
        return rng.sample(xs, min(n, len(xs)))

    return (pick(csqa2, per_source) + pick(proto, per_source) + pick(pairs, per_source)
            + pick(sq_q, per_source) + pick(sq_c, per_source // 8))


def tiny_models(root: Path) -> list[str]:
    """Random tiny encoders of each architecture in ``csbench.embed_plain.ENCODERS``, saved as
    sentence-transformers folders with MiniLM's tokenizer: mean and CLS pooling, with and without
    the Normalize module, ``do_lower_case`` on and off (vectors are meaningless; only the equality
    of the two backends is checked)."""
    import shutil

    import torch
    from transformers import AutoModel, BertConfig, DistilBertConfig, MPNetConfig, RobertaConfig, XLMRobertaConfig

    from csbench.models.offline import resolve

    minilm = Path(resolve(SPEC))
    size = dict(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                intermediate_size=64, pad_token_id=0)
    cases = [("bert", BertConfig(**size, max_position_embeddings=512), "mean", True, False),
             ("mpnet", MPNetConfig(**size, max_position_embeddings=514), "mean", True, True),
             ("roberta", RobertaConfig(**size, max_position_embeddings=514), "cls", True, False),
             ("xlm-roberta", XLMRobertaConfig(**size, max_position_embeddings=514), "mean", False, False),
             ("distilbert", DistilBertConfig(vocab_size=30522, dim=32, n_layers=2, n_heads=2, hidden_dim=64,
                                             pad_token_id=0, max_position_embeddings=512), "cls", False, True)]
    out = []
    for name, config, pooling, normalize, lower in cases:
        d = root / f"tiny-{name}-{pooling}{'-norm' if normalize else ''}{'-lower' if lower else ''}"
        torch.manual_seed(0)
        AutoModel.from_config(config).save_pretrained(d)
        for f in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
            shutil.copy(minilm / f, d / f)
        modules = json.loads((minilm / "modules.json").read_text())[:3 if normalize else 2]
        (d / "modules.json").write_text(json.dumps(modules))
        (d / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 128, "do_lower_case": lower}))
        (d / "1_Pooling").mkdir()
        (d / "1_Pooling/config.json").write_text(json.dumps({"embedding_dimension": 32, "pooling_mode": pooling}))
        out.append(str(d))
    return out


def compare(spec: str, texts: list[str]) -> dict:
    import numpy as np
    from sentence_transformers import SentenceTransformer

    from csbench.embed import Embedder
    from csbench.embed_plain import PlainEncoder
    from csbench.models.offline import resolve

    plain, st = Embedder(spec, cache_dir=None), Embedder(spec, cache_dir=None)
    assert isinstance(plain.model, PlainEncoder), f"{spec}: not the standard stack"
    st._model = SentenceTransformer(resolve(spec), device="cpu")
    lp, ls = plain._token_lengths(texts), st._token_lengths(texts)
    a, b = plain.encode(texts), st.encode(texts)
    mixed = texts[:1000]  # one call of mixed lengths: padded batches, sentence-transformers' own sort
    padded_equal = bool(np.array_equal(plain._encode(mixed), st._encode(mixed)))
    diff = float(np.abs(a - b).max()) if len(texts) else 0.0
    return {"spec": spec, "texts": len(texts), "distinct": len(set(texts)),
            "truncated": sum(n >= plain.model.max_seq_length for n in lp),
            "dim_equal": plain.dim == st.dim, "token_lengths_equal": lp == ls,
            "array_equal": bool(np.array_equal(a, b)), "max_abs_diff": diff,
            "padded_batches_equal": padded_equal}


def child(backend: str, spec: str) -> None:
    """One fresh process: load the encoder with ``backend`` and encode 100 texts."""
    from csbench.embed import Embedder

    e = Embedder(spec, cache_dir=None)
    if backend == "st":
        from sentence_transformers import SentenceTransformer

        from csbench.models.offline import resolve

        e._model = SentenceTransformer(resolve(spec), device="cpu")
    e.encode([f"sentence number {i} about a {w}" for i, w in enumerate(["cat", "dog", "tree", "car"] * 25)])


def cpu_seconds(backend: str, spec: str, threads: int) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, __file__, "--child", backend, "--model", spec, "--threads", str(threads)],
                   check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mirror", nargs="?", type=Path)
    ap.add_argument("--model", action="append", default=[], help="extra encoder spec or directory")
    ap.add_argument("--per-source", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--tiny", action="store_true", help="also random tiny encoders of every accepted architecture")
    ap.add_argument("--child", choices=["plain", "st"])
    args = ap.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    if args.child:
        return child(args.child, args.model[0])
    texts = EDGE + demo_texts() + (real_texts(args.mirror, args.per_source) if args.mirror else [])
    with tempfile.TemporaryDirectory() as tmp:
        tiny = tiny_models(Path(tmp)) if args.tiny else []
        for spec in [SPEC, *args.model, *tiny]:
            row = compare(spec, texts)
            print(json.dumps(row | {"spec": Path(spec).name if spec in tiny else spec}), flush=True)
    times = {"plain": [], "st": []}
    for _ in range(args.repeats):
        for backend in times:
            times[backend].append(cpu_seconds(backend, SPEC, args.threads))
    med = {k: statistics.median(v) for k, v in times.items()}
    print(json.dumps({"cpu_s": times, "median": med, "ratio_st_over_plain": med["st"] / med["plain"],
                      "device": "cpu", "dtype": "float32", "threads": args.threads}))


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    main()
