"""Optional QADS fine-tuning: grouped folds, SQuAD 2.0 training labels, a training step, fold run."""
import numpy as np
import pandas as pd
import pytest

from csbench.models.load import load_qa_model
from csbench.qads import finetune as F
from csbench.qads.qa import model_inputs

CTX = ("The Normans gave their name to Normandy, a region in France. " * 6
       + "Rollo was the leader of the Norse raiders.")


def test_original_id():
    assert F.original_id("56ddde6b9a695914005b9628-3") == "56ddde6b9a695914005b9628"
    assert F.original_id("demo103a0010-12") == "demo103a0010"
    assert F.original_id("plain") == "plain"
    assert F.original_id("a-b") == "a-b"  # non-numeric suffix: not a QADS variant


def test_folds_are_grouped_seeded_and_balanced():
    ids = [f"q{g:02d}-{v}" for g in range(23) for v in range(1, 1 + g % 4 + 1)]
    folds = F.assign_folds(ids, 5, seed=0)
    assert set(folds) == set(ids) and set(folds.values()) == set(range(5))
    by_group = {}
    for q, f in folds.items():
        by_group.setdefault(F.original_id(q), set()).add(f)
    assert all(len(s) == 1 for s in by_group.values()), "variants of one question straddle folds"
    sizes = pd.Series(folds).value_counts()
    assert sizes.max() - sizes.min() <= 4  # greedy balance: at most one group's size apart
    assert F.assign_folds(ids, 5, seed=0) == folds
    assert F.assign_folds(ids, 5, seed=1) != folds
    with pytest.raises(ValueError):
        F.assign_folds(ids, 1)


def test_subset_keeps_nesting():
    data = [{"title": "t", "paragraphs": [{"context": "c", "qas": [{"id": "a-1"}, {"id": "b-1"}]},
                                          {"context": "d", "qas": [{"id": "c-1"}]}]}]
    out = F.subset(data, {"b-1"})
    assert out == [{"title": "t", "paragraphs": [{"context": "c", "qas": [{"id": "b-1"}]}]}]


@pytest.fixture(scope="module")
def qa(tiny_qa_dir):
    return load_qa_model(tiny_qa_dir, device="cpu", dtype="float32")


def test_feature_labels_map_answers_to_tokens_and_unanswerable_to_cls(qa):
    model, tok = qa
    qs = ["Who led the raiders?", "Where is Normandy?", "What is a house?"]
    ans = [[{"text": "Rollo", "answer_start": CTX.index("Rollo")}],
           [{"text": "France", "answer_start": CTX.index("France")}], []]
    f = F.prepare_features(tok, qs, [CTX] * 3, ans, max_length=48, doc_stride=16)
    n = len(f["example"])
    assert n > 3, "the long context must overflow into several windows"
    cls = 0 if tok.cls_token_id not in f["input_ids"][0] else list(f["input_ids"][0]).index(tok.cls_token_id)
    for i in range(n):
        ex, s, e = int(f["example"][i]), int(f["start_positions"][i]), int(f["end_positions"][i])
        span = tok.decode(f["input_ids"][i][s:e + 1]).strip()
        if ex == 2:
            assert (s, e) == (cls, cls), "unanswerable -> CLS"
        elif (s, e) != (cls, cls):
            assert span == ["Rollo", "France"][ex]
    # each answerable question has at least one window holding its answer
    for ex, text in ((0, "Rollo"), (1, "France")):
        hits = [i for i in range(n) if f["example"][i] == ex and f["start_positions"][i] != cls]
        assert hits, text
    assert f["input_ids"].shape[1] <= 48


def test_training_reduces_loss(tiny_qa_dir):
    import torch

    model, tok = load_qa_model(tiny_qa_dir, device="cpu", dtype="float32")
    qs = ["Who led the raiders?", "What is a house?"] * 4
    ans = [[{"text": "Rollo", "answer_start": CTX.index("Rollo")}], []] * 4
    f = F.prepare_features(tok, qs, [CTX] * 8, ans, max_length=64, doc_stride=16)

    def loss():
        with torch.no_grad():
            model.eval()
            return float(model(**model_inputs(model, f, slice(None), "cpu")).loss)

    before = loss()
    losses = F.train(model, f, epochs=5, learning_rate=1e-3, batch_size=64, seed=0)
    assert len(losses) == 5
    assert loss() < before - 0.1


