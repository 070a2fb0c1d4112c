"""What to look for in a corpus, per benchmark: one row per probe text.

A benchmark is a data set of the ``datasets`` registry (built-in or the user's), searched by its
kind (:func:`dataset_probes`), or one of the task tables of :data:`BENCHMARKS` (:func:`extract`).
Probes have a ``kind``: ``full`` texts are searched by every method; ``part`` texts (the pieces
around a blank) only feed the ``exact`` method's parts rule.

* ``winograd`` (WinoGrande dev/test, WSC, a user's set): the sentence with ``_`` filled by each
  option (``option1``, ``option2``) and the two halves around the blank (``left``, ``right``); a
  paraphrase, where the set has one, the same way (``paraphrase_option1`` ...);
* ``yesno``, ``protoqa`` (the question as written), ``squad``: the question; ``text``: the text;
* WinoWhat (``winowhat``): the paraphrase filled by each option, and its halves;
* 20Q (``twentyq_test``): the question of the cleaned test split of the twentyq task.
"""
from __future__ import annotations

import pandas as pd

from ..datasets import TEXT_ROLES
from ..errors import InputError

# the benchmarks that are not data sets: name -> (source, table, extractor name)
BENCHMARKS = {
    "winowhat": ("winowhat", "winowhat", "paraphrase"),
    "twentyq_test": ("twentyq", "test", "question"),
}
# tables produced by task rules rather than by a normaliser
TASK_TABLES = {"twentyq_test": "results/twentyq/split/test.parquet"}   # 20Q test split (cleaned)
PROBE_COLUMNS = ["benchmark", "item_id", "probe", "kind", "text"]


def _need(df: pd.DataFrame, cols, path) -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise InputError(path, f"table lacks column(s) {', '.join(missing)} "
                               f"(has {', '.join(map(str, df.columns))})")


def blank_probes(benchmark: str, item_id: str, sentence: str, options, path=None,
                 line=None) -> list[dict]:
    """Probes of a fill-in-the-blank item: filled sentences, then the halves around ``_``."""
    if sentence.count("_") != 1:
        raise InputError(path or benchmark, f"item {item_id}: expected one '_' blank in "
                                            f"{sentence!r}", line)
    left, right = (s.strip() for s in sentence.split("_"))
    rows = [dict(benchmark=benchmark, item_id=item_id, probe=f"option{i}", kind="full",
                 text=sentence.replace("_", str(o)))
            for i, o in enumerate(options, start=1)]
    for name, part in (("left", left), ("right", right)):
        if part:
            rows.append(dict(benchmark=benchmark, item_id=item_id, probe=name, kind="part",
                             text=part))
    return rows


def extract(benchmark: str, df: pd.DataFrame, path=None) -> pd.DataFrame:
    """Probe table of one of :data:`BENCHMARKS` from its table."""
    if benchmark not in BENCHMARKS:
        raise KeyError(f"unknown benchmark {benchmark!r} (known: {', '.join(BENCHMARKS)})")
    kind = BENCHMARKS[benchmark][2]
    path = path or benchmark
    rows: list[dict] = []
    if kind == "paraphrase":
        col = "paraphrased_sentence"
        _need(df, ["id", col, "option1", "option2"], path)
        for i, r in enumerate(df[["id", col, "option1", "option2"]].itertuples(index=False)):
            if str(r[1]).count("_") != 1:
                # a paraphrase without a single blank is searched as written
                rows.append(dict(benchmark=benchmark, item_id=str(r[0]), probe="text",
                                 kind="full", text=str(r[1])))
                continue
            rows += blank_probes(benchmark, str(r[0]), str(r[1]), (r[2], r[3]), path, i + 1)
    else:
        _need(df, ["id", "question"], path)
        for r in df[["id", "question"]].itertuples(index=False):
            rows.append(dict(benchmark=benchmark, item_id=str(r[0]), probe="question",
                             kind="full", text=str(r[1])))
    return pd.DataFrame(rows, columns=PROBE_COLUMNS)


def dataset_probes(name: str, kind: str, df: pd.DataFrame, path=None) -> pd.DataFrame:
    """Probe table of a registry dataset (``benchmark`` = its name) from its normalised table of
    roles: a ``winograd`` item's sentence with each option filled in and the halves around the
    blank (probes ``option1``, ``option2``, ``left``, ``right``), and its ``paraphrase`` where one
    is given, the same way (``paraphrase_option1`` ...); the question of a ``yesno``, ``protoqa``
    or ``squad`` item (probe ``question``); the text of a ``text`` item (probe ``text``)."""
    path = path or name
    if kind not in TEXT_ROLES:
        raise ValueError(f"dataset {name!r}: unknown kind {kind!r} (known: "
                         f"{', '.join(TEXT_ROLES)})")
    rows: list[dict] = []
    if kind == "winograd":
        _need(df, ["id", "sentence", "option1", "option2"], path)
        para = df["paraphrase"] if "paraphrase" in df.columns else [None] * len(df)
        for i, (r, p) in enumerate(zip(df[["id", "sentence", "option1", "option2"]]
                                       .itertuples(index=False), para)):
            rows += blank_probes(name, str(r.id), r.sentence, (r.option1, r.option2), path, i + 1)
            if isinstance(p, str) and p.strip():
                rows += [dict(x, probe=f"paraphrase_{x['probe']}")
                         for x in blank_probes(name, str(r.id), p, (r.option1, r.option2), path,
                                               i + 1)]
    else:
        role = TEXT_ROLES[kind]
        _need(df, ["id", role], path)
        rows = [dict(benchmark=name, item_id=str(i), probe=role, kind="full", text=t)
                for i, t in zip(df["id"], df[role])]
    return pd.DataFrame(rows, columns=PROBE_COLUMNS)
