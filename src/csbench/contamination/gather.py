"""Gather shard results into one row per (item, method), and summarise."""
from __future__ import annotations

import numpy as np
import pandas as pd

# A scan shard's rows (scan.py and semantic.py write them; defined here, where they are read,
# so that gathering does not import the scan kernels)
SHARD_COLUMNS = ["benchmark", "item_id", "probe", "method", "positions", "n_positions", "span",
                 "count", "score", "doc_id", "offset", "text"]
ITEM_COLUMNS = ["item_id", "method", "contaminated", "fraction", "longest_span", "count",
                "doc_id", "offset", "evidence"]


def gather(probes: pd.DataFrame, shards: list[pd.DataFrame], benchmark: str, methods,
           ngram_threshold: float = 0.0, semantic_threshold: float = 0.9) -> pd.DataFrame:
    """Per item and method: contaminated, fraction, longest span, hit count and evidence.

    * exact: fraction 1 when a full probe (or the parts rule) matched;
    * ngram: per probe, the share of its n-grams found anywhere in the corpus (union over
      shards); the item's fraction is the largest over its probes; contaminated when the
      fraction exceeds ``ngram_threshold`` (default 0: any n-gram);
    * semantic: fraction is the best cosine; contaminated when it reaches ``semantic_threshold``.
    """
    items = list(dict.fromkeys(probes.loc[probes["benchmark"] == benchmark, "item_id"].astype(str)))
    frames = [s for s in shards if len(s)]
    hits = (pd.concat(frames, ignore_index=True) if frames
            else pd.DataFrame(columns=SHARD_COLUMNS))
    hits = hits[hits["benchmark"] == benchmark]
    rows = []
    for method in methods:
        h = hits[hits["method"] == method]
        by_item = {k: g for k, g in h.groupby("item_id", sort=False)} if len(h) else {}
        for item in items:
            g = by_item.get(item)
            row = dict(item_id=item, method=method, contaminated=False, fraction=0.0,
                       longest_span=0, count=0, doc_id=None, offset=None, evidence=None)
            if g is not None and len(g):
                row["count"] = int(g["count"].sum())
                if method == "ngram":
                    frac = {}
                    for probe, gp in g.groupby("probe"):
                        found = set()
                        for pos in gp["positions"]:
                            found.update(int(x) for x in pos)
                        frac[probe] = len(found) / int(gp["n_positions"].iloc[0])
                    row["fraction"] = max(frac.values())
                    best = g.loc[g["span"].astype(int).idxmax()]
                    row["longest_span"] = int(best["span"])
                    row["contaminated"] = row["fraction"] > ngram_threshold
                elif method == "exact":
                    best = g.iloc[0]
                    row["fraction"] = 1.0
                    row["longest_span"] = int(g["span"].max())
                    row["contaminated"] = True
                else:
                    best = g.loc[g["score"].astype(float).idxmax()]
                    row["fraction"] = float(best["score"])
                    row["contaminated"] = row["fraction"] >= semantic_threshold
                row.update(doc_id=str(best["doc_id"]), offset=int(best["offset"]),
                           evidence=str(best["text"]))
            rows.append(row)
    out = pd.DataFrame(rows, columns=ITEM_COLUMNS)
    out["offset"] = out["offset"].astype("Int64")
    return out


def summary(tables: dict[tuple[str, str], pd.DataFrame]) -> pd.DataFrame:
    """Rows (benchmark, corpus, method, items, contaminated, rate)."""
    rows = []
    for (bench, corpus), df in sorted(tables.items()):
        for method, g in df.groupby("method", sort=False):
            n, c = len(g), int(g["contaminated"].sum())
            rows.append(dict(benchmark=bench, corpus=corpus, method=method, items=n,
                             contaminated=c, rate=c / n if n else np.nan))
    return pd.DataFrame(rows, columns=["benchmark", "corpus", "method", "items", "contaminated",
                                       "rate"])
