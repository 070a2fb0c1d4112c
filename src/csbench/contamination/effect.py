"""Does contamination help? Accuracy on contaminated vs clean items, one-sided Mann-Whitney U.

Per-item results come from the WinoWhat task (``results/winowhat/<model>/items.parquet`` with
``item_id, dataset, variant, correct``); contamination flags from this task's items tables. The
test asks whether per-item correctness (0/1) is stochastically larger on contaminated items
(alternative ``greater``), as in the WinoWhat paper.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import InputError

EFFECT_COLUMNS = ["model", "dataset", "variant", "benchmark", "corpus", "method", "n_contaminated",
                  "n_clean", "acc_contaminated", "acc_clean", "difference", "u", "p_value"]


def effect(model: str, results: pd.DataFrame, flags: pd.DataFrame, benchmark: str, corpus: str,
           path=None) -> pd.DataFrame:
    """One row per (dataset, variant, method) of ``results`` joined with ``flags`` on item id.

    The join key is ``orig_id`` when the results have it (WinoWhat rows and paraphrases carry the
    WinoGrande dev qID there, so a paraphrase inherits its original's contamination), else
    ``item_id``.
    """
    from scipy.stats import mannwhitneyu  # not at import: the Snakefile loads this module
    need = ["item_id", "dataset", "variant", "correct"]
    missing = [c for c in need if c not in results.columns]
    if missing:
        raise InputError(path or model, f"per-item results lack column(s) {', '.join(missing)}")
    res = results[need].copy()
    key = results["orig_id"] if "orig_id" in results.columns else results["item_id"]
    res["item_id"] = key.where(key.notna(), results["item_id"]).astype(str)
    res = res[res["correct"].notna()]
    rows = []
    for method, fl in flags.groupby("method", sort=False):
        fl = fl[["item_id", "contaminated"]].astype({"item_id": str})
        joined = res.merge(fl, on="item_id", how="inner")
        for (dataset, variant), g in joined.groupby(["dataset", "variant"], sort=True):
            x = g.loc[g["contaminated"].astype(bool), "correct"].astype(float).to_numpy()
            y = g.loc[~g["contaminated"].astype(bool), "correct"].astype(float).to_numpy()
            u = p = np.nan
            if len(x) and len(y):
                r = mannwhitneyu(x, y, alternative="greater")
                u, p = float(r.statistic), float(r.pvalue)
            ax = float(x.mean()) if len(x) else np.nan
            ay = float(y.mean()) if len(y) else np.nan
            rows.append(dict(model=model, dataset=dataset, variant=variant, benchmark=benchmark,
                             corpus=corpus, method=method, n_contaminated=len(x), n_clean=len(y),
                             acc_contaminated=ax, acc_clean=ay, difference=ax - ay, u=u,
                             p_value=p))
    return pd.DataFrame(rows, columns=EFFECT_COLUMNS)
