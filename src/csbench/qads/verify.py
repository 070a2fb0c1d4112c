"""Human verification of generated QADS questions, as in the QADS paper: the mode-one questions
are exported as annotation blocks (one CSV per block), annotators mark each substitution and may
add synonyms and flag five cases, the returned blocks are validated and read back, and the
verified sets (``original``, ``one``, ``all``) plus agreement statistics are built from them.

Block files: ``block-<NNN>.csv`` as exported; a returned block is any ``block-<NNN>*.csv`` in the
annotation folder (``block-001.alice.csv`` and ``block-001.bob.csv`` = block 1 annotated twice).
Returned blocks are validated against the annotation rows rebuilt from the generated data
(:func:`annotation_rows`), not against the current export: every row carries its ``block`` and
``row_id``, and a block holds all rows of its questions, so the export's block size does not
matter (blocks returned from an export with another size still verify).
Editable columns: ``verdict`` (ok / wrong; also yes, y, 1, correct / no, n, 0, incorrect),
``added_synonyms`` (``;``-separated words), the five flags (blank, 0, no, n = not set; 1, x, yes, y
= set) and ``note`` (free text). The other columns must come back as exported.

A substitution is kept when every annotator of its block says ``ok`` and nobody set flags
(i)-(iv); with ``wrong`` and an added synonym, the first added synonym (typed as it should
appear, inflection included) replaces the generated one, unless another annotator says ``ok``
(then the generated one stays). Flag (v) (the original needs a missing word) is recorded, not
acted on.
"""
from __future__ import annotations

import csv
import io
import re
from collections import defaultdict
from pathlib import Path

import pandas as pd

from ..errors import InputError
from .generate import substitute

FLAGS = ("wrong_original", "idiom", "fixed_phrase", "named_entity", "missing_word")
FLAG_HELP = {"wrong_original": "(i) the original SQuAD question is wrong",
             "idiom": "(ii) the token is part of an idiomatic expression",
             "fixed_phrase": "(iii) the token is part of a fixed prepositional phrase",
             "named_entity": "(iv) the token is part of a multi-word named entity",
             "missing_word": "(v) the original question is improper and needs a missing word"}
DROP_FLAGS = FLAGS[:4]
READONLY = ["block", "row_id", "id", "title", "paragraph", "question", "new_question", "token",
            "synonym", "synset", "gloss"]
EDITABLE = ["verdict", "added_synonyms", *FLAGS, "note"]
COLUMNS = READONLY + EDITABLE
YES = {"ok", "yes", "y", "1", "correct", "true"}
NO = {"wrong", "no", "n", "0", "incorrect", "false"}
FLAG_ON = {"1", "x", "yes", "y", "true"}
FLAG_OFF = {"", "0", "no", "n", "false"}
WORD = re.compile(r"[A-Za-z][A-Za-z' -]*")
BLOCK_FILE = re.compile(r"^(block-\d+)(?:\.([A-Za-z0-9_-]+))?\.csv$")


def block_name(k: int) -> str:
    return f"block-{k:03d}"


def annotation_rows(subs: pd.DataFrame, one: list[dict], original: list[dict]) -> pd.DataFrame:
    """One row per generated mode-one question (exported columns, editable ones empty)."""
    from ..wordnet import wordnet

    wn = wordnet()
    new = {q["id"]: q for a in one for p in a["paragraphs"] for q in _qas(a, p)}
    orig = {q["id"]: q for a in original for p in a["paragraphs"] for q in _qas(a, p)}
    rows = []
    for r in subs.dropna(subset=["new_id"]).itertuples(index=False):
        q = new.get(r.new_id)
        if q is None:
            continue
        rows.append({"row_id": r.new_id, "id": r.id, "title": q["title"], "paragraph": q["context"],
                     "question": orig[r.id]["question"] if r.id in orig else "",
                     "new_question": q["question"], "token": r.token, "synonym": r.synonym,
                     "synset": r.synset, "gloss": wn.synset(r.synset).definition(),
                     **{c: "" for c in EDITABLE}})
    return pd.DataFrame(rows, columns=[c for c in COLUMNS if c != "block"])


def _qas(article, paragraph):
    for q in paragraph["qas"]:
        yield {**q, "title": article["title"], "context": paragraph["context"]}


