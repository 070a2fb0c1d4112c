"""Contamination scans: normalisation, n-grams at document and shard boundaries, compressed
inputs, the exact/ngram/parts rules, gathering and the Mann-Whitney statistics."""
from __future__ import annotations

import gzip
import json
import unicodedata
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import zstandard

from csbench.contamination import corpus as C
from csbench.contamination.kernels import (batch_scan, folding, jit, json_syntax, json_text, jsonl,
                                           ngram, runs, simd)
from csbench.contamination import hashing as H
from csbench.contamination.effect import effect
from csbench.contamination.gather import gather, summary
from csbench.contamination.items import blank_probes, dataset_probes
from csbench.contamination.scan import ProbeIndex, Scanner
from csbench.errors import InputError
from csbench.text import fold

SENT = "Sarah was a much better surgeon than Maria so _ always got the easier cases."
WG = pd.DataFrame({"id": ["q1", "q2"], "sentence": [SENT, "The trophy doesn't fit into the brown "
                   "suitcase because the _ is too large for it to fit inside."],
                   "option1": ["Sarah", "trophy"], "option2": ["Maria", "suitcase"],
                   "answer": [2, 1]})


def probes():
    return dataset_probes("winogrande_dev", "winograd", WG)


def scan(docs, methods=("exact", "ngram"), n=13, min_words=4, batch=1 << 18):
    idx = ProbeIndex(probes(), n=n, min_words=min_words, methods=methods)
    return Scanner(idx, batch_bytes=batch).scan(docs)


def brute_words(text: str) -> list[str]:
    return fold(text).split()


def test_corpus_normalisation_matches_fold():
    texts = ["It’s “FINE” — really…  Café\u00a0au lait; x_y 3.5%",
             "ＦＵＬＬＷＩＤＴＨ ｔｅｘｔ and ﬁne ligatures", "tab\tand\nnew-line", ""]
    for t in texts:
        buf = H.normalise_bytes(t.encode())
        s, e, _ = H.tokenise(buf)
        assert [buf[a:b].decode() for a, b in zip(s, e)] == brute_words(t)
        # same word hashes on the benchmark side
        w, h = H.text_hashes(t)
        assert np.array_equal(h, H.tokenise(buf)[2])


def test_ngram_hashes_equal_sequence_hashes():
    _, h = H.text_hashes("a b c d e f g a b c d e f g h")
    g = H.ngram_hashes(H.ngram_prefix(h), 7)
    assert len(g) == 9 and g[0] == g[7] and g[0] != g[1]
    assert int(g[3]) == H.sequence_hash(h[3:10])
    assert len(H.ngram_hashes(H.ngram_prefix(h[:5]), 7)) == 0


def test_ngram_hash_definition():
    """n-gram hash = XOR_i rotl(h_i, n - 1 - i) (rotations mod 64), for n below and above 64."""
    rng = np.random.default_rng(5)
    h = rng.integers(0, 2**63, 200, dtype=np.uint64) * np.uint64(2) + np.uint64(1)

    def rot(x, r):
        r %= 64
        return ((x << r) | (x >> (64 - r))) & (2**64 - 1) if r else x
    for n in (1, 2, 13, 64, 70):
        g = H.ngram_hashes(H.ngram_prefix(h), n)
        for q in (0, 1, 63, 64, 200 - n):
            want = 0
            for i in range(n):
                want ^= rot(int(h[q + i]), n - 1 - i)
            assert int(g[q]) == want, (n, q)


def test_items_winogrande():
    p = probes()
    q1 = p[p.item_id == "q1"]
    assert list(q1.probe) == ["option1", "option2", "left", "right"]
    assert q1.text.iloc[1] == SENT.replace("_", "Maria")
    assert list(q1.kind) == ["full", "full", "part", "part"]
    with pytest.raises(InputError, match="blank"):
        blank_probes("x", "1", "no blank here", ("a", "b"), "t.parquet", 3)
    with pytest.raises(InputError, match="option2"):
        dataset_probes("winogrande_dev", "winograd", WG.drop(columns="option2"), "wg.parquet")
    sq = dataset_probes("squad_v2_dev", "squad",
                        pd.DataFrame({"id": ["a"], "question": ["What is it?"]}))
    assert list(sq.kind) == ["full"]


def test_planted_variants():
    filled = SENT.replace("_", "Maria")
    docs = [
        ("verbatim", f"Some text. {filled} More text.".encode()),
        ("recased", filled.upper().replace(" ", " ,  ").replace(".", "!!").encode()),
        ("linebreak", filled.replace("surgeon ", "surgeon\n").encode()),
        ("otherfill", SENT.replace("_", "the junior doctor").encode()),
        ("paraphrase", b"Maria always got the easier cases because Sarah was the better surgeon."),
        ("distractor", b"Sarah was a much better cook than Maria so she always got the harder "
                       b"dishes."),
    ]
    t = scan(docs).table()
    exact = t[(t.method == "exact") & (t.probe == "option2")]
    assert exact["count"].iloc[0] == 3        # verbatim, recased, split across a line break
    parts = t[(t.method == "exact") & (t.probe == "parts")]
    assert parts["count"].iloc[0] == 4        # ... plus any filler in the blank
    assert not (t.doc_id.isin(["paraphrase", "distractor"])).any()
    ng = t[(t.method == "ngram") & (t.probe == "option2")].iloc[0]
    assert ng.span == 15 and ng.n_positions == 3 and ng.positions == [0, 1, 2]
    assert ng.doc_id == "verbatim" and ng.offset == len("Some text. ")
    assert ng.text.startswith("sarah was a much")


def test_ngrams_do_not_cross_document_boundaries():
    filled = SENT.replace("_", "Maria").split()
    a, b = " ".join(filled[:7]).encode(), " ".join(filled[7:]).encode()
    t = scan([("a", a), ("b", b)], batch=1 << 20).table()
    assert t.empty
    # the same text as one document matches
    assert not scan([("ab", a + b" " + b)]).table().empty


def test_batching_does_not_change_results():
    filled = SENT.replace("_", "Sarah")
    docs = [(f"d{i}", (f"filler {i} " * 40 + (filled if i % 7 == 3 else "")).encode())
            for i in range(60)]
    t1 = scan(docs, batch=1 << 20).table()
    t2 = scan(docs, batch=64).table()
    pd.testing.assert_frame_equal(t1, t2)
    assert t1[t1.method == "exact"]["count"].iloc[0] == 9


def test_hash_collision_is_verified(monkeypatch):
    idx = ProbeIndex(probes(), n=13, min_words=4)
    # poison the key table so that every n-gram of the document looks like a candidate
    L = idx.lengths[-1]
    _, h = H.text_hashes("zz " * 30)
    fake = H.ngram_hashes(H.ngram_prefix(h), L)[:1]
    uniq, bounds, probe, pos = idx.keys[L]
    idx.keys[L] = (np.concatenate([fake, uniq]), np.concatenate([[0], bounds + 1]),
                   np.concatenate([[0], probe]), np.concatenate([[0], pos]))
    idx.table[:] = True
    idx.vocab[:] = True
    s = Scanner(idx).scan([("z", ("zz " * 30).encode())])
    assert s.table().empty and s.candidates > 0


