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
