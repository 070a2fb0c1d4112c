"""QADS: synonym-substituted SQuAD 2.0 questions chosen by word-sense disambiguation.

Modules: :mod:`.candidates` (spaCy candidate tokens), :mod:`.wsd` (first sense, simplified and
enhanced Lesk), :mod:`.wsd_eval` (scoring on the unified WSD framework), :mod:`.generate`
(synonyms, inflection, SQuAD JSON output), :mod:`.domains`, :mod:`.qa` (extractive QA inference)
and :mod:`.metric` (the official SQuAD 2.0 evaluation, reimplemented).
"""
