"""The local LM engine's scores before and after a change of the engine: dump, then compare.

``dump`` scores a fixed set of 202 varied requests (WinoGrande-like twins, shared contexts with
single-token continuations, 20Q-like few-shot prompts with a common header, multiple choice with
multi-token options, other multi-token continuations, empty contexts, trailing whitespace, exact
duplicates, long contexts; one setting cuts the window to 256 tokens so contexts get
left-truncated) on CPU in fp32 with one thread (``--device``, ``--dtype`` for others), under
several engine settings (automatic and fixed batch sizes, no prefix sharing, a chunked cache),
for each model given, and writes every log-prob (exact, as ``float.hex``) and the engine's
``stats`` (less ``seconds``) to a JSON file. ``compare`` reads two dumps and reports, per model
and setting, whether the scores are bit-identical (else the largest |delta|) and whether the
stats agree (exit status 1 if anything differs). Run ``dump`` on the old checkout and on the new
one, then ``compare``::

    .venv/bin/python bench/lm_identity.py dump --tiny /tmp/tiny-models \
        --model resources/models/smollm2-135m --out /tmp/before.json
    (after the change, same command with --out /tmp/after.json)
    .venv/bin/python bench/lm_identity.py compare /tmp/before.json /tmp/after.json

``--tiny DIR`` builds the random test models (GPT-2, GPT-NeoX and Llama shapes, as in
``tests/conftest.py``) there once and reuses them, so both dumps score the same weights.

Result, the engine split into strategy modules (issue 27 item 4) against main's ``LMScorer``
before it: the three tiny models under all 7 settings and SmolLM2-135M under ``auto``, ``bs1``,
``bs16`` and ``auto_window256``: every score bit-identical, every stats counter equal (torch
2.13, transformers 5.23, CPU, 1 thread; about 8 minutes per dump on a shared 2-core machine).
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

WORDS = ("apple river stone garden doctor teacher window winter summer castle bottle kitten "
         "engine forest island market orange pencil rocket silver thunder valley wizard yellow "
         "bridge candle desert feather hammer jacket ladder mirror needle ocean pillow rabbit "
         "saddle ticket violin wagon anchor basket cactus dragon glacier harbor lantern "
         "meadow").split()
NAMES = ["Sarah", "Maria", "James", "Robert", "Linda", "Kevin", "Emily", "Jason"]
ADJ = ["big", "small", "heavy", "light", "old", "new", "bright", "dark", "warm", "cold"]
HEADER = ("You are a careful player of twenty questions. Answer each question about the hidden "
          "thing with yes or no.\n\n")


def requests() -> list[tuple[str, str]]:
    """The fixed request set (deterministic)."""
    rnd = random.Random(27)

    def words(n):
        return " ".join(rnd.choice(WORDS) for _ in range(n))

    reqs: list[tuple[str, str]] = []
    # WinoGrande-like twins (partial evaluation): the contexts differ at the option
    for i in range(20):
        a, b = rnd.sample(NAMES, 2)
        thing, adj = rnd.choice(WORDS), rnd.choice(ADJ)
        for opt in (a, b):
            reqs.append((f"{a} gave the {thing} to {b} because {opt}",
                         f" thought it was too {adj} to keep."))
    # shared contexts, single-token continuations (options of one question)
    for i in range(12):
        ctx = f"Question: is a {rnd.choice(WORDS)} {rnd.choice(ADJ)}? Answer:"
        reqs += [(ctx, x) for x in (" yes", " no", " A", " B")]
    # 20Q-like few-shot prompts: a common header, shots shared by some prompts, then diverging
    shots = [f"Q: Is it a {w}? A: {rnd.choice(['yes', 'no'])}\n" for w in WORDS[:12]]
    for i in range(20):
        k = 1 + i % 4
        chosen = shots[:k] if i % 2 else rnd.sample(shots, k)
        q = f"Q: Does the {rnd.choice(WORDS)} fit in a {rnd.choice(WORDS)}? A:"
        reqs += [(HEADER + "".join(chosen) + q, x) for x in (" yes", " no")]
    # multi-token continuations of various lengths after diverse contexts
    for i in range(30):
        reqs.append((words(rnd.randint(1, 40)), " " + words(rnd.randint(2, 25))))
    # empty contexts (scored from the start-of-text token)
    reqs += [("", words(rnd.randint(3, 30)).capitalize() + ".") for _ in range(8)]
    # trailing whitespace moves to the continuation
    reqs += [(words(rnd.randint(2, 12)) + " " * rnd.randint(1, 3), words(rnd.randint(1, 5)))
             for _ in range(8)]
    reqs.append((words(6) + "\n", "Next line."))
    # long contexts (several share one), truncated under the 256-token window setting
    long_ctx = [words(n) for n in (300, 420, 520)]
    for c in long_ctx:
        reqs += [(c, " " + words(3)), (c, " " + words(1))]
    reqs.append((long_ctx[0] + " " + words(10), " " + words(30)))
    # multiple choice with multi-token options after one context (the options share tokens)
    for i in range(5):
        ctx = f"The {rnd.choice(WORDS)} is kept next to the {rnd.choice(WORDS)} because"
        reqs += [(ctx, f" it is {rnd.choice(ADJ)} and {w}.") for w in rnd.sample(WORDS, 3)]
    # exact duplicates of earlier requests
    reqs += [reqs[i] for i in (0, 1, 45, 90, 150)]
    return reqs


SETTINGS = {  # name -> (lm settings, engine keywords, cache)
    "auto": ({"batch_size": "auto"}, {}, False),
    "bs1": ({"batch_size": 1}, {}, False),
    "bs4": ({"batch_size": 4}, {}, False),
    "bs16": ({"batch_size": 16}, {}, False),
    "auto_noshare": ({"batch_size": "auto"}, {"share_prefix": False}, False),
    "auto_window256": ({"batch_size": "auto"}, {"max_length": 256}, False),
    "bs8_cache_chunks": ({"batch_size": 8}, {"commit_every": 64}, True),
}
SMALL = ("auto", "bs1", "bs16", "auto_window256")  # for real models (time)


def dump(a) -> None:
    import torch

    from csbench.lm import open_scorer

    torch.set_num_threads(1)
    models: dict[str, str] = {}
    if a.tiny:
        from csbench.models.random import build_random_model

        for shape in ("tiny-gpt2", "tiny-neox", "tiny-llama"):
            d = Path(a.tiny) / shape
            if not (d / "config.json").exists():
                build_random_model(shape, d)
            models[shape] = str(d)
    for m in a.model or []:
        models[Path(m).name] = m
    reqs = requests()
    res = {"n_requests": len(reqs), "torch": torch.__version__, "device": a.device,
           "dtype": a.dtype, "models": {}}
    for name, d in models.items():
        res["models"][name] = {}
        names = SETTINGS if name.startswith("tiny-") else SMALL
        for sname in names:
            lm, kw, cached = SETTINGS[sname]
            t = time.perf_counter()
            with tempfile.TemporaryDirectory() as tmp:
                s = open_scorer(d, {"device": a.device, "dtype": a.dtype, **lm},
                                Path(tmp) / "lm" if cached else None, **kw)
                out = s.loglikelihood(reqs)
                if s.cache is not None:
                    s.cache.close()
            stats = {k: v for k, v in s.stats.items() if k != "seconds"}
            res["models"][name][sname] = {"scores": [[float(lp).hex(), n] for lp, n in out],
                                          "stats": stats}
            what = s.compute() if hasattr(s, "compute") else s.describe()  # (older engines)
            print(f"{name} {sname} {what}: {time.perf_counter() - t:.1f} s, {stats}", flush=True)
            del s
    Path(a.out).write_text(json.dumps(res, indent=0) + "\n")


def compare(a) -> int:
    A, B = (json.loads(Path(p).read_text()) for p in (a.before, a.after))
    bad = 0
    for name, settings in A["models"].items():
        for sname, x in settings.items():
            y = B["models"].get(name, {}).get(sname)
            if y is None:
                print(f"{name} {sname}: missing in {a.after}")
                bad += 1
                continue
            sa = [(float.fromhex(lp), n) for lp, n in x["scores"]]
            sb = [(float.fromhex(lp), n) for lp, n in y["scores"]]
            same = sa == sb
            delta = max(abs(p[0] - q[0]) for p, q in zip(sa, sb))
            ntok = all(p[1] == q[1] for p, q in zip(sa, sb)) and len(sa) == len(sb)
            stats = x["stats"] == {k: v for k, v in y["stats"].items() if k in x["stats"]}
            print(f"{name:14s} {sname:17s} {len(sa)} requests: "
                  f"{'bit-identical' if same else f'max |delta| {delta:.3g}'}"
                  f"{'' if ntok else ', TOKEN COUNTS DIFFER'}"
                  f", stats {'equal' if stats else 'DIFFER: ' + str((x['stats'], y['stats']))}")
            bad += (not same) + (not ntok) + (not stats)
    return 1 if bad else 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump")
    d.add_argument("--tiny", help="directory for the tiny random models (built once)")
    d.add_argument("--model", action="append", help="a local model directory (repeatable)")
    d.add_argument("--device", default="cpu")
    d.add_argument("--dtype", default="float32")
    d.add_argument("--out", required=True)
    c = sub.add_parser("compare")
    c.add_argument("before")
    c.add_argument("after")
    a = ap.parse_args()
    if a.cmd == "dump":
        dump(a)
    else:
        sys.exit(compare(a))


if __name__ == "__main__":
    main()
