"""WinoWhat (Gevers et al. 2025): ``WinoWhat.csv`` with columns sentence, paraphrased_sentence,
option1, option2, answer, gpt_category, gpt_category_names, in_original_experiment -> table
``winowhat``. Category codes: 1 physical, 2 social, 3 numerical, 4 temporal, 5 spatial; an item may
have several. Codes that are not 1-5 (the corrupted ``2005``) are repaired from the names column."""
from __future__ import annotations

import ast
import csv
import io

import pandas as pd

from ..errors import InputError
from ..io import open_text
from .winogrande import check_options

CATEGORIES = {1: "physical", 2: "social", 3: "numerical", 4: "temporal", 5: "spatial"}
NAME_TO_CODE = {v: k for k, v in CATEGORIES.items()}
HEADER = ["sentence", "paraphrased_sentence", "option1", "option2", "answer", "gpt_category",
          "gpt_category_names", "in_original_experiment"]

COLUMNS = {
    "id": "row id: ww-<1-based data row number>",
    "sentence": "original WinoGrande dev sentence",
    "paraphrased_sentence": "paraphrase (the blank is meant to be at the end)",
    "option1": "first option", "option2": "second option",
    "answer": "1 or 2 (nullable: user-supplied files for unlabelled sets may leave it blank)",
    "categories": "list of category names (physical, social, numerical, temporal, spatial)",
    "category_codes": "the raw gpt_category string",
    "codes_repaired": "the raw codes were corrupt and the names column was used",
    "in_original_experiment": "1 if the row is in the paper's headline experiment",
}


def tables(files: list[str]) -> dict[str, list[str]]:
    return {"winowhat": ["WinoWhat.csv"]} if "WinoWhat.csv" in files else {}


def parse_categories(path, codes: str, names: str, line: int) -> tuple[list[str], bool]:
    """Category names of one row and whether the codes had to be repaired from the names."""
    name_list: list[str] = []
    if names and names.strip():
        try:
            name_list = ast.literal_eval(names)
        except (ValueError, SyntaxError):
            raise InputError(path, f"gpt_category_names is not a list: {names!r}", line) from None
        if not isinstance(name_list, list) or any(n not in NAME_TO_CODE for n in name_list):
            raise InputError(path, f"unknown category name in {names!r}", line)
    try:
        code_list = [int(c) for c in str(codes).replace(" ", "").split(",") if c != ""]
    except ValueError:
        code_list = [-1]
    if code_list and all(c in CATEGORIES for c in code_list):
        from_codes = [CATEGORIES[c] for c in code_list]
        if name_list and sorted(set(from_codes)) != sorted(set(name_list)):
            raise InputError(path, f"category codes {codes!r} disagree with names {names!r}", line)
        return sorted(set(from_codes), key=lambda n: NAME_TO_CODE[n]), False
    if not name_list:
        if not str(codes).strip():
            return [], False
        raise InputError(path, f"corrupt category codes {codes!r} and no names to repair them", line)
    return sorted(set(name_list), key=lambda n: NAME_TO_CODE[n]), True


def _records(path, reader):
    while True:
        try:
            rec = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise InputError(path, f"malformed CSV ({exc})", reader.line_num) from None
        yield rec


def read_winowhat_csv(path, require_answer: bool = True) -> pd.DataFrame:
    """Read a CSV with the WinoWhat columns (the release or a user-supplied file)."""
    with open_text(path) as fh:
        text = fh.read()
    # strict: an unterminated quote (a truncated last line) is an error, not a silent field
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader)
    except StopIteration:
        raise InputError(path, "file is empty") from None
    except csv.Error as exc:
        raise InputError(path, f"malformed CSV ({exc})", reader.line_num) from None
    missing = [c for c in HEADER[:5] if c not in header]
    if missing:
        raise InputError(path, f"missing column(s) {', '.join(missing)}", 1)
    col = {c: header.index(c) for c in HEADER if c in header}
    rows = []
    for rec in _records(path, reader):
        line = reader.line_num
        if not any(x.strip() for x in rec):
            continue
        if len(rec) != len(header):
            raise InputError(path, f"expected {len(header)} fields, got {len(rec)}", line)
        get = lambda c: rec[col[c]] if c in col else ""  # noqa: E731
        sentence = get("sentence")
        if sentence.count("_") != 1:
            raise InputError(path, "sentence must contain exactly one '_'", line)
        para = get("paraphrased_sentence").strip()
        if para and para.count("_") != 1:
            raise InputError(path, "paraphrased_sentence must contain exactly one '_'", line)
        check_options(path, get("option1"), get("option2"), line)
        ans = get("answer").strip()
        if ans not in ("1", "2") and (require_answer or ans):
            raise InputError(path, f"answer must be 1 or 2, got {ans!r}", line)
        cats, repaired = parse_categories(path, get("gpt_category"), get("gpt_category_names"), line)
        ioe = get("in_original_experiment").strip() or "1"
        if ioe not in ("0", "1"):
            raise InputError(path, f"in_original_experiment must be 0 or 1, got {ioe!r}", line)
        rows.append({"id": f"ww-{len(rows) + 1}", "sentence": sentence,
                     "paraphrased_sentence": para or None, "option1": get("option1"),
                     "option2": get("option2"), "answer": int(ans) if ans else None,
                     "categories": cats, "category_codes": get("gpt_category"),
                     "codes_repaired": repaired, "in_original_experiment": int(ioe),
                     "line": line})
    if not rows:
        raise InputError(path, "no data rows")
    df = pd.DataFrame(rows)
    df["answer"] = df["answer"].astype("Int8")
    return df


def normalise(table: str, paths: dict) -> pd.DataFrame:
    return read_winowhat_csv(paths["WinoWhat.csv"]).drop(columns="line")
