"""Offline WordNet 3.0 access through NLTK.

The corpus is read from ``$NLTK_DATA`` (prepared by :mod:`csbench.nltk_setup`); when the variable
is unset, the repository's ``resources/nltk_data`` is tried. Nothing is ever downloaded.
"""
from __future__ import annotations

import functools
import os
import warnings
from pathlib import Path

REPO_NLTK_DATA = Path(__file__).resolve().parents[2] / "resources" / "nltk_data"


def ensure_nltk_path() -> None:
    """Put ``$NLTK_DATA`` (or the repository's ``resources/nltk_data``) on NLTK's search path."""
    import nltk

    candidates = [p for p in os.environ.get("NLTK_DATA", "").split(os.pathsep) if p]
    candidates.append(str(REPO_NLTK_DATA))
    for p in reversed(candidates):
        if p not in nltk.data.path:
            nltk.data.path.insert(0, p)


def use_nltk_data(path: str | Path) -> None:
    """Export ``NLTK_DATA`` (absolute) so this process and every child job find WordNet. NLTK
    itself is not imported here (about 2 CPU s: it imports scipy.stats): :func:`wordnet` puts the
    path on NLTK's search path when it first loads the corpus."""
    os.environ["NLTK_DATA"] = str(Path(path).resolve())


@functools.lru_cache(maxsize=1)
def wordnet():
    """Return the loaded NLTK WordNet reader (loaded once per process).

    English only: NLTK's reader also builds, at every load, a map from WordNet 3.0 synsets to the
    loaded version's for its multilingual (OMW) functions, reading all of index.sense twice
    (about 40% of the load's CPU time; it compares the version number with the corpus name, so
    it runs even on 3.0 itself). csbench calls none of those functions, so the map is skipped;
    every synset, lemma and similarity is the same as through ``nltk.corpus.wordnet``."""
    ensure_nltk_path()
    import nltk
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    class EnglishWordNet(WordNetCorpusReader):
        def map_wn(self, version="wordnet"):
            return None

    try:
        root = nltk.data.find("corpora/wordnet")
    except LookupError as exc:  # pragma: no cover - message only
        raise LookupError(
            "WordNet not found: run `make setup` (or `python -m csbench.nltk_setup "
            "resources/nltk_data`) and set NLTK_DATA"
        ) from exc
    with warnings.catch_warnings():  # "multilingual functions are not available": none are used
        warnings.simplefilter("ignore", UserWarning)
        return EnglishWordNet(root, None)


def synsets(lemma: str, pos: str | None = None):
    """Synsets of ``lemma`` (spaces become underscores), optionally restricted to a POS."""
    return wordnet().synsets(lemma.strip().replace(" ", "_"), pos=pos)
