"""Extractive QA inference with a tiny random model: windows, spans inside the context, no-answer."""
import pytest

from csbench.models import load_qa_model
from csbench.qads.qa import predict


def test_predict_windows_and_spans(tiny_qa_dir):
    model, tok = load_qa_model(tiny_qa_dir, device="cpu")
    long_ctx = "The Normans gave their name to Normandy, a region in France. " * 30
    qs = ["Who gave their name to Normandy?", "What is a house?"]
    ctxs = [long_ctx, "A house is a building."]
    answers, na = predict(model, tok, qs, ctxs, max_length=64, stride=16, batch_size=4)
    assert len(answers) == 2 and len(na) == 2
    for a, c in zip(answers, ctxs):
        assert a == "" or a in c
    # a huge threshold forces answers; a very negative one forces no-answer
    forced, _ = predict(model, tok, qs, ctxs, max_length=64, stride=16, null_threshold=1e9)
    assert all(forced)
    none, _ = predict(model, tok, qs, ctxs, max_length=64, stride=16, null_threshold=-1e9)
    assert none == ["", ""]


def test_predict_in_bfloat16_reads_fp32_logits(tiny_qa_dir):
    """qads.qa.dtype bfloat16: the model runs in bf16, span scores are summed from fp32 logits."""
    import torch

    model, tok = load_qa_model(tiny_qa_dir, device="cpu", dtype="bfloat16")
    assert next(model.parameters()).dtype == torch.bfloat16
    answers, na = predict(model, tok, ["Who gave their name to Normandy?"],
                          ["The Normans gave their name to Normandy."], max_length=64, stride=16,
                          null_threshold=1e9)
    assert answers[0] and answers[0] in "The Normans gave their name to Normandy."
    assert isinstance(na[0], float)
