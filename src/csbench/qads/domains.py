"""Topic domains per SQuAD article: sample questions (seeded), collect the WordNet topic domains of
their disambiguated words (the chosen synset and its hypernym closure), rank by frequency."""
from __future__ import annotations

from collections import Counter

import pandas as pd

from ..wordnet import wordnet


def synset_domains(synset) -> list[str]:
    """Topic domains of a synset (or its name), else those of its nearest hypernyms that have any."""
    s = wordnet().synset(synset) if isinstance(synset, str) else synset
    level, seen = [s], {s}
    while level:
        doms = sorted({d.name() for x in level for d in x.topic_domains()})
        if doms:
            return doms
        level = [h for x in level for h in x.hypernyms() + x.instance_hypernyms() if h not in seen]
        seen.update(level)
    return []


def article_domains(questions: pd.DataFrame, subs: pd.DataFrame, sample: int = 100,
                    seed: int = 0, top: int = 2) -> pd.DataFrame:
    """One row per article: title, questions sampled, words with a domain, top domains + counts
    (``"law (3), art (1)"``, for reading) and ``top_domain`` (the first, or :data:`NO_DOMAIN`).

    ``subs`` is the substitutions table (its ``domains`` column holds each word's domains).
    """
    rows = []
    syn_by_q = subs.groupby("id")["domains"].apply(list).to_dict()
    for title, grp in questions.groupby("title", sort=False):
        picked = grp.sample(n=min(sample, len(grp)), random_state=seed)
        counts: Counter = Counter()
        n_words = 0
        for qid in picked["id"]:
            for doms in syn_by_q.get(qid, []):
                doms = list(doms) if doms is not None else []
                n_words += bool(doms)
                counts.update(doms)
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
        rows.append({"title": title, "questions": len(picked), "words_with_domain": n_words,
                     "domains": ", ".join(f"{d.split('.')[0]} ({c})" for d, c in ranked),
                     "top_domain": ranked[0][0].split(".")[0] if ranked else NO_DOMAIN})
    return pd.DataFrame(rows, columns=["title", "questions", "words_with_domain", "domains",
                                       "top_domain"])


NO_DOMAIN = "(no domain)"


def top_domain_by_article(domains: pd.DataFrame) -> dict[str, str]:
    """Article title -> its most frequent domain (the ``top_domain`` column of
    :func:`article_domains`; :data:`NO_DOMAIN` when none was found)."""
    if "top_domain" not in domains.columns:
        raise ValueError("the domains table has no top_domain column (written by an older csbench); "
                         "rebuild it: snakemake --forcerun qads_domains")
    return {str(t): str(d) for t, d in zip(domains["title"], domains["top_domain"])}