def blocks(rows: pd.DataFrame, size: int) -> list[pd.DataFrame]:
    """Split into blocks of about ``size`` rows, never splitting the rows of one original question."""
    out, cur, n = [], [], 0
    for _, grp in rows.groupby("id", sort=False):
        if cur and n + len(grp) > size:
            out.append(pd.concat(cur))
            cur, n = [], 0
        cur.append(grp)
        n += len(grp)
    if cur:
        out.append(pd.concat(cur))
    result = []
    for k, b in enumerate(out, start=1):
        b = b.copy()
        b.insert(0, "block", block_name(k))
        result.append(b.reset_index(drop=True))
    return result


def export(rows: pd.DataFrame, outdir: Path, size: int) -> list[Path]:
    """Write the blocks as ``outdir/block-NNN.csv`` (UTF-8 with BOM, so spreadsheets read it)."""
    outdir.mkdir(parents=True, exist_ok=True)
    paths = []
    for b in blocks(rows, size):
        path = outdir / f"{b['block'].iloc[0]}.csv"
        b.to_csv(path, index=False, encoding="utf-8-sig", quoting=csv.QUOTE_NONNUMERIC)
        paths.append(path)
    (outdir / "README.txt").write_text(
        "QADS annotation blocks. Per row: verdict = ok if the synonym fits the token's meaning in the\n"
        "question, else wrong; added_synonyms = better synonyms, ';'-separated, inflected as in the\n"
        "question; flags (1 = set, blank = not set):\n"
        + "".join(f"  {f}: {h}\n" for f, h in FLAG_HELP.items())
        + "Return the files renamed block-NNN.<annotator>.csv; do not edit the other columns.\n")
    return paths


def returned_files(folder: str | Path | None) -> list[Path]:
    """Returned block files in ``folder`` (sorted); none when the folder is unset or missing."""
    if not folder or not Path(folder).is_dir():
        return []
    return sorted(p for p in Path(folder).iterdir() if BLOCK_FILE.match(p.name))


def read_block(path: Path, expected: pd.DataFrame) -> pd.DataFrame:
    """Validate one returned block against the generated annotation rows (``expected``, as
    :func:`annotation_rows` builds them; the export's ``block`` column is not used); return its
    rows with parsed ``verdict`` (bool), ``added`` (list) and flags (bool).

    Each row must have a generated ``row_id`` (once per file), the file's block name in ``block``
    and the generated ``token`` and ``synonym``; a block holds all rows of its questions, so every
    row of a question the file annotates must be in it. Errors are :class:`InputError` naming the
    file, the block, the spreadsheet row (header = 1) and the column."""
    m = BLOCK_FILE.match(path.name)
    if not m:
        raise InputError(path, "not a block file name (block-NNN[.annotator].csv)")
    block = m.group(1)
    exp = expected.set_index("row_id")
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            text = fh.read()
        first = text.split("\n", 1)[0]  # spreadsheets in some locales save with ';' or tabs
        delim = max((",", ";", "\t"), key=first.count)
        records = list(csv.reader(io.StringIO(text, newline=""), delimiter=delim))
    except UnicodeDecodeError as e:
        raise InputError(path, f"block {block}: not UTF-8 text ({e})") from None
    if not records:
        raise InputError(path, f"block {block}: empty file")
    header = [h.strip() for h in records[0]]
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise InputError(path, f"block {block}, row 1: missing column(s) {', '.join(missing)}", 1)
    col = {c: header.index(c) for c in COLUMNS}
    out, seen = [], {}
    for rowno, rec in enumerate(records[1:], start=2):
        if not any(cell.strip() for cell in rec):
            continue

        def bad(column, msg, rowno=rowno):
            return InputError(path, f"block {block}, row {rowno}, column {column}: {msg}", rowno)

        if len(rec) < len(header):
            rec = rec + [""] * (len(header) - len(rec))
        cell = {c: rec[i] for c, i in col.items()}
        rid = cell["row_id"].strip()
        if rid not in exp.index:
            raise bad("row_id", f"unknown id {rid!r} (not a generated substitution)")
        if rid in seen:
            raise bad("row_id", f"id {rid!r} repeated (first on row {seen[rid]})")
        seen[rid] = rowno
        if cell["block"].strip() != block:
            raise bad("block", f"{cell['block']!r} but the file is {block}")
        for c in ("token", "synonym"):
            if cell[c].strip() != str(exp.at[rid, c]):
                raise bad(c, f"{cell[c]!r} differs from the exported {exp.at[rid, c]!r} "
                             "(rows shifted or edited?)")
        v = cell["verdict"].strip().lower()
        if not v:
            raise bad("verdict", "missing verdict (ok or wrong)")
        if v not in YES | NO:
            raise bad("verdict", f"{cell['verdict']!r} is not a verdict (ok or wrong)")
        added = [a.strip() for a in cell["added_synonyms"].split(";") if a.strip()]
        for a in added:
            if not WORD.fullmatch(a):
                raise bad("added_synonyms", f"{a!r} is not a word or phrase (use ';' between synonyms)")
        flags = {}
        for f in FLAGS:
            fv = cell[f].strip().lower()
            if fv not in FLAG_ON | FLAG_OFF:
                raise bad(f, f"{cell[f]!r} is not a flag value (1 or blank)")
            flags[f] = fv in FLAG_ON
        out.append({"block": block, "row_id": rid, "row": rowno, "verdict": v in YES,
                    "added": added, **flags, "note": cell["note"].strip()})
    if not out:
        raise InputError(path, f"block {block}: no annotated rows")
    # blocks() never splits a question: a question in this file has all its rows here
    ids = set(exp.loc[list(seen), "id"])
    lacking = expected[expected["id"].isin(ids) & ~expected["row_id"].isin(seen)]
    if len(lacking):
        r = lacking.iloc[0]
        raise InputError(path, f"block {block}: {len(lacking)} exported row(s) missing, e.g. "
                               f"row_id {r['row_id']!r} (question {r['id']!r} has rows in the file)")
    return pd.DataFrame(out)


