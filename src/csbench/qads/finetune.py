"""Optional fine-tuning of an extractive QA model on QADS (k folds, as in the paper: 80/20).

* :func:`assign_folds` splits the questions of one QADS mode into ``k`` folds, seeded and grouped
  by the ORIGINAL SQuAD question id (QADS ids are ``<original>-<n>``), so that the variants of one
  question are never on both sides of a split;
* :func:`prepare_features` is the standard SQuAD 2.0 training feature construction: overflowing
  windows (``max_length``/``doc_stride``), start/end token positions of the first gold answer, the
  [CLS] index (0 when the tokenizer has no CLS) when the question is unanswerable or the answer is
  not wholly inside the window;
* :func:`train` is a plain torch loop (AdamW, linear decay to 0, no warm-up);
* :func:`run_fold` fine-tunes a fresh copy of a model on the other folds, predicts the held-out
  fold with :func:`csbench.qads.qa.predict` and scores it with :mod:`csbench.qads.metric`, along
  with the un-fine-tuned model on the same held-out questions.
"""
from __future__ import annotations

import inspect
import logging
import random

import numpy as np

log = logging.getLogger(__name__)

SCORE_COLUMNS = ["exact", "f1", "HasAns_exact", "HasAns_f1", "NoAns_exact", "n"]


def original_id(qid: str) -> str:
    """``<original>-<n>`` -> ``<original>`` (ids without a suffix are their own group)."""
    head, sep, tail = qid.rpartition("-")
    return head if sep and tail.isdigit() else qid


def flatten(dataset: list[dict]) -> list[dict]:
    """One dict per question of a SQuAD ``data`` list: id, question, context, answers."""
    return [{"id": qa["id"], "question": qa["question"], "context": p["context"],
             "answers": list(qa.get("answers") or [])}
            for art in dataset for p in art["paragraphs"] for qa in p["qas"]]


def assign_folds(ids: list[str], k: int, seed: int = 0) -> dict[str, int]:
    """Question id -> fold in ``range(k)``; groups (original ids) are shuffled with ``seed`` and
    each goes to the fold with the fewest questions so far (ties: lowest fold)."""
    if k < 2:
        raise ValueError("need at least 2 folds")
    groups: dict[str, list[str]] = {}
    for q in ids:
        groups.setdefault(original_id(q), []).append(q)
    order = sorted(groups)
    random.Random(seed).shuffle(order)
    sizes = [0] * k
    out = {}
    for g in order:
        f = min(range(k), key=lambda i: (sizes[i], i))
        sizes[f] += len(groups[g])
        for q in groups[g]:
            out[q] = f
    return out


def subset(dataset: list[dict], keep: set[str]) -> list[dict]:
    """The SQuAD ``data`` list restricted to the questions in ``keep`` (empty nodes dropped)."""
    out = []
    for art in dataset:
        paras = []
        for p in art["paragraphs"]:
            qas = [qa for qa in p["qas"] if qa["id"] in keep]
            if qas:
                paras.append({**p, "qas": qas})
        if paras:
            out.append({**art, "paragraphs": paras})
    return out


def prepare_features(tokenizer, questions: list[str], contexts: list[str], answers: list[list[dict]],
                     max_length: int = 384, doc_stride: int = 128) -> dict[str, np.ndarray]:
    """SQuAD 2.0 training features (one row per window): the tokenizer's model inputs plus
    ``start_positions``/``end_positions`` (token indices; the CLS index for no answer) and
    ``example`` (index of the question the window comes from)."""
    pad_right = tokenizer.padding_side == "right"
    q = [s.lstrip() for s in questions]
    enc = tokenizer(q if pad_right else contexts, contexts if pad_right else q,
                    truncation="only_second" if pad_right else "only_first",
                    max_length=max_length, stride=doc_stride, return_overflowing_tokens=True,
                    return_offsets_mapping=True, padding="longest", return_tensors="np")
    mapping = enc.pop("overflow_to_sample_mapping")
    offsets = enc.pop("offset_mapping")
    context_seq = 1 if pad_right else 0
    cls_id = tokenizer.cls_token_id
    starts, ends = [], []
    for f in range(len(mapping)):
        ids = enc["input_ids"][f]
        hit = np.where(ids == cls_id)[0] if cls_id is not None else []
        cls = int(hit[0]) if len(hit) else 0
        ex = int(mapping[f])
        golds = answers[ex]
        seq = enc.sequence_ids(f)
        ctx = [i for i, s in enumerate(seq) if s == context_seq]
        if not golds or not ctx:
            starts.append(cls)
            ends.append(cls)
            continue
        a_start = int(golds[0]["answer_start"])
        a_end = a_start + len(golds[0]["text"])
        c0, c1 = ctx[0], ctx[-1]
        if not (offsets[f][c0][0] <= a_start and offsets[f][c1][1] >= a_end):
            starts.append(cls)
            ends.append(cls)
            continue
        i = c0
        while i <= c1 and offsets[f][i][0] <= a_start:
            i += 1
        s_tok = i - 1
        j = c1
        while j >= c0 and offsets[f][j][1] >= a_end:
            j -= 1
        e_tok = j + 1
        starts.append(s_tok)
        ends.append(max(e_tok, s_tok))
    feats = {k: np.asarray(v) for k, v in enc.items()}
    feats["start_positions"] = np.asarray(starts, dtype=np.int64)
    feats["end_positions"] = np.asarray(ends, dtype=np.int64)
    feats["example"] = np.asarray(mapping, dtype=np.int64)
    return feats


