"""Audit engine on planted duplicates and near-duplicates."""
import numpy as np
import pandas as pd
import pytest

from csbench import nearest
from csbench.audit import engine, lexical, wordnet_sim
from csbench.errors import InputError

TRAIN = pd.DataFrame({
    "id": ["r1", "r2", "r3", "r4", "r5"],
    "question": ["A bus has at least two steering wheels.", "Cats usually have four legs.",
                 "Water boils at 100 degrees Celsius at sea level.", "The sun rises in the west.",
                 "You can store milk in a refrigerator."],
    "topic": ["bus", "cat", "water", "sun", "milk"],
})
TEST = pd.DataFrame({
    "id": ["e1", "e2", "e3", "e4"],
    "question": ["A bus has at least two steering wheels.",        # exact duplicate of r1
                 "cats usually have FOUR legs",                     # normalised duplicate of r2
                 "At sea level, water boils at 100 degrees C.",    # near duplicate of r3
                 "Penguins cannot fly."],
    "topic": ["bus", "kitten", "ocean", "penguin"],
})


def bow_encoder(texts):
    """Deterministic stand-in encoder: normalised hashed bag of words."""
    from csbench.text import bag_of_words

    out = np.zeros((len(texts), 512), np.float32)
    for i, t in enumerate(texts):
        for w in bag_of_words(t):
            out[i, sum(map(ord, w)) * 31 % 512] += 1
    n = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.maximum(n, 1e-9)


def test_duplicates_exact_and_normalised():
    d = lexical.duplicates(TEST["id"], TEST["question"], TRAIN["id"], TRAIN["question"])
    assert sorted(map(tuple, d.to_numpy())) == [("e1", "r1", "exact"), ("e2", "r2", "normalised")]


def test_lexical_best_matches_find_planted_pairs():
    for fn in (lexical.trigram_top1, lexical.bm25_top1):
        best, arg = fn(list(TEST["question"]), list(TRAIN["question"]), block=2)
        assert list(arg[:3]) == [0, 1, 2]
        assert best[3] < best[:3].min()  # unrelated item scores lowest
    best, _ = lexical.trigram_top1(list(TEST["question"]), list(TRAIN["question"]))
    assert best[0] == pytest.approx(1.0, abs=1e-5) and best[1] == pytest.approx(1.0, abs=1e-5)


def test_faiss_blocks_match_numpy_reference():
    rng = np.random.default_rng(0)
    base = rng.normal(size=(500, 32)).astype(np.float32)
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    q = rng.normal(size=(301, 32)).astype(np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    s, i = nearest.top1(q, base, block=64)
    rs, ri = nearest.numpy_top1(q, base, block=100)
    assert np.array_equal(i, ri) and np.allclose(s, rs, atol=1e-5)
    s2, i2 = nearest.top1(q, base, method="ivf", nlist=4, nprobe=4)
    assert np.array_equal(i2, ri)  # probing every list is exact
    es, ei = nearest.top1(q, base[:0])
    assert (ei == -1).all()


def test_wordnet_path_similarity_matches_nltk():
    from csbench.wordnet import wordnet

    sims, arg = wordnet_sim.wordnet_top1(["kitten", "dog", "qwertyuiopx"], ["cat", "car", "dog"])
    assert arg[1] == 2 and sims[1] == pytest.approx(1.0)
    wn = wordnet()
    want = max(wn.synset("kitten.n.01").path_similarity(wn.synset(s))
               for s in ("cat.n.01", "car.n.01", "dog.n.01"))
    assert sims[0] == pytest.approx(want)
    assert arg[2] == -1


def test_run_audit_outputs():
    out = engine.run_audit(TRAIN, TEST, bow_encoder, ["question"], short_field="topic", top_k=3,
                           name="planted")
    top1 = out["top1"]
    assert list(top1.columns) == ["test_id", "train_id", "similarity"]
    assert list(top1["train_id"][:3]) == ["r1", "r2", "r3"]
    assert top1["similarity"][0] == pytest.approx(1.0, abs=1e-5)
    for m in engine.METHODS:
        t = out[f"top_pairs.{m}"]
        assert list(t.columns) == engine.PAIR_COLUMNS and len(t) <= 3
    assert out["top_pairs.embedding"]["test_id"].iloc[0] in ("e1", "e2")
    assert out["top_pairs.wordnet"]["test_id"].iloc[0] == "e1"
    s = out["summary"].iloc[0]
    assert (s["exact_duplicate_pairs"], s["normalised_duplicate_pairs"]) == (1, 1)


def test_run_audit_without_short_field_and_bad_columns():
    out = engine.run_audit(TRAIN, TEST, bow_encoder, ["question", "topic"], methods=["embedding"])
    assert out["top_pairs.wordnet"].empty and out["top_pairs.trigram"].empty
    with pytest.raises(InputError, match="nope"):
        engine.run_audit(TRAIN, TEST, bow_encoder, ["nope"], test_path="x.parquet")


def test_read_table_formats(tmp_path):
    TRAIN.to_csv(tmp_path / "t.tsv", sep="\t", index=False)
    TRAIN.to_json(tmp_path / "t.jsonl", orient="records", lines=True)
    assert len(engine.read_table(tmp_path / "t.tsv")) == 5
    assert len(engine.read_table(tmp_path / "t.jsonl")) == 5
    with pytest.raises(InputError):
        engine.read_table(tmp_path / "t.xyz")


def test_plot_top1(tmp_path):
    from csbench.audit.report import plot_top1

    plot_top1({"a": pd.DataFrame({"similarity": [0.1, 0.5, 0.9]}),
               "b": pd.DataFrame({"similarity": [0.3, 1.0]})}, tmp_path / "f.png")
    assert (tmp_path / "f.png").stat().st_size > 1000
