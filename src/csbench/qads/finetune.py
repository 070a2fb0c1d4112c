"""Optional fine-tuning of an extractive QA model on QADS (k folds, as in the paper: 80/20).

* :func:`assign_folds` splits the questions of one QADS mode into ``k`` folds, seeded and grouped
  by the ORIGINAL SQuAD question id (QADS ids are ``<original>-<n>``), so that the variants of one
  question are never on both sides of a split; with ``group_by: article`` (:func:`fold_plan`) the
  groups are SQuAD articles, so no paragraph is on both sides;
* ``train_on`` / ``score_on`` choose the question set the model is trained on (for example the
  original SQuAD questions, to train a QA head on a pretrained encoder) and the sets scored on the
  held-out fold (for example original, ``one`` and ``all``: the QADS experiment);
  ``add_rewritten`` (the QADS arm, Table 2's third row) adds the QADS-rewritten versions (mode
  ``one`` or ``all``) of the training groups' questions to the training questions: the folds are
  the plain run's, so both arms hold out the same articles;
* :func:`prepare_features` is the standard SQuAD 2.0 training feature construction: overflowing
  windows (``max_length``/``doc_stride``), start/end token positions of the first gold answer, the
  [CLS] index (0 when the tokenizer has no CLS) when the question is unanswerable or the answer is
  not wholly inside the window;
* :func:`train` is a plain torch loop (AdamW, linear warm-up and decay, optional clipping) over
  length-grouped batches (:func:`length_grouped_batches`) cut to their longest window, in float32
  or under bf16 autocast (``dtype``; :func:`csbench.compute.autocast`; the schedule, seeding and
  progress lines are :mod:`csbench.training`'s, shared with causal-LM fine-tuning);
* :func:`run_fold` fine-tunes a fresh copy of a model on the other folds, predicts the held-out
  fold with :func:`csbench.qads.qa.predict` and scores it with :mod:`csbench.qads.metric`, along
  with the un-fine-tuned model on the same held-out questions.
"""
from __future__ import annotations

import logging
import random

import numpy as np

log = logging.getLogger(__name__)

SCORE_COLUMNS = ["exact", "f1", "HasAns_exact", "HasAns_f1", "NoAns_exact", "n"]
COUNT_COLUMNS = ["n", "HasAns_n", "NoAns_n"]


def original_id(qid: str) -> str:
    """``<original>-<n>`` -> ``<original>`` (ids without a suffix are their own group)."""
    head, sep, tail = qid.rpartition("-")
    return head if sep and tail.isdigit() else qid


def flatten(dataset: list[dict]) -> list[dict]:
    """One dict per question of a SQuAD ``data`` list: id, question, context, answers, title."""
    return [{"id": qa["id"], "question": qa["question"], "context": p["context"],
             "answers": list(qa.get("answers") or []), "title": art.get("title", "")}
            for art in dataset for p in art["paragraphs"] for qa in p["qas"]]


def group_key(row: dict, by: str) -> str:
    """The fold group of a flattened question: its article or its original question id."""
    if by == "article":
        return row["title"]
    if by == "question":
        return original_id(row["id"])
    raise ValueError(f"group_by must be 'article' or 'question', not {by!r}")


def assign_group_folds(sizes: dict[str, int], k: int, seed: int = 0) -> dict[str, int]:
    """Group -> fold: groups shuffled with ``seed``, each to the fold with the fewest questions so
    far (ties: lowest fold)."""
    if k < 2:
        raise ValueError("need at least 2 folds")
    order = sorted(sizes)
    random.Random(seed).shuffle(order)
    load = [0] * k
    out = {}
    for g in order:
        f = min(range(k), key=lambda i: (load[i], i))
        load[f] += sizes[g]
        out[g] = f
    return out


def fold_plan(sets: dict[str, list[dict]], train_on: str, k: int, seed: int = 0,
              by: str = "question") -> dict[str, int]:
    """Group -> fold for every group met in any of ``sets`` (name -> SQuAD ``data`` list),
    balanced by the number of training questions (groups only in scored sets weigh 0)."""
    sizes: dict[str, int] = {}
    for name, data in sets.items():
        for r in flatten(data):
            g = group_key(r, by)
            sizes[g] = sizes.get(g, 0) + (1 if name == train_on else 0)
    return assign_group_folds(sizes, k, seed)


def assign_folds(ids: list[str], k: int, seed: int = 0) -> dict[str, int]:
    """Question id -> fold in ``range(k)``; groups (original ids) are shuffled with ``seed`` and
    each goes to the fold with the fewest questions so far (ties: lowest fold)."""
    groups: dict[str, list[str]] = {}
    for q in ids:
        groups.setdefault(original_id(q), []).append(q)
    folds = assign_group_folds({g: len(qs) for g, qs in groups.items()}, k, seed)
    return {q: folds[g] for g, qs in groups.items() for q in qs}


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