def _write_corpus(tmp_path, n=50):
    filled = SENT.replace("_", "Maria")
    recs = [{"id": f"doc{i}", "text": f"line {i} " * 20 + (filled if i in (3, 31, 49) else "")}
            for i in range(n)]
    lines = "".join(json.dumps(r) + "\n" for r in recs).encode()
    (tmp_path / "c.jsonl").write_bytes(lines)
    (tmp_path / "c.jsonl.gz").write_bytes(gzip.compress(lines))
    (tmp_path / "c.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(lines))
    return recs, lines


def test_compressed_inputs(tmp_path):
    recs, _ = _write_corpus(tmp_path)
    for name in ("c.jsonl", "c.jsonl.gz", "c.jsonl.zst"):
        docs = list(C.iter_documents((str(tmp_path / name), 0, -1), "jsonl", "text", "id"))
        assert [d for d, _ in docs] == [r["id"] for r in recs]
    t = scan(C.iter_documents((str(tmp_path / "c.jsonl.zst"), 0, -1), "jsonl", "text", "id"))
    assert t.table().query("method == 'exact' and probe == 'option2'")["count"].iloc[0] == 3
    (tmp_path / "doc.txt.gz").write_bytes(gzip.compress(b"plain text document"))
    assert list(C.iter_documents((str(tmp_path / "doc.txt.gz"), 0, -1), "text")) == \
        [(str(tmp_path / "doc.txt.gz"), b"plain text document")]


@pytest.mark.parametrize("fused", [False, True])
def test_bad_compressed_inputs_name_the_file(tmp_path, fused):
    """Corrupt and truncated .gz/.zst files are input errors naming the file, on the
    per-document and the fused path; a .zst of several frames reads through."""
    if fused and not jsonl.available():
        pytest.skip("numba kernels unavailable")
    rng = np.random.default_rng(0)
    recs = [{"id": f"d{i}", "text": " ".join(rng.choice(["alpha", "beta", "gamma", str(i)], 30))}
            for i in range(3000)]
    data = "".join(json.dumps(r) + "\n" for r in recs).encode()
    gz = gzip.compress(data)
    cz = zstandard.ZstdCompressor()
    zs = cz.compress(data)
    bad = bytearray(gz)
    bad[len(bad) // 2] ^= 0xFF
    cases = {"trunc.jsonl.gz": gz[:len(gz) // 2], "crc.jsonl.gz": bytes(bad),
             "notgz.jsonl.gz": data[:5000], "trunc.jsonl.zst": zs[:len(zs) // 2],
             "junk.jsonl.zst": b"\x28\xb5\x2f\xfd" + bytes(range(256)) * 8}
    idx = ProbeIndex(probes(), n=13, min_words=4)
    for name, blob in cases.items():
        p = tmp_path / name
        p.write_bytes(blob)
        for read_ahead in ((False, True) if fused else (False,)):
            with pytest.raises(InputError, match=name.replace(".", r"\.")):
                if fused:
                    Scanner(idx).scan_pieces([(str(p), 0, -1)], "jsonl", "text", "id",
                                             read_ahead=read_ahead)
                else:
                    list(C.iter_documents((str(p), 0, -1), "jsonl", "text", "id"))
    two = tmp_path / "two.jsonl.zst"                  # two frames, as concatenated files give
    half = len(data) // 2
    cut = data.rfind(b"\n", 0, half) + 1
    two.write_bytes(cz.compress(data[:cut]) + cz.compress(data[cut:]))
    if fused:
        got = Scanner(idx).scan_pieces([(str(two), 0, -1)], "jsonl", "text", "id").docs
    else:
        got = len(list(C.iter_documents((str(two), 0, -1), "jsonl", "text", "id")))
    assert got == len(recs)


def test_shard_byte_ranges_cover_every_line_once(tmp_path):
    recs, lines = _write_corpus(tmp_path)
    path = str(tmp_path / "c.jsonl")
    for shard_bytes in (100, 777, len(lines) // 3, len(lines)):
        shards = C.plan_shards([path], "jsonl", shard_bytes)
        ids = [d for s in shards for d, _ in C.shard_documents(s, "jsonl", "text", "id")]
        assert ids == [r["id"] for r in recs], shard_bytes
    # compressed files are never split; small files are packed together
    shards = C.plan_shards([path + ".gz", path + ".zst"], "jsonl", 100)
    assert shards == [[(path + ".gz", 0, -1)], [(path + ".zst", 0, -1)]]
    assert len(C.plan_shards([path + ".gz", path + ".zst"], "jsonl", 10 ** 9)) == 1


def test_bad_corpus_input_names_file_and_line(tmp_path):
    p = tmp_path / "bad.jsonl"
    p.write_text('{"text": "ok"}\n{"text": 5}\n')
    with pytest.raises(InputError, match=r"bad.jsonl:2"):
        list(C.iter_documents((str(p), 0, -1), "jsonl"))
    p.write_text('{"text": "ok"}\nnot json\n')
    with pytest.raises(InputError, match=r"bad.jsonl:2.*invalid JSON"):
        list(C.iter_documents((str(p), 0, -1), "jsonl"))
    with pytest.raises(InputError, match="matches no file"):
        C.expand_paths("c", [str(tmp_path / "nothing*.jsonl")])


def test_gather_and_summary():
    filled = SENT.replace("_", "Maria").split()
    half = " ".join(filled[:14])           # 14 of 15 words: 2 of the 3 13-grams
    s1 = scan([("a", half.encode())]).table()
    s2 = scan([("b", " ".join(filled[2:]).encode())]).table()
    out = gather(probes(), [s1, s2, s1.iloc[:0]], "winogrande_dev", ["exact", "ngram"])
    assert len(out) == 4
    ng = out[(out.method == "ngram") & (out.item_id == "q1")].iloc[0]
    assert ng.fraction == 1.0 and ng.longest_span == 14 and ng.contaminated
    ex = out[(out.method == "exact") & (out.item_id == "q1")].iloc[0]
    assert not ex.contaminated
    strict = gather(probes(), [s1], "winogrande_dev", ["ngram"], ngram_threshold=0.7)
    assert not strict.contaminated.any()
    summ = summary({("winogrande_dev", "demo"): out})
    assert summ.set_index("method").loc["ngram", "contaminated"] == 1


def test_effect_mann_whitney():
    flags = pd.DataFrame({"item_id": [f"i{i}" for i in range(40)], "method": "exact",
                          "contaminated": [i < 10 for i in range(40)]})
    res = pd.DataFrame({"item_id": [f"i{i}" for i in range(40)], "dataset": "winogrande",
                        "variant": "original", "correct": [1] * 10 + [0, 1] * 15})
    e = effect("m", res, flags, "winogrande_dev", "demo").iloc[0]
    assert e.n_contaminated == 10 and e.n_clean == 30
    assert e.acc_contaminated == 1.0 and e.acc_clean == 0.5 and e.p_value < 0.01
    with pytest.raises(InputError, match="correct"):
        effect("m", res.drop(columns="correct"), flags, "b", "c")


def test_short_probes_and_right_anchored_parts():
    df = pd.DataFrame({"id": ["s1", "s2"],
                       "sentence": ["Nora gave Omar a ride since _ had a car.",
                                    "Yesterday _ said that the old red barn near the river was painted last "
                                    "summer by the whole family."],
                       "option1": ["Nora", "Tom"], "option2": ["Omar", "Ann"]})
    p = dataset_probes("winogrande_dev", "winograd", df)
    idx = ProbeIndex(p, n=13, min_words=8)
    docs = [("whole", b"x Nora gave Omar a ride since Nora had a car. y"),
            ("prefix", b"Nora gave Omar a ride since Nora had a bike."),
            ("parts", b"Then yesterday Bob said that the old red barn near the river was painted last "
                      b"summer by the whole family.")]
    t = Scanner(idx).scan(docs).table()
    s1 = t[t.item_id == "s1"]
    assert set(s1.doc_id) == {"whole"}            # 10-word probe: found only when whole
    assert set(s1.method) == {"exact", "ngram"}
    assert s1[s1.method == "ngram"].span.iloc[0] == 10
    s2 = t[(t.item_id == "s2") & (t.probe == "parts")]
    assert s2.doc_id.tolist() == ["parts"] and s2.text.iloc[0].startswith("yesterday bob said")


def test_workflow_plan_on_demo_config(repo, monkeypatch):
    import yaml

    from csbench.config import validate
    from csbench.contamination.workflow import Plan

    monkeypatch.chdir(repo)
    cfg = yaml.safe_load((repo / "resources/demo/config.yaml").read_text())
    cfg["tasks"] = ["contamination"]
    plan = Plan(validate(cfg, repo / "workflow/schemas/config.schema.yaml"))
    assert plan.cfg["ngram"]["n"] == 13 and plan.cfg["batch_kb"] == 256   # defaults filled
    web = plan.shards[("web", "lexical")]
    assert len(web) > 2 and any(start > 0 for s in web for _, start, _ in s)   # byte ranges
    assert plan.methods("web") == ["exact", "ngram"]
    compressed = [i for i, sh in enumerate(web)
                  if any(p.endswith((".gz", ".zst")) for p, _, _ in sh)]
    assert compressed and len(compressed) < len(web)
    assert [plan.scan_threads("web", i) for i in range(len(web))] == \
        [2 if i in compressed else 1 for i in range(len(web))]
    assert plan.scan_threads("wiki", 0) == 1
    plan.cfg["read_ahead"] = False
    assert plan.scan_threads("web", compressed[0]) == 1
    assert "semantic" in plan.methods("books")
    assert f"results/contamination/scan/books/semantic/0.parquet" in plan.shard_outputs("books")
    assert "results/contamination/summary.tsv" in plan.targets()
    assert "results/contamination/effect.tsv" not in plan.targets()   # winowhat task not on


def test_effect_and_signals_read_the_models_winowhat_scores(repo, monkeypatch):
    """The effect and the membership signals read WinoWhat's per-item results: only the models
    WinoWhat scores (the demo's fine-tuned models are scored by their own tasks); a signals model
    WinoWhat does not score is refused at parse time, naming both keys."""
    import yaml

    from csbench.config import validate
    from csbench.contamination.workflow import Plan

    monkeypatch.chdir(repo)
    cfg = validate(yaml.safe_load((repo / "resources/demo/config.yaml").read_text()),
                   repo / "workflow/schemas/config.schema.yaml")
    plan = Plan(cfg, ["smollm2-135m"])
    results = [p for k, p in plan.effect_inputs().items() if k.startswith("results__")]
    assert results == ["results/winowhat/smollm2-135m/items.parquet"]
    assert plan.signals_models() == ["smollm2-135m"]
    plan.cfg["signals"]["models"] = ["smollm2-135m-20q-ft"]
    with pytest.raises(ValueError, match="contamination.signals.models.*winowhat.models"):
        plan.signals_models()


def _engine_docs():
    filled = SENT.replace("_", "Maria")
    rng = np.random.default_rng(7)
    vocab = filled.lower().rstrip(".").split() + ["Café", "naïve", "ＦＵＬＬ", "—", "x_y", "3.5%"]
    docs = [("plain", f"Intro. {filled} outro".encode()),
            ("upper", filled.upper().encode()),
            ("unicode", f"“{filled}” — Café\u00a0au lait ﬁne".encode()),
            ("empty", b""), ("seps", b" ,.;\n\t "),
            ("longword", (b"a" * 5000 + b" " + filled.encode() + b" " + b"b" * 300)),
            ("twin", SENT.replace("_", "Sarah").encode() * 3)]
    for i in range(40):    # random word soup with planted pieces, so hits fall anywhere
        words = rng.choice(vocab, size=int(rng.integers(0, 120))).tolist()
        if i % 3 == 0:
            words.insert(int(rng.integers(0, len(words) + 1)), filled)
        docs.append((f"r{i}", " ".join(words).encode()))
    return docs


@pytest.mark.skipif(not batch_scan.available(), reason="numba kernel unavailable")
@pytest.mark.parametrize("methods", [("exact", "ngram"), ("ngram",), ("exact",)])
@pytest.mark.parametrize("batch", [64, 1 << 18])
def test_numba_kernel_matches_numpy_path(methods, batch):
    docs = _engine_docs()
    idx = ProbeIndex(probes(), n=13, min_words=4, methods=methods)
    fast = Scanner(idx, batch_bytes=batch, engine="numba")
    slow = Scanner(idx, batch_bytes=batch, engine="numpy")
    assert fast.engine == "numba" and slow.engine == "numpy"
    fast.scan(docs)
    slow.scan(docs)
    pd.testing.assert_frame_equal(fast.table(), slow.table())
    assert not fast.table().empty
    assert fast.candidates == slow.candidates
    assert (fast.bytes, fast.docs) == (slow.bytes, slow.docs)


@pytest.mark.parametrize("engine", ["numba", "numpy"])
@pytest.mark.parametrize("n,mw", [(13, 4), (5, 3), (70, 3)])
def test_vocabulary_filter_only_skips_ngrams_with_foreign_words(engine, n, mw):
    if engine == "numba" and not batch_scan.available():
        pytest.skip("numba kernel unavailable")
    filled = SENT.replace("_", "Maria")
    docs = _engine_docs() + [("long", " ".join([filled] * 12).encode()),     # runs >> n words
                             ("cut", f"{filled} zebra {filled} {filled}".encode())]
    idx = ProbeIndex(probes(), n=n, min_words=mw)
    assert 0 < idx.vocab.sum() < len(idx.vocab) // 16
    idx.table[:] = True                     # (so candidates count the n-grams looked up)
    filtered = Scanner(idx, engine=engine).scan(docs)
    idx.vocab[:] = True                     # every word passes: every n-gram is looked up
    full = Scanner(idx, engine=engine).scan(docs)
    pd.testing.assert_frame_equal(filtered.table(), full.table())
    assert not full.table().empty and filtered.candidates < full.candidates


@pytest.mark.skipif(not batch_scan.available(), reason="numba kernel unavailable")
def test_numba_kernel_many_matches_and_short_n():
    filled = SENT.replace("_", "Maria").encode()
    docs = [("big", b" ".join([filled] * 3000))]    # more matches than the kernel's first buffer
    for n, mw in [(13, 4), (5, 3), (2, 1), (70, 3)]:
        idx = ProbeIndex(probes(), n=n, min_words=mw)
        t1 = Scanner(idx, engine="numba").scan(docs).table()
        t2 = Scanner(idx, engine="numpy").scan(docs).table()
        pd.testing.assert_frame_equal(t1, t2)


def test_scan_engine_fallback(monkeypatch):
    monkeypatch.setenv("CSBENCH_NUMBA", "0")
    assert not batch_scan.available()
    idx = ProbeIndex(probes(), n=13, min_words=4)
    assert Scanner(idx).engine == "numpy"
    with pytest.raises(RuntimeError, match="numba"):
        Scanner(idx, engine="numba")
    with pytest.raises(ValueError, match="engine"):
        Scanner(idx, engine="gpu")
    filled = SENT.replace("_", "Maria")
    t = Scanner(idx).scan([("a", filled.encode())]).table()
    assert t[(t.method == "exact") & (t.probe == "option2")]["count"].tolist() == [1]


def test_jsonl_parsing_matches_json(tmp_path, monkeypatch):
    """orjson parses the lines; what it rejects but json accepts (NaN, huge integers) still
    parses, and invalid JSON is still an InputError naming file and line."""
    p = tmp_path / "c.jsonl"
    p.write_text('{"text": "a\\u00e9b", "id": 1}\n{"text": "x", "score": NaN, "id": 2}\n'
                 '{"text": "y", "id": 123456789012345678901234567890}\n\n'
                 '{"text": "\\ud83d\\ude00 ok", "id": "s"}\n')
    got = list(C.iter_documents((str(p), 0, -1), "jsonl", "text", "id"))
    monkeypatch.setattr(C, "_fast_loads", None)
    want = list(C.iter_documents((str(p), 0, -1), "jsonl", "text", "id"))
    assert got == want and len(got) == 4 and got[0] == ("1", "aéb".encode())
    monkeypatch.undo()
    p.write_text('{"text": "ok"}\n{"text": "ok",}\n')
    with pytest.raises(InputError, match=r"c.jsonl:2.*invalid JSON"):
        list(C.iter_documents((str(p), 0, -1), "jsonl"))


# -- the fused JSON-lines path (csbench.contamination.kernels.jsonl) -------------------------

needs_kernel = pytest.mark.skipif(not (batch_scan.available() and jsonl.available()),
                                  reason="numba kernels unavailable")


@pytest.fixture(params=[False, True], ids=["scalar-escapes", "vector-escapes"])
def compress(request, monkeypatch):
    """Both copy loops of the fused reader: escapes one by one, and (where the CPU has a byte
    compress-store) one-character escapes inside the 64-byte vector loop."""
    if request.param and not json_text._has_compress():
        pytest.skip("no AVX-512 VBMI2 on this CPU")
    monkeypatch.setattr(jsonl, "_COMPRESS", request.param)
    return request.param


def _fused_docs(piece, text_field="text", id_field=None, block=64, read_ahead=False):
    docs, fallbacks = [], 0
    for b in jsonl.iter_batches(piece, text_field, id_field, block, read_ahead):
        docs.extend((b.doc_id(d), b.doc_bytes(d)) for d in range(len(b.lo)))
        fallbacks += b.fallbacks
    return docs, fallbacks


def _python_docs(piece, text_field="text", id_field=None):
    return [(i, H.normalise_bytes(t))
            for i, t in C.iter_documents(piece, "jsonl", text_field, id_field)]


@needs_kernel
def test_fold_table_matches_normalise_bytes(tmp_path):
    """Per-character folding of context-free characters equals run folding, on random strings
    of table characters mixed with ASCII (and every line goes through the kernel)."""
    T = folding.tables()
    cps = np.flatnonzero(T.ok)
    rng = np.random.default_rng(3)
    common = [ord(c) for c in "éèàüößçñøåæœ’“”—…€£ａＺ０ﬁﬂ½²ⅣΩαβγσςЖжя中文日本語한국😀🎉\u00a0\u2028"]
    common = [c for c in common if T.ok[c]]
    texts = []
    for _ in range(3000):
        m = int(rng.integers(1, 12))
        pick = rng.random(m)
        chars = [chr(int(rng.choice(cps))) if r < 0.4 else
                 chr(int(rng.choice(common))) if r < 0.7 else
                 chr(int(rng.integers(32, 127))) for r in pick]
        texts.append("".join(chars))
    p = tmp_path / "t.jsonl"
    with open(p, "w", encoding="utf-8") as fh:
        for i, t in enumerate(texts):
            fh.write(json.dumps({"text": t}, ensure_ascii=bool(i % 2)) + "\n")
    got, fallbacks = _fused_docs((str(p), 0, -1), block=1 << 16)
    assert fallbacks == 0
    assert [b for _, b in got] == [H.normalise_bytes(t.encode()) for t in texts]
    # the context-dependent characters are excluded from the table
    for ch in "\u0301\u03a3\u1100\u1161\u11a8\u3131\uffa1\U0001D6BA\u0903\u093e":
        assert not T.ok[ord(ch)], ch
    assert T.ok[ord("é")] and T.ok[ord("한")] and T.ok[ord("ﬁ")]


@needs_kernel
def test_runs_with_context_dependent_characters_fold_whole_in_the_kernel(tmp_path, monkeypatch):
    """Runs that hold characters that are not context-free (combining marks, Devanagari vowel
    signs, Hangul jamo, final sigma, code points above the table; raw or as \\u escapes and
    surrogate pairs) are folded whole from the run cache: the documents equal
    ``normalise_bytes``, no line is left to the Python path once the runs are cached, a tiny
    cache that fills up hands the rest to Python (same documents), and a run longer than the
    scratch buffer falls back too."""
    T = folding.tables()
    rng = np.random.default_rng(5)
    hard = [c for c in "\u0301\u0308\u0327\u093e\u094d\u0947\u03a3\u1100\u1161\u11a8\u3131"
            "\U0001D6BA\U00020000\U0001F3FB" if ord(c) >= len(T.ok) or not T.ok[ord(c)]]
    easy = list("eaoEAOéÉñΑΟΣσςकखगनमसहयрдЖ中한ﬁ½😀")
    texts = ["नमस्ते भारत हिन्दी", "ΟΔΟΣ ΟΔΟΣ. Σ", "e\u0301 E\u0301 e\u0301\u0327", "\u1100\u1161\u11a8"]
    for _ in range(2500):
        m = int(rng.integers(1, 14))
        pick = rng.random(m)
        texts.append("".join(str(rng.choice(hard)) if r < 0.25 else str(rng.choice(easy))
                             if r < 0.75 else " " if r < 0.9 else chr(int(rng.integers(33, 127)))
                             for r in pick))
    p = tmp_path / "h.jsonl"
    with open(p, "w", encoding="utf-8") as fh:
        for i, t in enumerate(texts):
            fh.write(json.dumps({"text": t}, ensure_ascii=bool(i % 2)) + "\n")
    want = [H.normalise_bytes(t.encode()) for t in texts]
    monkeypatch.setattr(runs, "_RUNS", [])                      # a fresh cache
    for block in (1 << 10, 1 << 16):
        got, fallbacks = _fused_docs((str(p), 0, -1), block=block)
        assert [b for _, b in got] == want
    got, fallbacks = _fused_docs((str(p), 0, -1), block=1 << 16)   # all runs cached now
    assert fallbacks == 0 and [b for _, b in got] == want
    monkeypatch.setattr(runs, "_RUNS", [runs.RunCache(4)])
    monkeypatch.setattr(runs.RunCache, "MAX_RUNS", 3)            # full after 3 runs
    got, fallbacks = _fused_docs((str(p), 0, -1), block=1 << 16)
    assert fallbacks > 100 and [b for _, b in got] == want
    long = "क\u093e" * 3000                                     # 15 KB run: Python folds it
    p.write_text(json.dumps({"text": long}, ensure_ascii=False) + "\n", encoding="utf-8")
    got, fallbacks = _fused_docs((str(p), 0, -1), block=1 << 16)
    assert fallbacks == 1 and got[0][1] == H.normalise_bytes(long.encode())


@needs_kernel
def test_fold_table_marks_after_a_starter():
    """Characters whose folding ends in combining marks (spacing accents, dotted capital I,
    ...) are context-free: per-character folding equals run folding for every pair of them
    with each other and with other table characters, and for longer random runs."""
    T = folding.tables()

    def fold1(c):
        cp = ord(c)
        return T.pool[T.off[cp]:T.off[cp + 1]].tobytes()
    marked = [chr(cp) for cp in np.flatnonzero(T.ok)
              if any(unicodedata.combining(x) or unicodedata.category(x).startswith("M")
                     for x in unicodedata.normalize("NFKC", chr(cp)).lower())]
    assert {"\u00b4", "\u00a8", "\u00b8", "\u00af", "\u02d8", "\u0130"} <= set(marked)
    others = [c for c in "éèüßçñøœ’ﬁ½²ⅣΩσЖ中한😀\u00a0ǅ"]   # (non-ASCII: runs)
    sample = marked[:200] + others
    for a in sample:
        for b in sample:
            run = a + b
            assert H.fold_run_uncached(run.encode()) == fold1(a) + fold1(b), ascii(run)
    rng = np.random.default_rng(9)
    for _ in range(2000):
        run = "".join(rng.choice(sample, int(rng.integers(1, 8))))
        assert H.fold_run_uncached(run.encode()) == b"".join(fold1(c) for c in run), ascii(run)


def _fused_fixture(tmp_path):
    """JSON lines with escapes, non-ASCII, blank lines, odd records and planted items."""
    filled = SENT.replace("_", "Maria")
    words = filled.split()
    lines = [
        json.dumps({"id": "plain", "text": f"Intro. {filled} outro"}),
        json.dumps({"id": "esc", "text": f"“{filled}”\t\\ \"q\" / é ﬁ ＦＵＬＬ 😀 Σίσυφος"}),
        json.dumps({"id": "raw", "text": f"Café {filled.upper()} naïve ½ 한국어"},
                   ensure_ascii=False),
        "",
        "  \t \x0b",
        json.dumps({"meta": {"a": [1, -2.5e-3, None, True, False, {"b": "\ud83d\ude00"}]},
                    "id": 7, "text": " ".join(words[:7]) + "\n" + " ".join(words[7:])}),
        '{"text": "x\\/y \\b\\f\\r\\n", "id": -12}',
        json.dumps({"id": "comb", "text": f"e\u0301 {filled} a\u0308"}, ensure_ascii=False),
        json.dumps({"id": "jamo", "text": f"\u1100\u1161 {filled}"}, ensure_ascii=False),
        '{"id": "nan", "score": NaN, "text": "' + filled + '"}',
        '{"id": "dup", "text": "first", "text": "' + filled + '"}',
        '{"id": "ws"  ,  "text" :"a b"  }  \r',
        '{"id": 12345678901234567890123, "text": "big id"}',
        '{"id": "k\\"ey", "text": "escaped id"}',
        '{"id": "-0", "text": "string -0"}',
        '{"id": -0, "text": "minus zero"}',
        '{"id": 1.5e0, "text": "float id"}',
        '{"id": true, "text": "bool id"}',
        '{"\\u0069d": "escaped key", "id": "ek", "text": "' + filled + '"}',
        json.dumps({"id": "deep", "text": "deep", "x": [[[[[[1]]]]]]}),
        '\ufeff{"id": "bom", "text": "' + filled + '"}',
        json.dumps({"id": "long", "text": ("filler " * 300) + filled}),
        json.dumps({"id": "empty", "text": ""}),
        json.dumps({"id": "last", "text": f"{filled} {filled}"}),
    ]
    return ("\n".join(lines)).encode("utf-8")    # no newline after the last line


@needs_kernel
@pytest.mark.parametrize("id_field", [None, "id"])
def test_fused_path_matches_per_document_path(tmp_path, compress, id_field):
    data = _fused_fixture(tmp_path)
    plain = tmp_path / "f.jsonl"
    plain.write_bytes(data)
    (tmp_path / "f.jsonl.gz").write_bytes(gzip.compress(data))
    (tmp_path / "f.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(data))
    idx = ProbeIndex(probes(), n=13, min_words=4)
    for name in ("f.jsonl", "f.jsonl.gz", "f.jsonl.zst"):
        piece = (str(tmp_path / name), 0, -1)
        want = _python_docs(piece, "text", id_field)
        for block in (7, 100, 1 << 20):
            for read_ahead in (False, True):
                got, fallbacks = _fused_docs(piece, "text", id_field, block, read_ahead)
                assert got == want, (name, block, read_ahead)
                assert 0 < fallbacks < 16
    for shard_bytes in (90, 333, len(data) // 2, len(data) * 2):
        for shard in C.plan_shards([str(plain)], "jsonl", shard_bytes):
            for block in (50, 1 << 20):
                fast = Scanner(idx, engine="numba").scan_pieces(shard, "jsonl", "text", id_field,
                                                              block=block)
                slow = Scanner(idx, engine="numba").scan(
                    C.shard_documents(shard, "jsonl", "text", id_field))
                pd.testing.assert_frame_equal(fast.table(), slow.table())
                assert (fast.bytes, fast.docs, fast.candidates) == \
                       (slow.bytes, slow.docs, slow.candidates)
    whole = Scanner(idx).scan_pieces([(str(plain), 0, -1)], "jsonl", "text", id_field, block=64)
    t = whole.table()
    assert t[(t.method == "exact") & (t.probe == "option2")]["count"].iloc[0] >= 10
    ref = Scanner(idx, engine="numpy").scan(C.iter_documents((str(plain), 0, -1), "jsonl",
                                                             "text", id_field))
    pd.testing.assert_frame_equal(t, ref.table())


@needs_kernel
def test_fused_path_errors_match(tmp_path, compress):
    p = tmp_path / "bad.jsonl"
    cases = ['{"text": 5}', 'not json', '{"text": "ok",}', '[1, 2]', '{"txt": "a"}',
             '{"text": "a"}{"text": "b"}', '{"text": "a\x01b"}', '{"a": 1',
             '{"text": "\\ud800 lone"}', b'{"text": "a\xff"}', b'{"text": "\xed\xa0\x80"}',
             b'{"text": "\xc3\xa9\xe2\x82"}',
             '{"text": "a", "id": 1}', '{"id": "1", "text": "\\x"}']
    for case in cases:
        for id_field in (None, "id"):
            p.write_bytes(b'{"text": "ok", "id": "0"}\n\n'
                         + (case.encode() if isinstance(case, str) else case)
                         + b'\n{"text": "z"}\n')
            for piece in ((str(p), 0, -1), (str(p), 3, -1)):
                try:
                    list(C.iter_documents(piece, "jsonl", "text", id_field))
                except (InputError, UnicodeError) as exc:
                    with pytest.raises(type(exc)) as info:
                        _fused_docs(piece, "text", id_field, block=16)
                    assert str(info.value) == str(exc), case
                else:
                    assert _fused_docs(piece, "text", id_field)[0] == \
                        _python_docs(piece, "text", id_field), case
    p.write_bytes(b'{"text": "ok"}\n{"text": 5}\n')
    idx = ProbeIndex(probes(), n=13, min_words=4)
    with pytest.raises(InputError, match=r"bad.jsonl:2"):
        Scanner(idx).scan_pieces([(str(p), 0, -1)], "jsonl")


@needs_kernel
def test_read_ahead_stops_with_the_caller_and_raises_where_the_data_breaks(tmp_path):
    """The read-ahead thread ends when the caller stops early or the piece is done; an error
    found by the thread (a truncated .zst) is raised after the blocks before it, as without the
    thread."""
    import threading

    recs = [{"id": f"d{i}", "text": f"alpha beta {i} " * 20} for i in range(4000)]
    data = "".join(json.dumps(r) + "\n" for r in recs).encode()
    cz = zstandard.ZstdCompressor()
    frames = b"".join(cz.compress(data[i:i + 50_000]) for i in range(0, len(data), 50_000))
    p = tmp_path / "c.jsonl.zst"
    p.write_bytes(frames)
    before = threading.active_count()
    it = jsonl.iter_batches((str(p), 0, -1), "text", "id", block=4096, read_ahead=True)
    first = next(it)
    assert first.doc_id(0) == "d0"
    it.close()                                   # the caller stops early
    assert threading.active_count() == before
    assert _fused_docs((str(p), 0, -1), "text", "id", 4096, True) == \
        _fused_docs((str(p), 0, -1), "text", "id", 4096, False)
    assert threading.active_count() == before
    p.write_bytes(frames[:len(frames) // 2])
    seen = {}
    for read_ahead in (False, True):
        n = 0
        with pytest.raises(InputError, match=r"c\.jsonl\.zst.*truncated"):
            for b in jsonl.iter_batches((str(p), 0, -1), "text", "id", 4096, read_ahead):
                n += len(b.lo)
        seen[read_ahead] = n
    assert seen[True] == seen[False] > 0
    assert threading.active_count() == before


def test_scan_pieces_without_kernel(tmp_path, monkeypatch):
    recs, _ = _write_corpus(tmp_path)
    monkeypatch.setenv("CSBENCH_NUMBA", "0")
    idx = ProbeIndex(probes(), n=13, min_words=4)
    s = Scanner(idx)
    assert s.engine == "numpy"
    shard = [(str(tmp_path / "c.jsonl.gz"), 0, -1)]
    t = s.scan_pieces(shard, "jsonl", "text", "id").table()
    ref = Scanner(idx).scan(C.shard_documents(shard, "jsonl", "text", "id")).table()
    pd.testing.assert_frame_equal(t, ref)
    assert t.query("method == 'exact' and probe == 'option2'")["count"].iloc[0] == 3


def _kernel_word_hashes(doc: bytes) -> list[int]:
    """Pass 1 of the per-document scan kernel (ngram._word_hashes) on one folded document."""
    arr = np.frombuffer(doc + bytes(ngram.PAD), dtype=np.uint8)
    hw = np.zeros(len(doc) // 2 + 2, dtype=np.uint64)
    k = ngram._word_hashes(arr, 0, len(doc), hw, 0)
    return hw[:k].tolist()


@needs_kernel
def test_fused_word_hashes_equal_kernel_pass(tmp_path, compress):
    """The word hashes the extraction kernel computes while copying equal those of the scan
    kernel's pass 1 on the folded bytes, for every document (escapes, non-ASCII, long words,
    fallback lines in between) and any block size."""
    rng = np.random.default_rng(7)
    T = folding.tables()
    cps = np.flatnonzero(T.ok)
    pieces = ["word", "Mixed", "x1", " ", "  ", ",", ".", "-", "\t", "\n", "\\", '"', "/", "é",
              "ﬁ", "ＦＵ", "½", "中文", "😀", "—", "\u00a0", "\u2028", "e\u0301", "Σ", "\u1100"]
    lines = []
    for i in range(800):
        m = int(rng.integers(0, 30))
        parts = [str(rng.choice(pieces)) if r < 0.7 else chr(int(rng.choice(cps)))
                 for r in rng.random(m)]
        text = "".join(parts)
        if i % 97 == 5:
            text += "a" * 5000 + " tail"                   # a long word
        rec = {"id": f"d{i}", "text": text}
        line = json.dumps(rec, ensure_ascii=bool(i % 2))
        if i % 13 == 0:
            line = '{"id": "d%d", "x": NaN, "text": %s}' % (i, json.dumps(text))   # fallback
        lines.append(line)
        if i % 50 == 0:
            lines.append("")
    p = tmp_path / "w.jsonl"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    for block in (64, 5000, 1 << 20):
        n = fb = 0
        for b in jsonl.iter_batches((str(p), 0, -1), "text", "id", block):
            fb += b.fallbacks
            for d in range(len(b.lo)):
                doc = b.doc_bytes(d)
                got = b.hw[b.wlo[d]:b.whi[d]].tolist()
                assert got == _kernel_word_hashes(doc), (block, b.doc_id(d))
                assert got == H.tokenise(doc)[2].tolist()
                n += 1
        assert n == 800 and fb > 60


@needs_kernel
def test_fused_ascii_copy_vector_and_swar(tmp_path, compress):
    """The vector (64 bytes) and 8-bytes-at-a-time ASCII copies, with one-character escapes
    taken in the vector loop or not (``compress``): upper case folded, stopping exactly at
    quotes, backslashes that start other escapes (``\\\\``, ``\\u``), control and non-ASCII
    bytes, at every alignment, texts short and long, escapes dense and sparse, block ends
    included."""
    rng = np.random.default_rng(11)
    alphabet = [chr(c) for c in range(32, 127)] + ["\n", "\t", "\r", "\b", "\f", "\x01", "\x1f",
                                                   "é", "Ä", "😀", "\u00a0", "\\", '"', "/"]
    texts = []
    for i in range(1500):
        m = int(rng.integers(0, 40 if i % 3 else 400))
        rare = 1.0 if i % 2 else 0.02                    # escapes and specials: dense or sparse
        weights = np.array([8.0 if chr(c).isalpha() else 1.0 for c in range(32, 127)]
                           + [rare] * 14)
        texts.append("".join(rng.choice(alphabet, size=m, p=weights / weights.sum())))
    p = tmp_path / "a.jsonl"
    with open(p, "w", encoding="utf-8") as fh:
        for i, t in enumerate(texts):
            pad = " " * (i % 9)                           # shifts the text's alignment
            body = json.dumps(t, ensure_ascii=bool(i % 2))[1:-1]
            if i % 5 == 0:
                body = body.replace("/", "\\/")           # the optional escape of '/'
            fh.write('{"text":%s"%s"}\n' % (pad, body))
    want = _python_docs((str(p), 0, -1))
    for block in (20, 64, 1000, 1 << 20):
        got, fallbacks = _fused_docs((str(p), 0, -1), block=block)
        assert fallbacks == 0
        assert got == want, block


def _pass1(variant: str):
    """One of pass 1's compiled variants: what the kernels call, the scalar pass, the vector pass
    (byte permutes: AVX-512 VBMI) or the vector pass compiled with gathers instead (any CPU)."""
    F = ngram
    if variant == "vector" and not simd.VECTOR:
        pytest.skip("this CPU has no AVX-512 VBMI/VBMI2")
    if variant == "dispatch":
        return F._word_hashes
    p1 = F._pass1
    if variant == "gather":
        import types

        import numba
        f = F._pass1.py_func
        env = {**f.__globals__, "_hash_lanes": simd._make_hash_lanes(False)}
        p1 = numba.njit(types.FunctionType(f.__code__, env, f.__name__))
    vector = variant != "scalar"
    return lambda buf, lo, hi, hw, k: p1(buf, lo, hi, hw, k, vector)


@pytest.mark.skipif(not batch_scan.available(), reason="numba kernel unavailable")
@pytest.mark.parametrize("variant", ["dispatch", "scalar", "vector", "gather"])
def test_kernel_word_hashes_equal_numpy(variant):
    """Pass 1 of the compiled kernel (64-byte blocks, word boundaries from bit masks; scalar or
    vector) gives the words and hashes of the numpy tokeniser: random documents (ASCII, any
    bytes, non-ASCII runs, words of every length around 8, 16 and the 64-byte blocks, blocks
    with more words than a vector step takes, empty, separators only), at every start offset
    within a block, written from a non-zero slot; bytes after the range are word bytes, so a
    read past the end would show."""
    rng = np.random.default_rng(11)
    F = ngram
    word_hashes = _pass1(variant)
    alphabet = np.frombuffer(b"abcz019 \t\n.,-'", dtype=np.uint8)
    docs = [b"", b" ", b"a", b"\xc3", b".", b" ,.;\n\t  ", b"  ab  ", b"ab"]
    for _ in range(300):
        n = int(rng.integers(0, 300))
        kind = rng.integers(0, 3)
        if kind == 0:
            docs.append(rng.choice(alphabet, n).tobytes())
        elif kind == 1:
            docs.append(rng.integers(0, 256, n, dtype=np.uint8).tobytes())
        else:
            docs.append(rng.choice(np.frombuffer(b" a\xe9\x80", np.uint8), n).tobytes())
    for L in list(range(1, 70)) + [127, 128, 129, 5000]:
        for pre in (0, 1, 7, 63, 64, 65):
            docs.append(b"x " * (pre // 2) + b"q" * (pre % 2) + b" " + b"w" * L + b" end")
            docs.append(b"y" * L)
    for step in (2, 3, 4, 5):                  # 32, 21, 16, 12 words in a block
        for pre in range(5):
            docs.append(b" " * pre + (b"a" * (step - 1) + b" ") * 100)
    for i, doc in enumerate(docs):
        lo = i % 67
        arr = np.frombuffer(b"z" * lo + doc + b"z" * F.PAD, dtype=np.uint8)
        k0 = 5
        hw = np.full(len(doc) // 2 + k0 + 4, 7, dtype=np.uint64)
        k = word_hashes(arr, lo, lo + len(doc), hw, k0)
        assert hw[k0:k].tolist() == H.tokenise(doc)[2].tolist(), doc[:40]
        assert hw[:k0].tolist() == [7] * k0 and (hw[k:] == 7).all()   # nothing else written


def test_word_hashes_distinguish_words():
    """Word hashes: equal words hash equal wherever they stand; distinct words of up to 16
    bytes (first and last 8 bytes cover them) never collide in a large random sample."""
    rng = np.random.default_rng(3)
    words = {rng.choice(np.frombuffer(b"abcdefgh", np.uint8), int(rng.integers(1, 17))).tobytes()
             for _ in range(40000)}
    words = sorted(words)
    buf = b" ".join(words)
    s, e, h = H.tokenise(buf)
    assert [buf[a:b] for a, b in zip(s, e)] == words
    assert len(set(h.tolist())) == len(words)
    s2, e2, h2 = H.tokenise(b".." + b"  ".join(reversed(words)))
    assert h2.tolist() == h.tolist()[::-1]


def _parquet_fixture(tmp_path, large=False, row_group=7):
    import pyarrow as pa
    import pyarrow.parquet as pq

    filled = SENT.replace("_", "Maria")
    rng = np.random.default_rng(4)
    pieces = ["Word", "x1", " ", "\n", "\t", '"q"', "\\", "é", "ﬁ", "ＦＵ", "½", "中文", "😀", "—",
              "\u00a0", "´", "İ", "e\u0301", "Σ", "\u1100", "नमस्ते"]
    texts, ids = [], []
    for i in range(300):
        m = int(rng.integers(0, 60 if i % 4 else 400))
        t = "".join(str(x) for x in rng.choice(pieces, m))
        if i % 17 == 3:
            t = f"Intro {filled.upper()} {t} {filled}"
        texts.append(None if i % 23 == 7 else t)
        ids.append(f"r{i}" if i % 5 else i)
    ids = [str(x) for x in ids]
    typ = pa.large_string() if large else pa.string()
    table = pa.table({"id": pa.array(ids), "text": pa.array(texts, type=typ)})
    p = tmp_path / ("big.parquet" if large else "t.parquet")
    pq.write_table(table, p, row_group_size=row_group)
    return p, texts


@needs_kernel
@pytest.mark.parametrize("large", [False, True])
@pytest.mark.parametrize("id_field", [None, "id"])
def test_fused_parquet_matches_per_document_path(tmp_path, monkeypatch, large, id_field):
    """Parquet string columns through the Arrow-buffer kernel: the same documents (ids, folded
    bytes, null texts skipped, fallback documents in place), byte counts and hit tables as the
    per-document path, for string and large-string columns and any batch size (rows per record
    batch, bytes per slice); runs with characters that are not context-free come from the run
    cache, or, with a cache that holds nothing, from the Python path (fallback documents)."""
    from csbench.contamination.kernels import columnar

    p, texts = _parquet_fixture(tmp_path, large)
    piece = (str(p), 0, -1)
    want = [(i, H.normalise_bytes(t)) for i, t in C.iter_documents(piece, "parquet", "text",
                                                                   id_field)]
    monkeypatch.setattr(runs, "_RUNS", [])
    for rows, block, cached in ((5, 1 << 22, 0), (64, 300, 1 << 20), (4096, 1 << 22, 0),
                                (4096, 1, 1 << 20), (4096, 1 << 22, 1 << 20)):
        monkeypatch.setattr(runs.RunCache, "MAX_RUNS", cached)
        if not cached:
            monkeypatch.setattr(runs, "_RUNS", [])
        got, fallbacks, nbytes = [], 0, 0
        for b in columnar.iter_batches(piece, "text", id_field, rows, block):
            got.extend((b.doc_id(d), b.doc_bytes(d)) for d in range(len(b.lo)))
            fallbacks += b.fallbacks
            nbytes += b.nbytes
            for d in range(len(b.lo)):
                assert b.hw[b.wlo[d]:b.whi[d]].tolist() == H.tokenise(b.doc_bytes(d))[2].tolist()
        assert got == want, (rows, block)
        assert fallbacks > 10 if not cached else fallbacks < 5
        assert nbytes == sum(len(t.encode()) for t in texts if t is not None)
    idx = ProbeIndex(probes(), n=13, min_words=4)
    fused = Scanner(idx).scan_pieces([piece], "parquet", "text", id_field)
    ref = Scanner(idx, engine="numpy").scan(C.iter_documents(piece, "parquet", "text", id_field))
    pd.testing.assert_frame_equal(fused.table(), ref.table())
    assert not fused.table().empty
    assert (fused.bytes, fused.docs, fused.candidates) == (ref.bytes, ref.docs, ref.candidates)


def test_parquet_errors_match(tmp_path):
    """A missing column or a text column that is not a string names the file on every path."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    p = tmp_path / "n.parquet"
    pq.write_table(pa.table({"id": ["a", "b"], "text": [1, 2]}), p)
    idx = ProbeIndex(probes(), n=13, min_words=4)
    for fn in (lambda: Scanner(idx).scan_pieces([(str(p), 0, -1)], "parquet", "text", "id"),
               lambda: list(C.iter_documents((str(p), 0, -1), "parquet", "text", "id"))):
        with pytest.raises(InputError, match=r"n\.parquet.*not a string"):
            fn()
    for fn in (lambda: Scanner(idx).scan_pieces([(str(p), 0, -1)], "parquet", "body", "id"),
               lambda: list(C.iter_documents((str(p), 0, -1), "parquet", "body", "id"))):
        with pytest.raises(InputError, match=r"n\.parquet.*missing column"):
            fn()


def test_compress_follows_a_named_numba_cpu(monkeypatch):
    """Code compiled for a named CPU (NUMBA_CPU_NAME, e.g. a portable cache for a cluster)
    takes the escape compress-store only when that CPU's features include it."""
    if jit.numba is None:
        pytest.skip("numba not installed")
    monkeypatch.setenv("NUMBA_CPU_NAME", "haswell")
    monkeypatch.setenv("NUMBA_CPU_FEATURES", "+avx2,+bmi2")
    assert not json_text._has_compress()
    monkeypatch.setenv("NUMBA_CPU_FEATURES", "+avx512f,+avx512bw,+avx512vbmi2")
    assert json_text._has_compress()


def _kernels() -> list:
    """Every compiled kernel of the scan (the numba dispatchers of :mod:`.kernels`)."""
    import importlib
    import pkgutil

    import numba

    from csbench.contamination import kernels

    mods = [importlib.import_module(f"{kernels.__name__}.{m.name}")
            for m in pkgutil.iter_modules(kernels.__path__)]
    found = list({id(v): v for m in mods for v in vars(m).values()
                  if isinstance(v, numba.core.registry.CPUDispatcher)}.values())
    assert len(found) >= 25
    return found


@needs_kernel
def test_kernels_compiled_without_reference_counting(tmp_path):
    """Every scan kernel is compiled with ``_nrt=False`` (:func:`.kernels.jit.jit`), and the code
    of the entry points holds no reference-counting call: an array passed to a call or sliced
    would otherwise cost two atomic instructions (45 of the 58 ns of a run-cache lookup)."""
    import numba

    p = tmp_path / "c.jsonl"
    p.write_text('{"text": "Caf\\u00e9 na\\u0308ive words here"}\n', encoding="utf-8")
    idx = ProbeIndex(probes(), n=13, min_words=4)
    Scanner(idx).scan_pieces([(str(p), 0, -1)], "jsonl", "text")       # (compiles them all)
    Scanner(idx).scan([("d", b"some words in a document")])
    kernels = _kernels()
    assert all(k.targetoptions.get("_nrt") is False for k in kernels)
    # the code of the per-run and per-document loops, compiled again (cached code cannot be
    # inspected): the string copy with a run folded from the run cache, and pass 2
    T = folding.tables()
    text = np.frombuffer('Na\u0308ive"'.encode(), dtype=np.uint8).copy()
    out = np.zeros(256, dtype=np.uint8)
    args = (text, 0, len(text), out, 0, json_syntax._CLS, json_syntax._LOWER, json_syntax._ESC, T.ok, T.off,
            T.pool, False, runs.run_cache().arrays())     # (the run: cached by the scan above)

    def again(k, **opts):
        opts = {**{o: v for o, v in k.targetoptions.items() if o != "nopython"}, **opts}
        return numba.njit(**opts, cache=False)(k.py_func)

    for fresh, counted in ((again(json_text._text), False), (again(json_text._text, _nrt=True), True)):
        i, o, _ = fresh(*args)
        assert i == len(text) and out[:o].tobytes() == H.normalise_bytes("Na\u0308ive".encode())
        ir = fresh.inspect_llvm(fresh.signatures[0])
        assert ("NRT_decref" in ir) is counted      # (with counting, the check fails)
    fresh = again(ngram._ngram_pass)
    assert ngram._ngram_pass.signatures
    for sig in ngram._ngram_pass.signatures:
        fresh.compile(sig)
        assert "NRT_decref" not in fresh.inspect_llvm(sig)


@needs_kernel
def test_kernel_cache_stamp_covers_the_whole_package(tmp_path):
    """numba checks a cached kernel against its own file only, while a kernel links in the
    kernels it calls from the other modules (``extract._extract`` holds pass 1 of ``ngram``):
    every kernel's cache stamp also holds the hash of all the package's sources, which changes
    with any of them."""
    import shutil

    kernels = _kernels()
    for k in kernels:
        assert k._cache._cache_file._source_stamp[1] == jit.sources_stamp()
    here = Path(ngram.__file__).parent.parent          # csbench/contamination, kernels/ too
    for f in here.rglob("*.py"):
        (tmp_path / f.relative_to(here)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(f, tmp_path / f.relative_to(here))
    before = jit.sources_stamp(tmp_path)
    assert before == jit.sources_stamp.__wrapped__(here)
    for changed in ("hashing.py", "kernels/ngram.py"):
        (tmp_path / changed).write_text((here / changed).read_text() + "\n# changed\n")
        assert jit.sources_stamp.__wrapped__(tmp_path) != before
        before = jit.sources_stamp.__wrapped__(tmp_path)
