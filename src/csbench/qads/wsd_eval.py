"""Score WSD methods on the unified evaluation framework (precision, recall, F1 as fractions)."""
from __future__ import annotations

import pandas as pd

from .wsd import UPOS_TO_WN, Disambiguator, Target, lemma_in


def targets(df: pd.DataFrame, window: int = 0) -> list[Target]:
    """One :class:`Target` per instance; context = its sentence (``window`` > 0 adds neighbours)."""
    sents = {}
    if window:
        order = list(dict.fromkeys(df["sentence_id"]))
        text = {r.sentence_id: " ".join(r.tokens) for r in df.itertuples()}
        for i, sid in enumerate(order):
            sents[sid] = " ".join(text[s] for s in order[max(0, i - window): i + window + 1])
    out = []
    for r in df.itertuples():
        ctx = sents.get(r.sentence_id) or " ".join(r.tokens)
        out.append(Target(r.lemma, UPOS_TO_WN.get(r.pos, "n"), ctx, r.word))
    return out


def predict_keys(df: pd.DataFrame, wsd: Disambiguator, window: int = 0) -> list[str | None]:
    """Predicted WordNet sense key per instance (None when the lemma has no synset)."""
    keys = []
    for r, c in zip(df.itertuples(), wsd.disambiguate(targets(df, window))):
        lem = lemma_in(c.synset, r.lemma) if c.synset is not None else None
        if lem is None and c.synset is not None:
            lem = c.synset.lemmas()[0]
        keys.append(lem.key() if lem is not None else None)
    return keys


def score(df: pd.DataFrame, keys: list[str | None]) -> dict:
    """Framework scoring: a prediction is right when it is one of the gold keys."""
    attempted = sum(k is not None for k in keys)
    correct = sum(k is not None and k in set(g) for k, g in zip(keys, df["gold"]))
    p = correct / attempted if attempted else 0.0
    r = correct / len(df) if len(df) else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return {"precision": p, "recall": r, "f1": f, "n": len(df), "attempted": attempted,
            "correct": correct}


def evaluate(tables: dict[str, pd.DataFrame], methods: dict[str, Disambiguator],
             window: int = 0) -> pd.DataFrame:
    """Rows (method, dataset, precision, recall, f1, n). ``ALL`` is predicted once and each data
    set is scored from its slice of ALL when ALL is present (same predictions, fewer calls)."""
    rows = []
    for mname, wsd in methods.items():
        cache = {}
        if "ALL" in tables:
            all_df = tables["ALL"]
            cache = dict(zip(all_df["id"], predict_keys(all_df, wsd, window)))
        for dname, df in tables.items():
            if dname != "ALL" and cache:
                keys = [cache.get(f"{dname}.{i}") for i in df["id"]]
                if any(k is None and f"{dname}.{i}" not in cache for k, i in zip(keys, df["id"])):
                    keys = predict_keys(df, wsd, window)
            else:
                keys = cache and [cache[i] for i in df["id"]] or predict_keys(df, wsd, window)
            rows.append({"method": mname, "dataset": dname, **score(df, keys)})
    return pd.DataFrame(rows, columns=["method", "dataset", "precision", "recall", "f1", "n",
                                       "attempted", "correct"])
