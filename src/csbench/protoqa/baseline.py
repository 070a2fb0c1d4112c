"""The ProtoQA paper's generation baseline: question -> completion prompt -> ranked answer list.

Prompt rules (applied to the question, case-insensitively, wherever the phrase starts a clause):
"name something ..." / "tell me something ..." -> "one thing ... is"; "name a/an X ..." -> "one X
... is"; "how can you tell ..." -> "one way to tell ... is"; "give me a/an X ..." -> "one X ... is".
Other questions become ``"<question> One answer is"``. The trailing ``.``/``?`` is dropped and the
first letter is capitalised. Samples are cut at the first sentence end, normalised
(:func:`csbench.text.fold`), counted, and the most frequent become the ranked list.
"""
from __future__ import annotations

import re
from collections import Counter

from ..text import fold

_RULES = [
    (re.compile(r"\b(?:name|tell me) something\b", re.I), "one thing"),
    (re.compile(r"\bhow can you tell\b", re.I), "one way to tell"),
    (re.compile(r"\b(?:name|give me) (?:a|an)\b", re.I), "one"),
]
SENTENCE_ENDS = (".", "!", "?", "\n")      # the sampler's stop strings (local and served)
SENTENCE_END = re.compile(r"[.!?\n]")


def question_to_prompt(question: str) -> str:
    q = question.strip().rstrip(".?! ").strip()
    for pattern, repl in _RULES:
        if pattern.search(q):
            text = pattern.sub(repl, q, count=1) + " is"
            break
    else:
        text = q + "? One answer is"
    return text[:1].upper() + text[1:]


def clean_completion(text: str) -> str:
    """Cut at the first sentence end, then normalise (lower-case, punctuation folded)."""
    m = SENTENCE_END.search(text)
    if m:
        text = text[: m.start()]
    return fold(text)


def rank_answers(samples: list[str], top: int = 20) -> list[str]:
    """Most frequent normalised non-empty completions (ties: first seen first)."""
    counts = Counter(a for a in (clean_completion(s) for s in samples) if a)
    return [a for a, _ in counts.most_common(top)]
