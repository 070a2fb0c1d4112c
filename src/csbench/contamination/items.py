"""What to look for in a corpus, per benchmark: one row per probe text.

A benchmark name maps to a normalised table (``results/data/<source>/<table>.parquet``) and an
extraction function. Probes have a ``kind``: ``full`` texts are searched by every method; ``part``
texts (the pieces around a blank) only feed the ``exact`` method's parts rule.

* WinoGrande dev/test and WSC: the sentence with ``_`` filled by each option (``option1``,
  ``option2``) and the two halves around the blank (``left``, ``right``);
* WinoWhat: the paraphrase filled by each option, and its halves;
* 20Q: the question (the cleaned test split of the twentyq task); ProtoQA: the question as written; SQuAD 2.0: the question.
"""
from __future__ import annotations

import pandas as pd

from ..errors import InputError

# benchmark -> (source, table, extractor name)
BENCHMARKS = {
    "winogrande_dev": ("winogrande", "dev", "blank"),
    "winogrande_test": ("winogrande", "test", "blank"),
    "wsc": ("wsc273", "wsc", "blank"),
    "winowhat": ("winowhat", "winowhat", "paraphrase"),
    "twentyq_test": ("twentyq", "test", "question"),
    "protoqa_dev": ("protoqa", "dev_crowdsourced", "question"),
    "squad_v2_dev": ("squad_v2", "dev", "question"),
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
    """Probe table of one benchmark from its normalised table."""
    if benchmark not in BENCHMARKS:
        raise KeyError(f"unknown benchmark {benchmark!r} (known: {', '.join(BENCHMARKS)})")
    kind = BENCHMARKS[benchmark][2]
    path = path or benchmark
    rows: list[dict] = []
    if kind in ("blank", "paraphrase"):
        col = "sentence" if kind == "blank" else "paraphrased_sentence"
        _need(df, ["id", col, "option1", "option2"], path)
        for i, r in enumerate(df[["id", col, "option1", "option2"]].itertuples(index=False)):
            if kind == "paraphrase" and str(r[1]).count("_") != 1:
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
