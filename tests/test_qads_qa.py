"""Extractive QA inference with a tiny random model: windows, spans inside the context, no-answer."""
import pytest

from csbench.models.load import load_qa_model
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


def test_windows_batched_by_length_give_the_answers_of_unpadded_windows(tiny_qa_dir):
    """Windows are sorted by length and each batch cut to its longest window: the answers and
    no-answer scores are those of every window run alone (no padding at all), whatever the
    batch size; ties between the windows of one question go to the earlier window."""
    model, tok = load_qa_model(tiny_qa_dir, device="cpu", dtype="float32")
    long_ctx = "The Normans gave their name to Normandy, a region in France. " * 12
    qs = ["Who gave their name to Normandy?", "What is a house?", "Where is France?", "Who?"]
    ctxs = [long_ctx, "A house is a building.", long_ctx[:150], "Rollo led the Norse raiders."]
    alone = predict(model, tok, qs, ctxs, max_length=64, stride=16, batch_size=1, null_threshold=1e9)
    for bs in (3, 32):
        got = predict(model, tok, qs, ctxs, max_length=64, stride=16, batch_size=bs, null_threshold=1e9)
        assert got[0] == alone[0]
        assert got[1] == pytest.approx(alone[1], abs=1e-4)


def test_predict_under_bf16_autocast(tiny_qa_dir):
    import torch

    from csbench.compute import autocast

    model, tok = load_qa_model(tiny_qa_dir, device="cpu", dtype="float32")
    with autocast("cpu", "bfloat16"):
        assert torch.get_autocast_dtype("cpu") == torch.bfloat16 and torch.is_autocast_enabled("cpu")
    with autocast("cpu", "float32"):
        assert not torch.is_autocast_enabled("cpu")
    answers, na = predict(model, tok, ["Who gave their name to Normandy?"],
                          ["The Normans gave their name to Normandy."], max_length=64, stride=16,
                          null_threshold=1e9, dtype="bfloat16")
    assert answers[0] and answers[0] in "The Normans gave their name to Normandy."
    assert isinstance(na[0], float)