def test_run_fold_and_means(tiny_qa_dir, tmp_path):
    data = [{"title": "N", "paragraphs": [{"context": CTX, "qas": [
        {"id": f"q{g}-{v}", "question": q, "answers": a, "is_impossible": not a}
        for g, (q, a) in enumerate([("Who led the raiders?", [{"text": "Rollo", "answer_start": CTX.index("Rollo")}]),
                                    ("Where is Normandy?", [{"text": "France", "answer_start": CTX.index("France")}]),
                                    ("What is a house?", []), ("Who gave their name?", [{"text": "The Normans", "answer_start": 0}])])
        for v in (1, 2)]}]}]
    ft = dict(folds=2, seed=0, epochs=1, batch_size=4, learning_rate=1e-3, max_length=64, doc_stride=16)
    qa = dict(device="cpu", batch_size=8, max_answer_len=30, null_threshold=0.0)
    rows = F.run_fold(tiny_qa_dir, data, 0, ft, qa)
    assert [r["split"] for r in rows] == ["base", "finetuned"]
    assert rows[0]["n"] == rows[1]["n"] == 4
    both = rows + [{**r, "fold": 1} for r in rows]
    out = F.with_means(both)
    means = [r for r in out if r["fold"] == "mean"]
    assert [m["split"] for m in means] == ["base", "finetuned"]
    assert means[0]["n"] == 8 and means[0]["f1"] == pytest.approx(rows[0]["f1"])


def test_length_grouped_batches_are_fixed_by_the_seed():
    """Which windows share a batch depends on the seed and the lengths only (a CPU generator):
    pinned here, so a change of training order (another PyTorch randperm, another grouping) shows."""
    import torch

    lengths = [5, 3, 9, 1, 7, 2, 8, 6, 4, 10, 12, 11]

    def batches(seed, group=2):
        return [b.tolist() for b in F.length_grouped_batches(lengths, 2, torch.Generator().manual_seed(seed),
                                                             group=group)]

    assert batches(0) == [[7, 4], [5, 8], [6, 11], [3, 1], [2, 10], [0, 9]]
    assert batches(1) == [[0, 11], [3, 5], [9, 10], [7, 2], [1, 8], [4, 6]]
    assert batches(0) == batches(0)
    for seed in range(5):  # every window once per epoch; a run of `group` batches is sorted by length
        got = batches(seed, group=3)
        assert sorted(i for b in got for i in b) == list(range(len(lengths)))
        assert all(len(b) == 2 for b in got)


def test_bf16_training_autocasts_matrix_products_and_keeps_fp32_weights(tiny_qa_dir):
    """dtype bfloat16: linear layers compute in bf16 (autocast), the weights, their gradients and the
    loss stay float32; the model learns as in float32."""
    import torch

    model, tok = load_qa_model(tiny_qa_dir, device="cpu", dtype="float32")
    qs = ["Who led the raiders?", "What is a house?"] * 4
    ans = [[{"text": "Rollo", "answer_start": CTX.index("Rollo")}], []] * 4
    f = F.prepare_features(tok, qs, [CTX] * 8, ans, max_length=64, doc_stride=16)
    seen = set()
    hook = model.qa_outputs.register_forward_hook(lambda m, i, o: seen.add(o.dtype))
    losses = F.train(model, f, epochs=5, learning_rate=1e-3, batch_size=64, seed=0, dtype="bfloat16")
    hook.remove()
    assert seen == {torch.bfloat16}
    assert all(p.dtype == torch.float32 for p in model.parameters())
    assert len(losses) == 5 and all(np.isfinite(losses)) and losses[-1] < losses[0] - 0.1


def test_run_fold_in_bf16(tiny_qa_dir):
    import torch

    seen = set()
    real = torch.nn.Linear.forward
    data = [{"title": "N", "paragraphs": [{"context": CTX, "qas": [
        {"id": f"q{g}-1", "question": q, "answers": a, "is_impossible": not a}
        for g, (q, a) in enumerate([("Who led the raiders?", [{"text": "Rollo", "answer_start": CTX.index("Rollo")}]),
                                    ("What is a house?", []), ("Where is Normandy?", []), ("Who?", [])])]}]}]
    ft = dict(folds=2, seed=0, epochs=1, batch_size=4, learning_rate=1e-3, max_length=64, doc_stride=16,
              dtype="bfloat16")
    qa = dict(device="cpu", batch_size=8, max_answer_len=30, null_threshold=0.0)
    try:  # every matrix product of training and prediction ran in bf16
        torch.nn.Linear.forward = lambda self, x: seen.add(real(self, x).dtype) or real(self, x)
        rows = F.run_fold(tiny_qa_dir, data, 0, ft, qa)
    finally:
        torch.nn.Linear.forward = real
    assert seen == {torch.bfloat16}
    assert [r["split"] for r in rows] == ["base", "finetuned"] and rows[1]["n"] == 2


