"""Winograd Schema Challenge (Davis's ``WSCollection.xml``) -> table ``wsc``: every schema in the
same fill-in-the-blank form as WinoGrande (the pronoun becomes ``_``, the two answers become
option1/option2, A/B becomes 1/2). WSC273 is the first 273 schemas (column ``in_wsc273``)."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pandas as pd

from ..errors import InputError
from ..io import open_text
from .winogrande import check_options

N_WSC273 = 273
# Words that start an answer and are lower-cased when the answer fills a blank that is not at
# the start of the sentence (as lm-evaluation-harness's wsc273 task does).
UPPER_STARTS = ("A", "An", "The", "She", "He", "It", "They", "My", "His", "Her", "Their")

COLUMNS = {
    "id": "schema id: wsc-<1-based position in the collection>",
    "sentence": "txt1 + ` _ ` + txt2 with whitespace normalised",
    "option1": "answer A (leading determiner lower-cased unless the blank starts the sentence)",
    "option2": "answer B (same rule)",
    "answer": "1 (A) or 2 (B)",
    "pronoun": "the pronoun the blank replaces",
    "source": "source note of the schema",
    "in_wsc273": "among the first 273 schemas (WSC273)",
}


def tables(files: list[str]) -> dict[str, list[str]]:
    return {"wsc": ["WSCollection.xml"]} if "WSCollection.xml" in files else {}


def _clean(s: str | None) -> str:
    return re.sub(r"\s+", " ", s or "").strip()


def _option(text: str, blank_at_start: bool) -> str:
    first, _, rest = text.partition(" ")
    if not blank_at_start and first in UPPER_STARTS:
        return (first.lower() + " " + rest).strip()
    return text


def _line_of(raw: str, n: int) -> int:
    """Line number of the n-th (0-based) ``<schema>`` tag."""
    pos = -1
    for _ in range(n + 1):
        pos = raw.find("<schema>", pos + 1)
    return raw.count("\n", 0, max(pos, 0)) + 1


def normalise(table: str, paths: dict) -> pd.DataFrame:
    path = paths["WSCollection.xml"]
    with open(path, "rb") as fh:
        data = fh.read()
    raw = data.decode("latin-1")
    try:
        root = ET.fromstring(data)
    except ET.ParseError as exc:
        raise InputError(path, f"invalid XML ({exc})", exc.position[0]) from None
    rows = []
    for i, s in enumerate(root.iter("schema")):
        text = s.find("text")
        answers = [_clean(a.text) for a in s.findall("answers/answer")]
        correct = _clean(s.findtext("correctAnswer")).rstrip(".").strip().upper()
        if text is None or len(answers) != 2 or correct not in ("A", "B"):
            raise InputError(path, f"schema {i + 1}: needs <text>, two <answer>s and a "
                             f"<correctAnswer> of A or B (got {correct!r})", _line_of(raw, i))
        check_options(path, answers[0], answers[1], _line_of(raw, i))
        t1, pron, t2 = (_clean(text.findtext(k)) for k in ("txt1", "pron", "txt2"))
        sentence = _clean(f"{t1} _ {t2}")
        sentence = re.sub(r"_ (?=[.,;:!?'])", "_", sentence)
        at_start = not t1
        rows.append({"id": f"wsc-{i + 1}", "sentence": sentence,
                     "option1": _option(answers[0], at_start), "option2": _option(answers[1], at_start),
                     "answer": 1 if correct == "A" else 2, "pronoun": pron,
                     "source": _clean(s.findtext("source")), "in_wsc273": i < N_WSC273})
    if not rows:
        raise InputError(path, "no <schema> elements")
    df = pd.DataFrame(rows)
    df["answer"] = df["answer"].astype("Int8")
    return df
