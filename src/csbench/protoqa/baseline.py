"""The ProtoQA paper's generation baseline: question -> completion prompt -> ranked answer list.

Prompt rules (applied to the question, case-insensitively, wherever the phrase starts a clause):
"name something ..." / "tell me something ..." -> "one thing ... is"; "name a/an X ..." -> "one X
... is"; "how can you tell ..." -> "one way to tell ... is"; "give me a/an X ..." -> "one X ... is".
Other questions become ``"<question> One answer is"``. The trailing ``.``/``?`` is dropped and the
first letter is capitalised. Each sample's answer is counted, and the most frequent answers
become the ranked list; the recipe (:data:`RECIPES`) says where a sample stops and what its
answer is:

* ``paper`` (the paper's GPT-2 repository, iesl/ProtoQA_GPT2): a sample stops at its first ``.``
  (the only stop string); its answer is the text before it, normalised
  (:func:`csbench.text.fold`), with every word of NLTK's English stop-word list
  (:data:`csbench.text.NLTK_STOP_WORDS`) removed, so "A sword." and "sword" are one answer;
  10 new tokens and ``cut_policy`` ``drop`` unless set.
* ``raw`` (csbench's recipe before): a sample stops at its first ``.``, ``!``, ``?`` or newline; its
  answer is the normalised text before it; 20 new tokens and ``cut_policy`` ``complete_words``
  unless set.

A sample left without a word (stop words only, or nothing) gives no answer: it is not counted.

A sample that ``max_new_tokens`` ended before its recipe's stop string and the end-of-sequence
token is "cut" (the sampler says which: ``cut`` of :func:`csbench.lm.backend.sample`); its text may stop
mid-answer or mid-word ("to fill up their air fres"). The cut policy says what the ranked list
does with it (:data:`CUT_POLICIES`): ``keep`` it as it is, ``drop`` it, or keep its
``complete_words`` (its last word is dropped unless the text ends after it, at a space or a
punctuation mark, before stop words are removed; a sample left empty is dropped).
"""
from __future__ import annotations

import re
from collections import Counter

from ..text import NLTK_STOP_WORDS, fold

_RULES = [
    (re.compile(r"\b(?:name|tell me) something\b", re.I), "one thing"),
    (re.compile(r"\bhow can you tell\b", re.I), "one way to tell"),
    (re.compile(r"\b(?:name|give me) (?:a|an)\b", re.I), "one"),
]
SENTENCE_ENDS = (".", "!", "?", "\n")      # the raw recipe's stop strings (local and served)
SENTENCE_END = re.compile(r"[.!?\n]")
CUT_POLICIES = ("keep", "drop", "complete_words")
_ENDS_IN_WORD = re.compile(r"\w\Z")
# recipe -> its stop strings, the answer's end, whether stop words are removed, and the
# defaults of the settings left null (protoqa.generation.max_new_tokens / cut_policy)
RECIPES = {
    "paper": {"stop": (".",), "end": re.compile(r"\."), "stop_words": True,
              "max_new_tokens": 10, "cut_policy": "drop"},
    "raw": {"stop": SENTENCE_ENDS, "end": SENTENCE_END, "stop_words": False,
            "max_new_tokens": 20, "cut_policy": "complete_words"},
}


def recipe_of(name: str) -> dict:
    """The settings of recipe ``name`` (:data:`RECIPES`); an unknown name is refused."""
    if name not in RECIPES:
        raise ValueError(f"recipe must be one of {', '.join(RECIPES)}, got {name!r}")
    return RECIPES[name]


def generation_settings(g: dict) -> dict:
    """``protoqa.generation`` with the recipe's values for the settings left null
    (``max_new_tokens``, ``cut_policy``) and its stop strings (``stop``)."""
    r = recipe_of(g.get("recipe", "paper"))
    out = dict(g, stop=list(r["stop"]))
    for key in ("max_new_tokens", "cut_policy"):
        if out.get(key) is None:
            out[key] = r[key]
    return out