def test_training_works_when_autograd_was_switched_off_globally(tiny_qa_dir):
    import torch

    model, tok = load_qa_model(tiny_qa_dir, device="cpu", dtype="float32")
    f = F.prepare_features(tok, ["Who led the raiders?"], [CTX],
                           [[{"text": "Rollo", "answer_start": CTX.index("Rollo")}]], 64, 16)
    prev = torch.is_grad_enabled()
    torch.set_grad_enabled(False)
    try:
        assert len(F.train(model, f, epochs=1, learning_rate=1e-3, batch_size=64)) == 1
    finally:
        torch.set_grad_enabled(prev)


def test_warmup_and_clipping(tiny_qa_dir, monkeypatch):
    """Warm-up rises linearly to the peak, then decays linearly; clipping is applied per step."""
    import torch

    model, tok = load_qa_model(tiny_qa_dir, device="cpu", dtype="float32")
    f = F.prepare_features(tok, ["Who led the raiders?"] * 4, [CTX] * 4,
                           [[{"text": "Rollo", "answer_start": CTX.index("Rollo")}]] * 4, 64, 16)
    lrs, clips = [], []
    step = torch.optim.AdamW.step

    def spy(self, *a, **k):
        lrs.append(self.param_groups[0]["lr"])
        return step(self, *a, **k)

    clip = torch.nn.utils.clip_grad_norm_
    monkeypatch.setattr(torch.optim.AdamW, "step", spy)
    monkeypatch.setattr(torch.nn.utils, "clip_grad_norm_", lambda p, n: clips.append(n) or clip(p, n))
    n = len(f["start_positions"])  # one step per epoch
    losses = F.train(model, f, epochs=10, learning_rate=1e-3, batch_size=n, warmup=0.2,
                     max_grad_norm=0.5)
    assert len(losses) == 10 and clips == [0.5] * 10
    assert lrs[:4] == pytest.approx([5e-4, 1e-3, 1e-3, 1e-3 * 7 / 8])
    assert lrs[-1] == pytest.approx(1e-3 / 8)


def _article(title, qas):
    return {"title": title, "paragraphs": [{"context": "Paris is in France.", "qas": [
        {"id": qid, "question": "Where?", "answers": [{"text": "France", "answer_start": 12}] if ans else [],
         "is_impossible": not ans} for qid, ans in qas]}]}


def test_top_domain_column_and_lookup():
    from csbench.qads.domains import NO_DOMAIN, article_domains, top_domain_by_article

    questions = pd.DataFrame({"title": ["A", "A", "B"], "id": ["a1", "a2", "b1"]})
    subs = pd.DataFrame({"id": ["a1", "a1", "a2", "b1"],
                         "domains": [["law.n.01"], ["art.n.01"], ["law.n.01"], []]})
    table = article_domains(questions, subs, sample=10)
    assert table["domains"].tolist() == ["law (2), art (1)", ""]
    assert table["top_domain"].tolist() == ["law", NO_DOMAIN]
    assert top_domain_by_article(table) == {"A": "law", "B": NO_DOMAIN}
    with pytest.raises(ValueError, match="forcerun qads_domains"):
        top_domain_by_article(table.drop(columns="top_domain"))


def test_by_domain_scores_pooled_folds_per_article_domain():
    sets = {"original": [_article("A", [("a1", True), ("a2", False)]), _article("B", [("b1", True)]),
                         _article("C", [("c1", True)])]}
    folds = [{"finetuned": {"original": {"preds": {"a1": "France", "a2": ""}, "na_probs": {"a1": 0.0, "a2": 1.0}}}},
             {"finetuned": {"original": {"preds": {"b1": "Paris", "c1": "France"},
                                         "na_probs": {"b1": 0.0, "c1": 0.0}}}}]
    rows = F.by_domain(sets, folds, {"A": "geo", "B": "geo", "C": "law"})
    assert [(r["domain"], r["articles"], r["titles"], r["n"]) for r in rows] == [
        ("geo", 2, "A, B", 3), ("law", 1, "C", 1)]
    geo = rows[0]
    assert geo["HasAns_n"] == 2 and geo["HasAns_exact"] == 50.0 and geo["NoAns_exact"] == 100.0
    assert rows[1]["exact"] == 100.0
    with pytest.raises(KeyError, match="no row in the domains table"):
        F.by_domain(sets, folds, {"A": "geo", "B": "geo"})