def length_grouped_batches(lengths, batch_size: int, gen, group: int = 50) -> list:
    """Shuffled batches of window indices, each drawn from windows of similar length: the shuffled
    order is cut into runs of ``group`` batches, each run sorted by length (stable) and cut into
    batches, and the batch order shuffled again. Only ``gen`` (a CPU ``torch.Generator``) and the
    lengths decide the batches: the same on any machine and device for one seed and PyTorch's
    ``randperm`` (tests pin them). On SQuAD windows (256 tokens, batch 32) the batches cut to their
    longest window compute 1.3% padding against 50% for batches of the plain shuffled order."""
    import torch

    n = len(lengths)
    perm = torch.randperm(n, generator=gen).numpy()
    batches = []
    run = batch_size * group
    for r in range(0, n, run):
        chunk = perm[r:r + run]
        chunk = chunk[np.argsort(np.asarray(lengths)[chunk], kind="stable")]
        batches.extend(chunk[b:b + batch_size] for b in range(0, len(chunk), batch_size))
    order = torch.randperm(len(batches), generator=gen).numpy()
    return [batches[i] for i in order]


def train(model, feats: dict, epochs: int = 2, learning_rate: float = 3e-5, batch_size: int = 16,
          seed: int = 0, weight_decay: float = 0.0, warmup: float = 0.0,
          max_grad_norm: float = 0.0, dtype: str = "float32") -> list[float]:
    """Fine-tune ``model`` in place on ``feats`` (AdamW; linear warm-up over the first ``warmup``
    fraction of the steps, then linear decay to 0; gradients clipped to ``max_grad_norm`` when
    positive); ``dtype: bfloat16`` runs the forward pass under bf16 autocast (the float32 weights,
    gradients, optimizer state and the cross-entropy loss stay float32); returns the step
    losses."""
    import torch

    from ..compute import autocast
    from ..training import Progress, linear_schedule, seeded
    from .qa import model_inputs

    device = next(model.parameters()).device
    n = len(feats["start_positions"])
    steps_per_epoch = max(1, -(-n // batch_size))
    opt = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=weight_decay)
    sched = linear_schedule(opt, steps_per_epoch * epochs, warmup)
    gen = seeded(seed)
    model.train()
    losses = []
    lengths = (feats["attention_mask"].sum(axis=1) if "attention_mask" in feats
               else np.full(n, feats["input_ids"].shape[1]))
    done, progress = 0, Progress(n * epochs, "windows")
    # enable_grad: other code in the same process may have switched autograd off globally
    with torch.enable_grad():
        for epoch in range(epochs):
            for idx in length_grouped_batches(lengths, batch_size, gen):
                with autocast(device, dtype):
                    out = model(**model_inputs(model, feats, idx, device))
                out.loss.backward()
                if max_grad_norm > 0:
                    torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
                opt.step()
                sched.step()
                opt.zero_grad(set_to_none=True)
                losses.append(float(out.loss.detach().cpu()))
                done += len(idx)
                progress.update(done, epoch + 1, losses[-1])
    model.eval()
    return losses


def predict_set(model, tokenizer, test: list[dict], ft: dict, qa: dict) -> tuple[dict, dict]:
    """Predictions (qid -> answer, "" = none) and no-answer scores of a SQuAD ``data`` list,
    computed in ``ft["dtype"]``."""
    from .qa import predict

    rows = flatten(test)
    answers, na = predict(model, tokenizer, [r["question"] for r in rows],
                          [r["context"] for r in rows], max_length=ft["max_length"],
                          stride=ft["doc_stride"], batch_size=qa["batch_size"],
                          max_answer_len=qa["max_answer_len"], null_threshold=qa["null_threshold"],
                          dtype=ft["dtype"])
    return ({r["id"]: a for r, a in zip(rows, answers)},
            {r["id"]: float(s) for r, s in zip(rows, na)})


def score(test: list[dict], preds: dict, na: dict) -> dict:
    """The official SQuAD 2.0 metric, with the counts needed to pool folds."""
    from .metric import evaluate

    r = evaluate(test, preds, na)
    return {"exact": r["exact"], "f1": r["f1"], "HasAns_exact": r.get("HasAns_exact"),
            "HasAns_f1": r.get("HasAns_f1"), "NoAns_exact": r.get("NoAns_exact"), "n": r["total"],
            "HasAns_n": r.get("HasAns_total", 0), "NoAns_n": r.get("NoAns_total", 0)}


def run_fold(model_path, dataset, fold: int, ft: dict, qa: dict,
             predictions: dict | None = None) -> list[dict]:
    """Score the un-fine-tuned model (``score_base``) and a copy fine-tuned on the other folds on
    fold ``fold``. ``dataset`` is one SQuAD ``data`` list (trained and scored: the paper's set-up)
    or a mapping set name -> ``data`` list, trained on ``ft["train_on"]`` and scored on each of
    ``ft["score_on"]``. Rows carry ``questions`` (the scored set), the official scores with
    counts, and CPU/wall seconds; ``predictions``, when given, receives
    ``{split: {set: {"preds": ..., "na_probs": ...}}}`` (to pool folds exactly). Keys missing from
    ``ft`` take the schema's defaults (``qads.finetune``)."""
    import time

    import torch

    from ..config import default
    from ..models.load import load_qa_model

    ft = {**default("qads.finetune"), **ft}
    mode = ft["questions"]
    sets = dataset if isinstance(dataset, dict) else {mode: dataset}
    train_on = ft["train_on"] or mode
    score_on = list(ft["score_on"] or [mode])
    by = ft["group_by"]
    add = ft.get("add_rewritten")
    # the folds do not depend on the added set: the plain and the QADS arm hold out the same groups
    plan = fold_plan({k: v for k, v in sets.items() if k != add or k in (train_on, *score_on)},
                     train_on, ft["folds"], ft["seed"], by)
    train_rows = [r for r in flatten(sets[train_on]) if plan[group_key(r, by)] != fold]
    if add:  # the QADS arm: the rewritten questions of the training groups added
        extra = [r for r in flatten(sets[add])
                 if group_key(r, by) in plan and plan[group_key(r, by)] != fold]
        log.info("fold %d: %d rewritten questions of %r added to the %d of %r", fold, len(extra),
                 add, len(train_rows), train_on)
        train_rows += extra
    limit = ft["train_limit"] or 0
    if 0 < limit < len(train_rows):  # a seeded sample of the training questions (CPU budgets)
        keep = sorted(random.Random(ft["seed"] + fold).sample(range(len(train_rows)), limit))
        train_rows = [train_rows[i] for i in keep]
    tests = {}
    for name in score_on:
        keep = {r["id"] for r in flatten(sets[name]) if plan[group_key(r, by)] == fold}
        tests[name] = subset(sets[name], keep)
    log.info("fold %d (grouped by %s): %d training questions of %r (%d groups); held out: %s",
             fold, by, len(train_rows), train_on, len({group_key(r, by) for r in train_rows}),
             {k: sum(len(p["qas"]) for a in v for p in a["paragraphs"]) for k, v in tests.items()})
    if by == "article":
        held = {a["title"] for v in tests.values() for a in v}
        assert not held & {r["title"] for r in train_rows}, "an article on both sides"
    cpu0, wall0 = time.process_time(), time.perf_counter()
    # a fresh QA head is initialised from the fold's seed (it was the process's RNG state before)
    model, tok = load_qa_model(model_path, device=qa["device"], dtype="float32", seed=ft["seed"] + fold)
    out = []

    def evaluate_all(split):
        for name, test in tests.items():
            t0, w0 = time.process_time(), time.perf_counter()
            preds, na = predict_set(model, tok, test, ft, qa)
            if predictions is not None:
                predictions.setdefault(split, {})[name] = {"preds": preds, "na_probs": na}
            out.append({"fold": fold, "split": split, "questions": name, **score(test, preds, na),
                        "cpu_s": time.process_time() - t0, "wall_s": time.perf_counter() - w0})

    if ft["score_base"]:
        evaluate_all("base")
    feats = prepare_features(tok, [r["question"] for r in train_rows],
                             [r["context"] for r in train_rows], [r["answers"] for r in train_rows],
                             max_length=min(ft["max_length"],
                                            getattr(model.config, "max_position_embeddings",
                                                    ft["max_length"])),
                             doc_stride=ft["doc_stride"])
    torch.manual_seed(ft["seed"] + fold)
    t0, w0 = time.process_time(), time.perf_counter()
    losses = train(model, feats, epochs=ft["epochs"], learning_rate=ft["learning_rate"],
                   batch_size=ft["batch_size"], seed=ft["seed"] + fold,
                   weight_decay=ft["weight_decay"], warmup=ft["warmup"],
                   max_grad_norm=ft["max_grad_norm"], dtype=ft["dtype"])
    train_cpu, train_wall = time.process_time() - t0, time.perf_counter() - w0
    if losses:
        log.info("fold %d: %d windows, %d steps in %.0f s wall (%.0f CPU s), loss %.4f -> %.4f",
                 fold, len(feats["start_positions"]), len(losses), train_wall, train_cpu,
                 losses[0], losses[-1])
    n_rows = len(out)
    evaluate_all("finetuned")
    for r in out[n_rows:]:
        r.update(train_windows=len(feats["start_positions"]), train_cpu_s=train_cpu,
                 train_wall_s=train_wall)
    for r in out:
        r.update(fold_cpu_s=time.process_time() - cpu0, fold_wall_s=time.perf_counter() - wall0)
    return out


def pool_predictions(fold_predictions: list[dict], split: str, name: str) -> tuple[dict, dict]:
    """Every fold's held-out answers and no-answer scores of one split and question set."""
    preds, na = {}, {}
    for fp in fold_predictions:
        got = fp.get(split, {}).get(name)
        if got:
            preds.update(got["preds"])
            na.update(got["na_probs"])
    return preds, na


def _pooled_sets(sets: dict[str, list[dict]], fold_predictions: list[dict]):
    """Per (split, set) in first-seen order: ``split, name, test, preds, na``, the held-out
    predictions of every fold together and the questions they answer."""
    splits = list(dict.fromkeys(s for fp in fold_predictions for s in fp))
    for split in splits:
        names = list(dict.fromkeys(n for fp in fold_predictions for n in fp.get(split, {})))
        for name in names:
            preds, na = pool_predictions(fold_predictions, split, name)
            yield split, name, subset(sets[name], set(preds)), preds, na


def pooled(sets: dict[str, list[dict]], fold_predictions: list[dict]) -> list[dict]:
    """One ``fold = pooled`` row per (split, set): the official metric over the held-out
    predictions of every fold together (each question is held out exactly once)."""
    return [{"fold": "pooled", "split": split, "questions": name, **score(test, preds, na)}
            for split, name, test, preds, na in _pooled_sets(sets, fold_predictions)]


def pooled_items(sets: dict[str, list[dict]], fold_predictions: list[dict]) -> list[dict]:
    """Each question's scores behind the ``pooled`` rows (:func:`pooled`): per (split, set) and
    held-out question, ``split``, ``questions``, ``id``, ``has_answer``, ``exact``, ``f1``
    (:func:`csbench.qads.metric.item_scores`)."""
    from .metric import item_scores

    return [{"split": split, "questions": name, **r}
            for split, name, test, preds, na in _pooled_sets(sets, fold_predictions)
            for r in item_scores(test, preds, na)]


def by_domain(sets: dict[str, list[dict]], fold_predictions: list[dict],
              article_domain: dict[str, str], split: str = "finetuned") -> list[dict]:
    """The pooled held-out predictions of ``split`` scored per topic domain: one row per (set,
    domain) with the official metric over the questions of the articles whose top domain it is
    (``article_domain``: title -> domain, :func:`csbench.qads.domains.top_domain_by_article`).
    Rows name the domain's articles; an article missing from ``article_domain`` is an error."""
    rows = []
    names = list(dict.fromkeys(n for fp in fold_predictions for n in fp.get(split, {})))
    for name in names:
        preds, na = pool_predictions(fold_predictions, split, name)
        articles: dict[str, list[str]] = {}
        for article in sets[name]:
            if any(q["id"] in preds for p in article["paragraphs"] for q in p["qas"]):
                if article["title"] not in article_domain:
                    raise KeyError(f"article {article['title']!r} has no row in the domains table")
                articles.setdefault(article_domain[article["title"]], []).append(article["title"])
        for domain in sorted(articles):
            titles = set(articles[domain])
            test = subset([a for a in sets[name] if a["title"] in titles], set(preds))
            ids = {q["id"] for a in test for p in a["paragraphs"] for q in p["qas"]}
            rows.append({"split": split, "questions": name, "domain": domain,
                         "articles": len(titles), "titles": ", ".join(sorted(titles)),
                         **score(test, {i: preds[i] for i in ids}, {i: na[i] for i in ids})})
    return rows


def with_means(rows: list[dict]) -> list[dict]:
    """Append one ``fold = mean`` row per split (and scored set, where rows name one): the
    unweighted mean over folds; counts and times summed."""
    import pandas as pd

    df = pd.DataFrame(rows)
    keys = ["split"] + (["questions"] if "questions" in df else [])
    means = []
    for key, g in df.groupby(keys, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        m = {"fold": "mean", **dict(zip(keys, key))}
        for c in SCORE_COLUMNS + [c for c in COUNT_COLUMNS if c in g and c != "n"]:
            m[c] = int(g[c].sum()) if c in COUNT_COLUMNS else g[c].astype(float).mean()
        for c in g.columns:
            if (c.endswith("_s") or c == "train_windows") and g[c].notna().any():
                m[c] = float(g[c].sum()) if c.endswith("_s") else int(g[c].sum())
        means.append(m)
    return rows + means
