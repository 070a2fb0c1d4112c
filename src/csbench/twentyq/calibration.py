"""Yes/no metrics that do not depend on which way a model leans (docs/twentyq.md).

The paper's prediction is the larger of p(" yes") and p(" no"): a threshold of 0 on the log-odds
``s = log p(yes) - log p(no)``. A model that prefers one answer whatever the question (SmolLM2
zero-shot answers no to almost everything) then sits at chance accuracy however well ``s``
orders true statements above false ones. Beside the paper's metrics this module gives

* **AUROC** of ``s`` against the gold label: the probability that a random yes item has a
  higher ``s`` than a random no item, ties counted half. It is the same for any monotone
  transform of ``s`` (the renormalised p(yes) included); ``s`` is used because p(yes) rounds
  to exactly 0 or 1 in float64 for large |s| and would create ties that ``s`` does not have.
* **Cross-fitted accuracy and F1**: the items are split into ``k`` seeded folds, stratified by
  the gold label; each fold is predicted with the threshold on ``s`` that maximises accuracy on
  the other ``k - 1`` folds, so no item's own label chooses the threshold that predicts it.
  Candidate thresholds are 0 (the paper's rule), the midpoints between consecutive distinct
  training values of ``s``, and -inf / +inf (all yes / all no); among those with the highest
  training accuracy, the one nearest 0 wins (the lower of two equally near), so the paper's
  rule is kept wherever it is already optimal.
* Percentile **bootstrap intervals** (:mod:`csbench.bootstrap`, the conventions of the WinoWhat
  intervals) over items: AUROC recomputed on each resample, and the accuracy and F1 of the fixed
  cross-fitted predictions (the thresholds are not refitted per resample, so the interval
  leaves out the threshold's own variance). Resamples with one class only (AUROC undefined)
  are left out of the AUROC interval.
* **Paired differences** of the paper's F1 (``paired_*`` columns, :func:`paired_f1`): a row
  without the topic against the same model's row with it, and a fine-tuned model's row against
  its base model's better prompted row (zero- or few-shot, by F1), on the items both scored,
  resampled together, so what the two rows share (an item's difficulty) leaves the interval.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..bootstrap import auroc, counts, interval, resamples
from ..findings import base_model
from ..provenance import PROVENANCE_COLUMNS

COLUMNS = ["variant", "auroc", "auroc_ci_low", "auroc_ci_high", "cal_accuracy", "cal_accuracy_ci_low",
           "cal_accuracy_ci_high", "cal_f1", "cal_f1_ci_low", "cal_f1_ci_high", "cal_pct_pred_yes",
           "cal_threshold_median", "cal_folds", "ci_level", "f1_ci_low", "f1_ci_high", "accuracy_ci_low",
           "accuracy_ci_high", "gold_yes_share"]
PAIRED = ["paired_ref", "paired_n", "paired_f1_diff", "paired_f1_ci_low", "paired_f1_ci_high"]
PROMPTED = ("zero_shot", "few_shot")


def best_prompted(f1: dict[str, float]) -> str | None:
    """The prompted variant a fine-tuned row is compared with (``variant -> F1`` of its base
    model): the better of zero- and few-shot, zero-shot on a tie; None without either. The
    metrics table's ``paired_*`` columns and the report's finding both choose by this."""
    have = [v for v in PROMPTED if v in f1]
    return max(have, key=lambda v: f1[v]) if have else None


def log_odds(items: pd.DataFrame) -> np.ndarray:
    """``logprob_yes - logprob_no`` per item; an item without a finite one is an error."""
    s = items["logprob_yes"].to_numpy(float) - items["logprob_no"].to_numpy(float)
    bad = ~np.isfinite(s)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"item {items['id'].iloc[i]!r}: log p(yes) - log p(no) is not finite "
                         f"({items['logprob_yes'].iloc[i]} - {items['logprob_no'].iloc[i]}); "
                         f"{int(bad.sum())} such item(s)")
    return s


def gold_yes(items: pd.DataFrame) -> np.ndarray:
    label = items["label"]
    bad = ~label.isin(["yes", "no"])
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raise ValueError(f"item {items['id'].iloc[i]!r}: label {label.iloc[i]!r} is not yes or no")
    return (label == "yes").to_numpy()


def stratified_folds(gold, k: int, seed: int) -> np.ndarray:
    """Fold (0..k-1) of each item: each class shuffled with ``seed`` and dealt round the folds,
    the second class starting where the first stopped, so fold sizes differ by at most one."""
    g = np.asarray(gold, bool)
    rng = np.random.default_rng(seed)
    fold = np.empty(len(g), dtype=int)
    start = 0
    for cls in (False, True):
        idx = rng.permutation(np.flatnonzero(g == cls))
        fold[idx] = (start + np.arange(len(idx))) % k
        start = (start + len(idx)) % k
    return fold


def best_threshold(scores, gold) -> float:
    """The threshold ``t`` (predict yes iff score > t) with the highest accuracy on (scores, gold),
    from 0, the midpoints of consecutive distinct scores and -inf/+inf; ties: nearest 0, then lower."""
    s, g = np.asarray(scores, float), np.asarray(gold, bool)
    u = np.unique(s)
    cands = np.concatenate([[0.0, -np.inf, np.inf], (u[:-1] + u[1:]) / 2])
    order = np.argsort(s, kind="stable")
    neg_cum = np.concatenate([[0], np.cumsum(~g[order])])  # negatives among the m lowest scores
    pos_cum = np.concatenate([[0], np.cumsum(g[order])])
    m = np.searchsorted(s[order], cands, side="right")  # items with score <= t (predicted no)
    correct = neg_cum[m] + (pos_cum[-1] - pos_cum[m])
    best = np.flatnonzero(correct == correct.max())
    return float(min(cands[best], key=lambda t: (abs(t), t)))


def cross_fitted(scores, gold, fold) -> tuple[np.ndarray, np.ndarray]:
    """Yes-predictions of each item from the threshold fitted on the items of the other folds;
    and the threshold of each fold (NaN for an empty fold)."""
    s, g, f = np.asarray(scores, float), np.asarray(gold, bool), np.asarray(fold)
    pred = np.zeros(len(s), dtype=bool)
    k = int(f.max()) + 1 if len(f) else 0
    thresholds = np.full(k, np.nan)
    for j in range(k):
        held = f == j
        if held.any():
            thresholds[j] = best_threshold(s[~held], g[~held])
            pred[held] = s[held] > thresholds[j]
    return pred, thresholds


def _acc_f1(gold, pred, w) -> tuple[np.ndarray, np.ndarray]:
    """Weighted accuracy and binary F1 (yes positive; 0 when undefined, as the paper's metrics)."""
    tp, fp, fn = w @ (gold & pred), w @ (~gold & pred), w @ (gold & ~pred)
    acc = (w @ (gold == pred)) / w.sum(axis=1)
    d = 2 * tp + fp + fn
    return acc, np.where(d > 0, 2 * tp / np.where(d > 0, d, 1), 0.0)


def variant_metrics(scores, gold, folds: int = 5, seed: int = 0, n_boot: int = 10000,
                    boot_seed: int = 0, level: float = 0.95, paper_pred=None) -> dict:
    """AUROC and cross-fitted accuracy/F1 with percentile bootstrap intervals, for one variant;
    the same intervals for the paper's accuracy and F1 (its predictions ``paper_pred``, yes =
    True; none given: the log-odds above 0), and the share of gold yes (the trivial baselines)."""
    s, g = np.asarray(scores, float), np.asarray(gold, bool)
    nan = float("nan")
    if len(s) < 2:
        return {**dict.fromkeys(COLUMNS[1:], nan), "cal_folds": folds, "ci_level": level,
                "gold_yes_share": float(g.mean()) if len(g) else nan}
    paper = np.asarray(s > 0 if paper_pred is None else paper_pred, bool)
    pred, thr = cross_fitted(s, g, stratified_folds(g, folds, seed))
    ones = np.ones((1, len(s)))
    acc, f1 = (float(v[0]) for v in _acc_f1(g, pred, ones))
    boot = {"auroc": [], "acc": [], "f1": [], "paper_acc": [], "paper_f1": []}
    for idx in resamples(len(s), n_boot, boot_seed):
        w = counts(idx, len(s)).astype(float)
        boot["auroc"].append(auroc(s, g, w))
        a, f = _acc_f1(g, pred, w)
        boot["acc"].append(a)
        boot["f1"].append(f)
        a, f = _acc_f1(g, paper, w)
        boot["paper_acc"].append(a)
        boot["paper_f1"].append(f)
    ci = {k: interval(np.concatenate(v), level) for k, v in boot.items()}
    return {"auroc": auroc(s, g), "auroc_ci_low": ci["auroc"][0], "auroc_ci_high": ci["auroc"][1],
            "cal_accuracy": acc, "cal_accuracy_ci_low": ci["acc"][0], "cal_accuracy_ci_high": ci["acc"][1],
            "cal_f1": f1, "cal_f1_ci_low": ci["f1"][0], "cal_f1_ci_high": ci["f1"][1],
            "cal_pct_pred_yes": float(100 * pred.mean()),
            "cal_threshold_median": float(np.nanmedian(thr)), "cal_folds": folds, "ci_level": level,
            "f1_ci_low": ci["paper_f1"][0], "f1_ci_high": ci["paper_f1"][1],
            "accuracy_ci_low": ci["paper_acc"][0], "accuracy_ci_high": ci["paper_acc"][1],
            "gold_yes_share": float(g.mean())}


def _paper_pred(g: pd.DataFrame) -> np.ndarray:
    """The paper's predictions of scored items (yes = True): the ``pred`` column, else the
    log-odds above 0 (the larger of p(yes) and p(no))."""
    return ((g["pred"] == "yes").to_numpy() if "pred" in g else log_odds(g) > 0).astype(bool)


def calibrated_metrics(items: pd.DataFrame, calibration: dict, bootstrap: dict) -> pd.DataFrame:
    """Per variant of one model's scored items (``score_items``): the columns of ``COLUMNS``.
    ``calibration``: ``{folds, seed}``; ``bootstrap``: ``{n, seed, level}`` (twentyq.scoring)."""
    rows = []
    for variant, g in items.groupby("variant", sort=False):
        m = variant_metrics(log_odds(g), gold_yes(g), calibration["folds"], calibration["seed"],
                            bootstrap["n"], bootstrap["seed"], bootstrap["level"],
                            paper_pred=_paper_pred(g))
        rows.append({"variant": variant, **m})
    return pd.DataFrame(rows, columns=COLUMNS)


def with_calibrated(table: pd.DataFrame, items: dict[str, pd.DataFrame], calibration: dict,
                    bootstrap: dict) -> pd.DataFrame:
    """The models' metrics table (``model``, ``variant``, the paper's metrics, provenance) with the
    calibrated columns of each model's scored items inserted after the paper's metrics."""
    cal = pd.concat([calibrated_metrics(df, calibration, bootstrap).assign(model=m)
                     for m, df in items.items()], ignore_index=True)
    out = table.merge(cal, on=["model", "variant"], how="left", validate="one_to_one", indicator=True)
    missing = out.loc[out["_merge"] != "both", ["model", "variant"]]
    if len(missing):
        raise ValueError(f"no scored items for {missing.to_dict('records')[:3]}")
    out = with_paired(out.drop(columns="_merge"), items, bootstrap)
    tail = [c for c in out.columns if c in PROVENANCE_COLUMNS]
    return out[[c for c in out.columns if c not in tail] + tail]


def paired_f1(a: pd.DataFrame, b: pd.DataFrame, bootstrap: dict) -> dict:
    """The paper's F1 of scored items ``a`` minus that of ``b`` (one variant each) on the items
    both scored (by ``id``), with a percentile interval from resampling those items together."""
    ids = a["id"].astype(str)
    both = pd.Index(ids).intersection(pd.Index(b["id"].astype(str)), sort=False)
    a = a.assign(_k=ids.to_numpy()).set_index("_k").loc[both]
    b = b.assign(_k=b["id"].astype(str).to_numpy()).set_index("_k").loc[both]
    g, pa, pb = gold_yes(a), _paper_pred(a), _paper_pred(b)
    nan = float("nan")
    if len(both) < 2:
        return {"paired_n": len(both), "paired_f1_diff": nan, "paired_f1_ci_low": nan,
                "paired_f1_ci_high": nan}
    ones = np.ones((1, len(g)))
    diff = float(_acc_f1(g, pa, ones)[1][0] - _acc_f1(g, pb, ones)[1][0])
    draws = [(_acc_f1(g, pa, w)[1] - _acc_f1(g, pb, w)[1])
             for w in (counts(i, len(g)).astype(float)
                       for i in resamples(len(g), bootstrap["n"], bootstrap["seed"]))]
    lo, hi = interval(np.concatenate(draws), bootstrap["level"])
    return {"paired_n": len(both), "paired_f1_diff": diff, "paired_f1_ci_low": lo,
            "paired_f1_ci_high": hi}


def with_paired(table: pd.DataFrame, items: dict[str, pd.DataFrame], bootstrap: dict) -> pd.DataFrame:
    """The ``paired_*`` columns (module docstring): ``paired_ref`` names the row compared with,
    as ``<model>/<variant>``; empty where a row has none."""
    f1 = {(m, v): f for m, v, f in zip(table["model"], table["variant"], table["f1"])}
    source = dict(zip(table["model"], table["model_source"])) if "model_source" in table else {}
    rows = []
    for model, variant in zip(table["model"], table["variant"]):
        ref = None
        if variant.endswith("_no_topic"):
            ref = (model, variant.removesuffix("_no_topic"))
        elif variant.startswith("fine_tuned"):
            base = base_model(model, source.get(model))
            best = best_prompted({v: f for (m, v), f in f1.items() if m == base != model})
            ref = (base, best) if best else None
        if ref is None or ref not in f1:
            rows.append({"paired_ref": ""})
            continue
        a, b = items[model], items[ref[0]]
        rows.append({"paired_ref": f"{ref[0]}/{ref[1]}",
                     **paired_f1(a[a["variant"] == variant], b[b["variant"] == ref[1]], bootstrap)})
    return pd.concat([table.reset_index(drop=True), pd.DataFrame(rows, columns=PAIRED)], axis=1)