def question_to_prompt(question: str) -> str:
    q = question.strip().rstrip(".?! ").strip()
    for pattern, repl in _RULES:
        if pattern.search(q):
            text = pattern.sub(repl, q, count=1) + " is"
            break
    else:
        text = q + "? One answer is"
    return text[:1].upper() + text[1:]


def clean_completion(text: str, recipe: str = "raw") -> str:
    """The recipe's answer of a sample that ended on its own: cut at the recipe's first
    sentence end, normalised (lower-case, punctuation folded), stop words removed (``paper``)."""
    r = recipe_of(recipe)
    return _content(_folded(text, r), r)


def _folded(text: str, r: dict) -> str:
    m = r["end"].search(text)
    return fold(text[: m.start()] if m else text)


def _content(answer: str, r: dict) -> str:
    if not r["stop_words"]:
        return answer
    return " ".join(w for w in answer.split() if w not in NLTK_STOP_WORDS)


def sample_answer(text: str, cut: bool = False, policy: str = "keep",
                  recipe: str = "raw") -> str:
    """The answer of one sample under the cut ``policy`` and the ``recipe`` ("" = no answer)."""
    if policy not in CUT_POLICIES:
        raise ValueError(f"cut policy must be one of {', '.join(CUT_POLICIES)}, got {policy!r}")
    r = recipe_of(recipe)
    if cut and policy == "drop":
        return ""
    answer = _folded(text, r)
    if cut and policy == "complete_words" and _ENDS_IN_WORD.search(text):
        answer = answer.rpartition(" ")[0]   # the text stops inside or right after a word
    return _content(answer, r)


def rank_answers(samples: list[str], top: int = 20, cut: list[bool] | None = None,
                 policy: str = "keep", recipe: str = "raw") -> list[str]:
    """Most frequent non-empty answers (ties: first seen first); ``cut``: per sample, whether
    ``max_new_tokens`` ended it (see :func:`sample_answer` for ``policy`` and ``recipe``)."""
    if cut is None:
        cut = [False] * len(samples)
    if len(cut) != len(samples):
        raise ValueError(f"{len(samples)} samples but {len(cut)} cut flags")
    counts = Counter(a for a in (sample_answer(s, c, policy, recipe) for s, c in zip(samples, cut))
                     if a)
    return [a for a, _ in counts.most_common(top)]


def samples_table(model: str, qids: list[str], samples: list[list[str]],
                  cut: list[list[bool]]):
    """The sampled texts of one model, one row per sample: ``model``, ``question_id``,
    ``sample`` (its index among the question's samples, 0-based), ``text`` (as sampled, up to its
    first sentence end), ``cut`` (whether ``max_new_tokens`` ended it)."""
    import pandas as pd

    if not (len(qids) == len(samples) == len(cut)):
        raise ValueError(f"{len(qids)} questions, {len(samples)} sample lists, {len(cut)} cut lists")
    rows = []
    for q, texts, flags in zip(qids, samples, cut):
        if len(texts) != len(flags):
            raise ValueError(f"question {q}: {len(texts)} samples but {len(flags)} cut flags")
        rows += [(model, q, i, t, bool(c)) for i, (t, c) in enumerate(zip(texts, flags))]
    df = pd.DataFrame(rows, columns=["model", "question_id", "sample", "text", "cut"])
    return df.astype({"sample": "int64", "cut": "bool"})


def ranked_lists(samples, top: int = 20, policy: str = "keep",
                 recipe: str = "raw") -> dict[str, list[str]]:
    """Question id -> ranked list (:func:`rank_answers`) from a :func:`samples_table`, questions
    in the table's order."""
    out = {}
    for qid, grp in samples.groupby("question_id", sort=False):
        grp = grp.sort_values("sample")
        out[str(qid)] = rank_answers(grp["text"].tolist(), top, grp["cut"].tolist(), policy,
                                     recipe)
    return out
