"""Yes/no scoring: next-token log-likelihoods of " yes" and " no" (through :mod:`csbench.lm`),
metrics (binary F1 with yes positive, accuracy, mean NLL of the gold answer after renormalising
the two probabilities) and the topic-frequency proxy (summed token cross-entropy of the topic)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from .prompts import ANSWERS, VARIANTS, build_prompts


def score_items(loglikelihood, test: pd.DataFrame, train: pd.DataFrame, variants=VARIANTS,
                seed: int = 0) -> pd.DataFrame:
    """One row per (variant, item): logprobs of yes/no, renormalised p(yes), prediction, NLL.

    ``loglikelihood([(context, continuation), ...]) -> [(logprob, n_tokens), ...]``.
    """
    frames = []
    for variant in variants:
        prompts = build_prompts(test, train, variant, seed)
        reqs = [(p, a) for p in prompts for a in ANSWERS]
        res = loglikelihood(reqs)
        lp = np.array([r[0] for r in res], dtype=np.float64).reshape(-1, 2)
        frames.append(item_frame(test, variant, lp[:, 0], lp[:, 1]))
    return pd.concat(frames, ignore_index=True)


def item_frame(test: pd.DataFrame, variant: str, lp_yes, lp_no) -> pd.DataFrame:
    lp_yes, lp_no = np.asarray(lp_yes, float), np.asarray(lp_no, float)
    m = np.maximum(lp_yes, lp_no)
    log_z = m + np.log(np.exp(lp_yes - m) + np.exp(lp_no - m))
    gold_yes = (test["label"].to_numpy() == "yes")
    nll = -np.where(gold_yes, lp_yes - log_z, lp_no - log_z)
    return pd.DataFrame({
        "variant": variant, "id": test["id"].to_numpy(), "subject": test["subject"].to_numpy(),
        "label": test["label"].to_numpy(), "logprob_yes": lp_yes, "logprob_no": lp_no,
        "p_yes": np.exp(lp_yes - log_z), "pred": np.where(lp_yes > lp_no, "yes", "no"), "nll": nll,
    })


def metrics(items: pd.DataFrame) -> pd.DataFrame:
    """Per variant: n, binary F1 (positive class yes), accuracy, mean NLL, % predicted yes."""
    rows = []
    for variant, g in items.groupby("variant", sort=False):
        gold, pred = g["label"] == "yes", g["pred"] == "yes"
        tp, fp, fn = int((gold & pred).sum()), int((~gold & pred).sum()), int((gold & ~pred).sum())
        f1 = 2 * tp / (2 * tp + fp + fn) if (2 * tp + fp + fn) else 0.0
        rows.append({"variant": variant, "n": len(g), "f1": f1,
                     "accuracy": float((gold == pred).mean()), "nll": float(g["nll"].mean()),
                     "pct_pred_yes": float(100 * pred.mean())})
    return pd.DataFrame(rows)


def topic_frequency(loglikelihood, topics) -> pd.DataFrame:
    """Summed token cross-entropy (nats) of each distinct topic under a reference LM: a proxy of
    its (inverse) frequency; scored as the continuation " <topic>" of an empty context."""
    uniq = list(dict.fromkeys(str(t) for t in topics))
    res = loglikelihood([("", " " + t) for t in uniq])
    return pd.DataFrame({"subject": uniq, "topic_xent": [-r[0] for r in res],
                         "topic_tokens": [r[1] for r in res]})


def nll_by_quartile(items: pd.DataFrame, freq: pd.DataFrame) -> pd.DataFrame:
    """Attach the topic's cross-entropy quartile (Q1 = most frequent topics) to every item."""
    f = freq.drop_duplicates("subject").copy()
    n_q = min(4, f["topic_xent"].nunique())
    if n_q >= 2:
        f["quartile"] = pd.qcut(f["topic_xent"].rank(method="first"), n_q,
                                labels=[f"Q{i + 1}" for i in range(n_q)]).astype(str)
    else:
        f["quartile"] = "Q1"
    return items.merge(f[["subject", "topic_xent", "quartile"]], on="subject", how="left")


def plot_nll_by_quartile(per_model: dict[str, pd.DataFrame], path, variant: str = "zero_shot") -> None:
    """Box plot of per-item NLL per topic-frequency quartile, one group per model."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..io import atomic_path

    models = sorted(per_model)
    quartiles = sorted({q for df in per_model.values() for q in df["quartile"].dropna().unique()})
    fig, ax = plt.subplots(figsize=(max(5, 2.2 * len(models)), 4))
    pos, data, labels = [], [], []
    for mi, m in enumerate(models):
        df = per_model[m]
        # a fine-tuned model has no prompted variant: its own prompt stands in for it
        shown = variant if (df["variant"] == variant).any() else variant.replace(
            variant.removesuffix("_no_topic"), "fine_tuned")
        df = df[df["variant"] == shown]
        for qi, q in enumerate(quartiles):
            pos.append(mi * (len(quartiles) + 1) + qi)
            data.append(df.loc[df["quartile"] == q, "nll"].to_numpy())
            labels.append(f"{m}\n{q}")
    if data:
        ax.boxplot(data, positions=pos, widths=0.7)
        ax.set_xticks(pos)
        ax.set_xticklabels(labels, fontsize=7)
    ax.set_ylabel(f"NLL of gold answer ({variant})")
    ax.set_title("NLL by topic-frequency quartile\n(Q1 = lowest topic cross-entropy = most frequent topics)",
                 fontsize=9)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=120)
    plt.close(fig)