def _batch(model, feats: dict, idx, device):
    import torch

    accepted = set(inspect.signature(model.forward).parameters)
    return {k: torch.as_tensor(v[idx]).to(device) for k, v in feats.items()
            if k in accepted and k != "example"}


def train(model, feats: dict, epochs: int = 2, learning_rate: float = 3e-5, batch_size: int = 16,
          seed: int = 0, weight_decay: float = 0.0) -> list[float]:
    """Fine-tune ``model`` in place on ``feats`` (AdamW, linear decay); returns the step losses."""
    import torch

    device = next(model.parameters()).device
    n = len(feats["start_positions"])
    steps_per_epoch = max(1, -(-n // batch_size))
    total = max(1, steps_per_epoch * epochs)
    opt = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: max(0.0, 1.0 - s / total))
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model.train()
    losses = []
    # enable_grad: other code in the same process may have switched autograd off globally
    with torch.enable_grad():
        for _ in range(epochs):
            perm = torch.randperm(n, generator=gen).numpy()
            for b in range(0, n, batch_size):
                out = model(**_batch(model, feats, perm[b:b + batch_size], device))
                out.loss.backward()
                opt.step()
                sched.step()
                opt.zero_grad(set_to_none=True)
                losses.append(float(out.loss.detach().cpu()))
    model.eval()
    return losses


def evaluate_model(model, tokenizer, test: list[dict], ft: dict, qa: dict) -> dict:
    """Predict the held-out SQuAD ``data`` list and score it with the official metric."""
    from .metric import evaluate
    from .qa import predict

    rows = flatten(test)
    answers, na = predict(model, tokenizer, [r["question"] for r in rows],
                          [r["context"] for r in rows], max_length=ft["max_length"],
                          stride=ft["doc_stride"], batch_size=qa["batch_size"],
                          max_answer_len=qa["max_answer_len"], null_threshold=qa["null_threshold"])
    preds = {r["id"]: a for r, a in zip(rows, answers)}
    r = evaluate(test, preds, {r["id"]: s for r, s in zip(rows, na)})
    return {"exact": r["exact"], "f1": r["f1"], "HasAns_exact": r.get("HasAns_exact"),
            "HasAns_f1": r.get("HasAns_f1"), "NoAns_exact": r.get("NoAns_exact"), "n": r["total"]}


def run_fold(model_path, dataset: list[dict], fold: int, ft: dict, qa: dict) -> list[dict]:
    """Score the un-fine-tuned model and a copy fine-tuned on the other folds on fold ``fold``."""
    import torch

    from ..models import load_qa_model

    rows = flatten(dataset)
    folds = assign_folds([r["id"] for r in rows], ft["folds"], ft["seed"])
    test_ids = {q for q, f in folds.items() if f == fold}
    train_rows = [r for r in rows if folds[r["id"]] != fold]
    test = subset(dataset, test_ids)
    log.info("fold %d: %d training questions (%d groups), %d held out", fold, len(train_rows),
             len({original_id(r["id"]) for r in train_rows}), len(test_ids))
    model, tok = load_qa_model(model_path, device=qa["device"], dtype="float32")
    out = [{"fold": fold, "split": "base", **evaluate_model(model, tok, test, ft, qa)}]
    feats = prepare_features(tok, [r["question"] for r in train_rows],
                             [r["context"] for r in train_rows], [r["answers"] for r in train_rows],
                             max_length=min(ft["max_length"],
                                            getattr(model.config, "max_position_embeddings",
                                                    ft["max_length"])),
                             doc_stride=ft["doc_stride"])
    torch.manual_seed(ft["seed"] + fold)
    losses = train(model, feats, epochs=ft["epochs"], learning_rate=ft["learning_rate"],
                   batch_size=ft["batch_size"], seed=ft["seed"] + fold)
    if losses:
        log.info("fold %d: %d windows, %d steps, loss %.4f -> %.4f", fold,
                 len(feats["start_positions"]), len(losses), losses[0], losses[-1])
    out.append({"fold": fold, "split": "finetuned", **evaluate_model(model, tok, test, ft, qa)})
    return out


def with_means(rows: list[dict]) -> list[dict]:
    """Append one ``fold = mean`` row per split (unweighted mean over folds; ``n`` summed)."""
    import pandas as pd

    df = pd.DataFrame(rows)
    means = []
    for split, g in df.groupby("split", sort=False):
        m = {"fold": "mean", "split": split}
        for c in SCORE_COLUMNS:
            m[c] = int(g[c].sum()) if c == "n" else g[c].astype(float).mean()
        means.append(m)
    return rows + means