def read_returned(files: list[Path], expected: pd.DataFrame) -> pd.DataFrame:
    """All returned blocks, one row per (annotator file, row_id); ``annotator`` = file name part.

    Besides :func:`read_block`'s checks: a row may be in one block only, and the files of one
    block (annotated more than once) must hold the same rows."""
    frames, block_of, rows_of = [], {}, {}
    for f in map(Path, files):
        df = read_block(f, expected)
        block = df.at[0, "block"]
        for rid, rowno in zip(df["row_id"], df["row"]):
            other = block_of.setdefault(rid, (block, f.name))
            if other[0] != block:
                raise InputError(f, f"block {block}, row {rowno}, column row_id: id {rid!r} is also "
                                    f"in {other[1]} (block {other[0]})", rowno)
        rows = set(df["row_id"])
        first, frows = rows_of.setdefault(block, (f.name, rows))
        if rows != frows:
            only = sorted(rows - frows)
            rid, where = (only[0], f.name) if only else (sorted(frows - rows)[0], first)
            raise InputError(f, f"block {block}: the rows differ from {first} (same block), e.g. "
                                f"row_id {rid!r} is only in {where}")
        df.insert(1, "annotator", BLOCK_FILE.match(f.name).group(2) or "")
        df.insert(2, "file", f.name)
        frames.append(df)
    if not frames:
        return pd.DataFrame(columns=["block", "annotator", "file", "row_id", "row", "verdict",
                                     "added", *FLAGS, "note"])
    return pd.concat(frames, ignore_index=True)


def cohen_kappa(a: list, b: list) -> float | None:
    """Cohen's kappa of two equally long label lists (None when undefined: one label only)."""
    n = len(a)
    if n == 0:
        return None
    po = sum(x == y for x, y in zip(a, b)) / n
    labels = set(a) | set(b)
    pe = sum((a.count(k) / n) * (b.count(k) / n) for k in labels)
    return None if pe == 1 else (po - pe) / (1 - pe)


def agreement(ann: pd.DataFrame) -> pd.DataFrame:
    """Per block annotated more than once and pair of annotator files: n, raw agreement and Cohen's
    kappa on the verdict and on each flag."""
    rows = []
    for block, grp in ann.groupby("block", sort=True):
        files = sorted(grp["file"].unique())
        for i in range(len(files)):
            for j in range(i + 1, len(files)):
                a = grp[grp["file"] == files[i]].set_index("row_id")
                b = grp[grp["file"] == files[j]].set_index("row_id").loc[a.index]
                rec = {"block": block, "file_a": files[i], "file_b": files[j], "n": len(a)}
                for c in ("verdict", *FLAGS):
                    x, y = a[c].tolist(), b[c].tolist()
                    rec[f"{c}_agreement"] = sum(p == q for p, q in zip(x, y)) / len(x) if x else None
                    rec[f"{c}_kappa"] = cohen_kappa(x, y)
                rows.append(rec)
    cols = ["block", "file_a", "file_b", "n"] + [f"{c}_{s}" for c in ("verdict", *FLAGS)
                                                for s in ("agreement", "kappa")]
    return pd.DataFrame(rows, columns=cols)


