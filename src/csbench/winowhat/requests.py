"""Requests of the two scoring methods.

*Original* partial evaluation (Trinh & Le 2018; lm-evaluation-harness ``winogrande``): for each
option, context = sentence up to ``_`` with the option filled in, continuation = ``" " +`` the
stripped text after ``_``; the option whose continuation scores higher wins.

*Paraphrased* (WinoWhat): the blank is at the end; context = text before ``_``, continuation = the
option (with the leading space that precedes the blank), summed over the option's tokens. A
paraphrase whose blank is not at the end is scored with the original method and flagged.

*Sentence* (the control for the metric confound, one method on both sides): context = text before
``_``, continuation = the rest of the sentence with the option filled in (the option's tokens and
every token after them). The text before the blank is shared by both options, so comparing these
continuations ranks the options as the log-probability of the whole sentence does.
"""
from __future__ import annotations

import re

# What may follow a blank that counts as "at the end": closing punctuation, quotes, whitespace.
_END_TAIL = re.compile(r"[\s.!?;:,\"'\u2019\u201d)\]]*")


def split_blank(sentence: str) -> tuple[str, str]:
    if sentence.count("_") != 1:
        raise ValueError(f"sentence must contain exactly one '_': {sentence!r}")
    before, _, after = sentence.partition("_")
    return before, after


def blank_at_end(sentence: str) -> bool:
    return _END_TAIL.fullmatch(split_blank(sentence)[1]) is not None


def partial_requests(sentence: str, option1: str, option2: str) -> list[tuple[str, str]]:
    """Original method: ``[(before + option, " " + after.strip())]`` for option1, option2."""
    before, after = split_blank(sentence)
    target = " " + after.strip()
    return [(before + option1, target), (before + option2, target)]


def option_requests(sentence: str, option1: str, option2: str) -> list[tuple[str, str]]:
    """Paraphrased method: ``[(before.rstrip(), " " + option)]`` (no space if ``_`` is glued on)."""
    before, _ = split_blank(sentence)
    ctx = before.rstrip()
    sep = " " if len(ctx) < len(before) else ""
    return [(ctx, sep + option1), (ctx, sep + option2)]


def sentence_requests(sentence: str, option1: str, option2: str) -> list[tuple[str, str]]:
    """Control method: ``[(before.rstrip(), <space> + option + after)]`` for option1, option2: the
    sentence from the blank to its end, as written (no stripping)."""
    before, after = split_blank(sentence)
    ctx = before.rstrip()
    sep = before[len(ctx):]
    return [(ctx, sep + option1 + after), (ctx, sep + option2 + after)]


def requests_for(sentence: str, option1: str, option2: str, variant: str) -> tuple[list, str]:
    """Requests of one item and the method used (``partial`` or ``option``)."""
    if variant == "transf" and blank_at_end(sentence):
        return option_requests(sentence, option1, option2), "option"
    return partial_requests(sentence, option1, option2), "partial"