def test_pooled_items_are_the_questions_behind_the_pooled_rows():
    sets = {"original": [_article("A", [("a1", True), ("a2", False)]), _article("B", [("b1", True)])]}
    folds = [{"finetuned": {"original": {"preds": {"a1": "France", "a2": "x"},
                                         "na_probs": {"a1": 0.0, "a2": 0.0}}}},
             {"finetuned": {"original": {"preds": {"b1": "Paris"}, "na_probs": {"b1": 0.0}}}}]
    (row,) = F.pooled(sets, folds)
    items = F.pooled_items(sets, folds)
    assert [(i["split"], i["questions"], i["id"], i["has_answer"]) for i in items] == [
        ("finetuned", "original", "a1", True), ("finetuned", "original", "a2", False),
        ("finetuned", "original", "b1", True)]
    assert 100 * sum(i["f1"] for i in items) / len(items) == pytest.approx(row["f1"])


def test_a_fresh_qa_head_is_seeded_whatever_ran_before(tiny_qa_dir, tmp_path):
    """An encoder-only checkpoint gets a new QA head at load time: it comes from the given seed, not
    from the process's RNG state (two reproduce runs trained different MiniLM heads before)."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    enc = tmp_path / "encoder-only"
    AutoModel.from_pretrained(tiny_qa_dir).save_pretrained(enc)
    AutoTokenizer.from_pretrained(tiny_qa_dir).save_pretrained(enc)
    heads = []
    for before, seed in ((1, 0), (2, 0), (1, 5)):
        torch.manual_seed(before)
        state = torch.random.get_rng_state()
        model, _ = load_qa_model(enc, device="cpu", dtype="float32", seed=seed)
        assert torch.equal(torch.random.get_rng_state(), state)  # the caller's RNG is untouched
        heads.append(model.qa_outputs.weight.detach().clone())
    assert torch.equal(heads[0], heads[1]) and not torch.equal(heads[0], heads[2])


def test_the_qads_arm_adds_the_rewritten_questions_of_the_training_articles(tiny_qa_dir, caplog):
    """add_rewritten: the same article folds as the plain run, its training questions plus the
    rewritten versions from the training articles only; the held-out sets are the same."""
    import logging

    from csbench.qads.workflow import finetune_arms, finetune_sets, finetune_tag, trained_on

    squad = [_article(t, [(f"{t}{i}", i % 2 == 0) for i in range(3)]) for t in "ABCD"]
    one = [_article(t, [(f"{t}{i}-1", i % 2 == 0) for i in range(3)]) for t in "ABCD"]
    sets = {"squad": squad, "original": squad, "one": one}
    ft = dict(folds=2, seed=0, epochs=1, batch_size=4, learning_rate=1e-3, max_length=64,
              doc_stride=16, group_by="article", train_on="squad", score_on=["original", "one"],
              score_base=False)
    qa = dict(device="cpu", batch_size=8, max_answer_len=30, null_threshold=0.0)
    with caplog.at_level(logging.INFO, logger="csbench.qads.finetune"):
        plain = F.run_fold(tiny_qa_dir, sets, 0, ft, qa)
        arm = F.run_fold(tiny_qa_dir, sets, 0, {**ft, "add_rewritten": "one"}, qa)
    assert [r["train_windows"] for r in plain] == [6, 6]  # two training articles x 3 questions
    assert [r["train_windows"] for r in arm] == [12, 12]  # + their 6 rewritten questions
    assert [(r["questions"], r["n"]) for r in arm] == [(r["questions"], r["n"]) for r in plain]
    assert "6 rewritten questions of 'one' added" in caplog.text
    # the plain run's settings and tag are unchanged by the arm; the arm gets <tag>+<mode>
    cfg = {**ft, "enabled": True, "questions": "one", "train_limit": 0, "add_rewritten": "one"}
    arms = finetune_arms(cfg)
    assert list(arms) == ["squad-by-article", "squad-by-article+one"]
    assert "add_rewritten" not in arms["squad-by-article"] and "enabled" not in arms["squad-by-article"]
    assert arms["squad-by-article+one"]["add_rewritten"] == "one"
    assert list(finetune_arms({**cfg, "add_rewritten": None})) == [finetune_tag(cfg)]
    assert finetune_sets({**cfg, "score_on": ["original"], "add_rewritten": "all"}) == \
        ["squad", "original", "all"]
    assert trained_on(arms["squad-by-article+one"]) == "squad + one"
    assert trained_on(arms["squad-by-article"]) == "squad"
    with pytest.raises(ValueError, match="trains on already"):
        finetune_arms({**cfg, "train_on": None, "questions": "one"})
