import json
from pathlib import Path

import numpy as np

from csbench.embed import Embedder


def test_embedder_cache_reuses_vectors(tmp_path):
    e = Embedder("sentence-transformers/all-MiniLM-L6-v2", cache_dir=tmp_path)
    v1 = e.encode(["a dog", "a cat", "a dog"])
    assert v1.shape == (3, 384)
    assert np.allclose(np.linalg.norm(v1, axis=1), 1, atol=1e-5)
    assert np.allclose(v1[0], v1[2])
    assert e.n_encoded == 2
    e2 = Embedder("sentence-transformers/all-MiniLM-L6-v2", cache_dir=tmp_path)
    v2 = e2.encode(["a cat", "a dog", "a bird"])
    assert e2.n_encoded == 1
    assert np.allclose(v2[0], v1[1], atol=1e-6)
    assert float(v2[1] @ v2[0]) > float(v2[1] @ v2[2]) - 1  # sanity: finite cosines


def test_vectors_do_not_depend_on_the_order_texts_come_in():
    """Batches are formed by length then text, so a text's vector is bit for bit the same whatever
    order (e.g. a set's, which varies between processes) the caller passes the texts in."""
    import random

    import numpy as np

    texts = [f"{w} number {i} of the list" if i % 3 else f"a longer sentence about {w} and more {i}"
             for i, w in enumerate(["cat", "dog", "tree", "river", "house", "car", "bird", "sun"] * 4)]
    e = Embedder("sentence-transformers/all-MiniLM-L6-v2", cache_dir=None, batch_size=4)
    first = e.encode(texts)
    shuffled = texts[:]
    random.Random(3).shuffle(shuffled)
    again = e.encode(shuffled)
    where = {t: i for i, t in enumerate(shuffled)}
    assert np.array_equal(first, again[[where[t] for t in texts]])


def test_a_vector_does_not_depend_on_its_batch_mates():
    """No text is padded (batches of one token length): a text encoded alone, next to a long
    text, or after others were cached gets the same bits, so job order cannot change results."""
    import numpy as np

    e = Embedder("sentence-transformers/all-MiniLM-L6-v2", cache_dir=None)
    text = "the cat sat on the mat"
    long = "a much longer sentence about many different things that keeps going on for a while"
    alone = e.encode([text])[0]
    assert np.array_equal(alone, e.encode([long, text, "short"])[1])


def test_a_short_text_gets_the_same_bits_alone_in_a_pair_or_among_many():
    """Texts of one token length still share a batch: a 5-token text encoded alone, with one mate
    or with twenty got three different vectors (the CPU's matrix products take another path for
    a handful of rows) until small batches were filled up to MIN_TOKENS."""
    import numpy as np

    words = ["cat", "dog", "house", "tree", "river", "stone", "cloud"]
    texts = [f"{a} {b} {c}" for a in words for b in words[:3] for c in words[:1]][:21]
    e = Embedder("sentence-transformers/all-MiniLM-L6-v2", cache_dir=None)
    assert len(set(e._token_lengths(texts))) == 1
    many = e.encode(texts)
    assert np.array_equal(e.encode(texts[:1])[0], many[0])
    assert np.array_equal(e.encode(texts[:2]), many[:2])


MINILM = "sentence-transformers/all-MiniLM-L6-v2"
ODD_TEXTS = ["", " ", "  leading space", "trailing space  ", "ALL UPPER CASE", "café naïve 東京 🙂",
             "a dog", "a cat", "the cat sat on the mat", " ".join(["long"] * 400)]


def test_plain_encoder_gives_sentence_transformers_vectors_bit_for_bit():
    """The standard MiniLM stack runs without sentence-transformers, with the same vectors, token
    lengths and dimension as ``SentenceTransformer.encode(normalize_embeddings=True)``."""
    from sentence_transformers import SentenceTransformer

    from csbench.embed_plain import PlainEncoder
    from csbench.models.offline import resolve

    plain, st = Embedder(MINILM, cache_dir=None, batch_size=3), Embedder(MINILM, cache_dir=None, batch_size=3)
    assert isinstance(plain.model, PlainEncoder)
    st._model = SentenceTransformer(resolve(MINILM), device="cpu")
    texts = ODD_TEXTS + [f"sentence {i} about a {w}" for i, w in enumerate(["cat", "dog", "house"] * 3)]
    assert plain.dim == st.dim == 384
    assert plain._token_lengths(texts) == st._token_lengths(texts)
    assert np.array_equal(plain.encode(texts), st.encode(texts))
    # one call of mixed lengths too (sentence-transformers' own length sort and padding)
    assert np.array_equal(plain._encode(texts), st._encode(texts))


def _minilm_copy(tmp_path, **pooling):
    """A MiniLM directory (files linked) whose Pooling config is replaced by ``pooling``."""
    from csbench.models.offline import resolve

    src = Path(resolve(MINILM))
    for p in src.iterdir():
        if p.name != "1_Pooling":
            (tmp_path / p.name).symlink_to(p)
    (tmp_path / "1_Pooling").mkdir()
    (tmp_path / "1_Pooling" / "config.json").write_text(
        json.dumps({"word_embedding_dimension": 384, **pooling}))
    return tmp_path


def test_a_non_standard_stack_falls_back_to_sentence_transformers(tmp_path):
    from sentence_transformers import SentenceTransformer

    from csbench.embed_plain import plain_stack

    d = _minilm_copy(tmp_path, pooling_mode_max_tokens=True)
    assert plain_stack(d) is None
    e = Embedder(str(d), cache_dir=None)
    assert isinstance(e.model, SentenceTransformer)
    assert e.encode(["a dog", "a cat"]).shape == (2, 384)


def test_plain_stack_accepts_only_the_standard_stack(tmp_path):
    from csbench.embed_plain import plain_stack

    d = _minilm_copy(tmp_path, pooling_mode_mean_tokens=True)
    assert plain_stack(d)["pooling"] == "mean"
    (d / "1_Pooling" / "config.json").write_text(json.dumps({"embedding_dimension": 384, "pooling_mode": "cls"}))
    assert plain_stack(d)["pooling"] == "cls"
    (d / "1_Pooling" / "config.json").write_text(json.dumps({"embedding_dimension": 384,
                                                             "pooling_mode": ["mean", "max"]}))
    assert plain_stack(d) is None
    (d / "1_Pooling" / "config.json").write_text(json.dumps({"embedding_dimension": 384}))
    modules = json.loads((d / "modules.json").read_text())
    (d / "modules.json").unlink()
    assert plain_stack(d) is None                                  # no modules.json
    dense = {"idx": 3, "name": "3", "path": "3_Dense", "type": "sentence_transformers.models.Dense"}
    (d / "modules.json").write_text(json.dumps(modules + [dense]))
    assert plain_stack(d) is None                                  # a Dense layer
    (d / "modules.json").write_text(json.dumps(modules[:2]))
    assert plain_stack(d) == {"max_seq_length": 256, "do_lower_case": False, "pooling": "mean",
                              "dim": 384, "normalize": False}
    (d / "config_sentence_transformers.json").unlink()
    (d / "config_sentence_transformers.json").write_text(json.dumps({"prompts": {"query": "q: "},
                                                                     "default_prompt_name": "query"}))
    assert plain_stack(d) is None                                  # a default prompt
