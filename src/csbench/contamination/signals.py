"""Model-based membership signals per benchmark item: loss, zlib, Min-K% Prob, Min-K%++.

The text of an item is its sentence with the correct option in place of ``_`` (WinoGrande,
a WinoWhat paraphrase, WSC); an item without a public label (WinoGrande test) gets option 1,
and so does every original besides (:func:`item_texts`; ``option`` says which). Each text is one sequence after the model's start token,
every token scored (:meth:`csbench.lm.base.Scorer.token_stats`, as lm-evaluation-harness's
``loglikelihood_rolling``). With ``lp_t`` the n token log-probs:

* ``loss = -mean(lp_t)`` (nats per token);
* ``zlib = loss / len(zlib.compress(text as UTF-8))`` (as the Min-K%++ authors' code);
* ``mink`` = mean of the lowest ``max(1, floor(k n))`` values of ``lp_t``;
* ``minkpp`` = the same over ``(lp_t - mu_t) / sigma_t`` (full-vocabulary mean and deviation
  of the log-probs at t, fp32).

Higher ``mink``/``minkpp`` and lower ``loss``/``zlib`` are the membership direction
(:data:`MEMBER_SIGN`).
"""
from __future__ import annotations

import math
import zlib as _zlib

import numpy as np
import pandas as pd

from ..errors import InputError

SIGNALS = ["loss", "zlib", "mink", "minkpp"]
# sign turning a signal into a membership score (higher = more member-like)
MEMBER_SIGN = {"loss": -1.0, "zlib": -1.0, "mink": 1.0, "minkpp": 1.0}
TEXT_COLUMNS = ["item_id", "orig_id", "dataset", "variant", "label", "option", "text"]
COLUMNS = [*TEXT_COLUMNS, "n_tokens", *SIGNALS, "k"]
VARIANTS = {"orig": "orig", "transf": "paraphrase"}  # WinoWhat item table -> signals table


def lowest_mean(values, k: float) -> float:
    """Mean of the lowest ``max(1, floor(k * n))`` values."""
    v = np.sort(np.asarray(values, dtype=float))
    m = max(1, int(math.floor(k * len(v))))
    return float(v[:m].mean())


def signals(text: str, lp, mu=None, sigma=None, k: float = 0.2) -> dict:
    """The four signals of one text from its per-token statistics (``minkpp`` NaN without
    ``mu``/``sigma``; a position with ``sigma`` 0 counts as ``(lp - mu) / 1e-12``)."""
    lp = np.asarray(lp, dtype=float)
    loss = float(-lp.mean())
    out = {"n_tokens": len(lp), "loss": loss,
           "zlib": loss / len(_zlib.compress(text.encode("utf-8"))),
           "mink": lowest_mean(lp, k), "minkpp": float("nan")}
    if mu is not None and sigma is not None:
        z = (lp - np.asarray(mu, float)) / np.maximum(np.asarray(sigma, float), 1e-12)
        out["minkpp"] = lowest_mean(z, k)
    return out


def fill(sentence: str, option: str, where=None) -> str:
    """The sentence with ``option`` in place of its one ``_``."""
    if sentence.count("_") != 1:
        raise InputError(where or "items", f"sentence {sentence!r} has "
                         f"{sentence.count('_')} blanks ('_'); expected one")
    return sentence.replace("_", option)


def item_texts(items: pd.DataFrame, where=None) -> pd.DataFrame:
    """The texts of the WinoWhat item table (``results/winowhat/items.parquet``): per row its
    sentence with the answer in the blank (``option`` = ``label``), and for an original whose
    answer is option 2 also with option 1, so that every original has an option-1 text, the
    only one an unlabelled item (WinoGrande test) has: dev against test compares texts filled
    by the same rule. Columns ``item_id, orig_id, dataset, variant`` (orig / paraphrase),
    ``label`` (NA: none public), ``option``, ``text``."""
    rows = []
    for r in items.itertuples(index=False):
        label = int(r.label) if pd.notna(r.label) else None
        variant = VARIANTS.get(r.variant, r.variant)
        options = [label or 1] + ([1] if label == 2 and variant == "orig" else [])
        for option in options:
            rows.append({"item_id": r.item_id, "orig_id": r.orig_id, "dataset": r.dataset,
                         "variant": variant, "label": label, "option": option,
                         "text": fill(r.sentence, r.option1 if option == 1 else r.option2,
                                      where)})
    out = pd.DataFrame(rows, columns=TEXT_COLUMNS)
    out["label"] = out["label"].astype("Int8")
    return out


def signals_table(texts: pd.DataFrame, scorer, k: float = 0.2,
                  minkpp: bool = True) -> pd.DataFrame:
    """:data:`COLUMNS` for ``texts`` (:func:`item_texts`) from one pass per distinct text
    through the scorer (cached). ``minkpp`` needs the full-vocabulary distribution at every
    position, which a served model does not return: refused there, naming the setting
    (``minkpp=False``: the column is NaN)."""
    from ..errors import CsbenchError

    if minkpp and scorer.backend == "served":
        raise CsbenchError(
            f"{scorer.describe()}: Min-K%++ needs the full-vocabulary distribution at every "
            "position, which a served /completions endpoint does not return (only the echoed "
            "tokens' log-probs); set contamination.signals.minkpp: false to compute loss, zlib "
            "and mink for this model")
    keys = [f"{d}/{v}/{i}" for d, v, i in zip(texts["dataset"], texts["variant"],
                                               texts["item_id"])]
    stats = scorer.token_stats(list(texts["text"]), keys=keys, full_vocab=minkpp)
    sig = [signals(t, s.lp, s.mu, s.sigma, k) for t, s in zip(texts["text"], stats)]
    out = pd.concat([texts.reset_index(drop=True), pd.DataFrame(sig)], axis=1)
    out["k"] = float(k)
    return out[COLUMNS]