def decide(ann: pd.DataFrame, expected: pd.DataFrame) -> pd.DataFrame:
    """One row per annotated substitution: kept?, the replacement used, and why (``block``: the
    returned block that holds it)."""
    exp = expected.set_index("row_id")
    out = []
    for rid, grp in ann.groupby("row_id", sort=False):
        flags = {f: bool(grp[f].any()) for f in FLAGS}
        added = list(dict.fromkeys(a for lst in grp["added"] for a in lst))
        ok = bool(grp["verdict"].all())
        any_ok = bool(grp["verdict"].any())
        replacement, reason = None, ""
        dropped = [f for f in DROP_FLAGS if flags[f]]
        if dropped:
            reason = "flagged " + ", ".join(dropped)
        elif ok:
            replacement, reason = exp.at[rid, "synonym"], "accepted"
        elif not any_ok and added:
            replacement, reason = added[0], "annotator's synonym"
        else:
            reason = "rejected" if not any_ok else "annotators disagree"
        out.append({"row_id": rid, "id": exp.at[rid, "id"], "block": grp["block"].iloc[0],
                    "annotations": len(grp), "verdict_ok": int(grp["verdict"].sum()),
                    "kept": replacement is not None, "replacement": replacement, "reason": reason,
                    "added_synonyms": added, **flags,
                    "notes": [n for n in grp["note"] if n]})
    return pd.DataFrame(out)


def verified_sets(decisions: pd.DataFrame, subs: pd.DataFrame, questions: pd.DataFrame,
                  modes=("one", "all")) -> dict[str, pd.DataFrame]:
    """Rebuild ``original``, ``one`` and ``all`` from the kept substitutions (``questions``: the
    squad_v2 rows the QADS set was generated from). Mode-one ids stay as generated
    (``<original>-<n>``); mode ``all`` applies every kept substitution of a question (``-1``)."""
    kept = decisions[decisions["kept"]].set_index("row_id")
    s = subs.dropna(subset=["new_id"])
    s = s[s["new_id"].isin(kept.index)]
    byq = defaultdict(list)
    for r in s.itertuples(index=False):
        byq[r.id].append((r.new_id, (r.position, r.position + len(r.token),
                                     kept.at[r.new_id, "replacement"])))
    rows = {m: [] for m in modes}
    for base in questions.to_dict("records"):
        edits = byq.get(base["id"])
        if not edits:
            continue
        if "one" in rows:
            rows["one"] += [{**base, "id": nid, "question": substitute(base["question"], [e])}
                            for nid, e in edits]
        if "all" in rows:
            rows["all"].append({**base, "id": f"{base['id']}-1",
                                "question": substitute(base["question"], [e for _, e in edits])})
    out = {m: pd.DataFrame(r, columns=list(questions.columns)) for m, r in rows.items()}
    out["original"] = questions[questions["id"].isin(byq)].reset_index(drop=True)
    return out


def summary(expected: pd.DataFrame, ann: pd.DataFrame, decisions: pd.DataFrame,
            sets: dict[str, pd.DataFrame], files: list) -> dict:
    return {"verified": True, "files": [Path(f).name for f in files],
            "blocks_returned": int(ann["block"].nunique()),
            "substitutions_exported": len(expected), "substitutions_annotated": len(decisions),
            "substitutions_kept": int(decisions["kept"].sum()),
            "kept_by_reason": decisions["reason"].value_counts().to_dict(),
            "flags": {f: int(decisions[f].sum()) for f in FLAGS},
            "questions": {m: len(df) for m, df in sets.items()}}


def verify(expected: pd.DataFrame, files: list, subs: pd.DataFrame, questions: pd.DataFrame,
           modes=("one", "all")) -> dict:
    """What rule ``qads_verify`` writes, from the generated annotation rows (``expected``, as
    :func:`annotation_rows` builds them), the returned block files, the substitutions and the
    squad_v2 questions: ``sets``, ``decisions``, ``agreement`` and ``summary``."""
    ann = read_returned(files, expected)
    decisions = decide(ann, expected)
    sets = verified_sets(decisions, subs, questions, modes)
    return {"sets": sets, "decisions": decisions, "agreement": agreement(ann),
            "summary": summary(expected, ann, decisions, sets, files)}
