"""The Findings table of RESULTS.md: one row per headline finding of a paper, with the paper's
figure (from the published anchors, by id), ours with its interval, the trivial baseline of the
metric, and a verdict computed by :func:`judge` (the rules are in docs/reproduce.md).

Each task's report module builds its own :class:`Finding` rows from its tables; this module only
holds the row type, the verdict rules, the interval helpers and the table's Markdown. It imports
only :mod:`csbench.sections`, so every task package may import it.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import pandas as pd

from .sections import markdown_table

REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, NOT_RUN = \
    "reproduced", "not reproduced", "inconclusive", "not run"
VERDICTS = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, NOT_RUN)
PAPERS = ("20Q", "ProtoQA", "WinoWhat", "QADS")  # the Findings table's order
Z95 = 1.959963984540054


@dataclass
class Finding:
    """One row of the Findings table. ``effect``/``ci_low``/``ci_high``: our effect in the paper's
    direction (positive = as the paper found), in points where the metric is a percentage;
    ``why``: what the verdict rests on (always set for ``inconclusive`` and ``not run``)."""

    paper: str
    claim: str
    published: str = "–"
    ours: str = "–"
    baseline: str = "–"
    verdict: str = NOT_RUN
    why: str = ""
    system: str = ""
    metric: str = ""
    effect: float = math.nan
    ci_low: float = math.nan
    ci_high: float = math.nan
    n: float = math.nan
    anchors: list[str] = field(default_factory=list)

    def record(self) -> dict:
        """The row as JSON values: numpy scalars as plain numbers, NaN as None."""
        out = {}
        for k, v in asdict(self).items():
            v = v.item() if hasattr(v, "item") else v
            out[k] = None if isinstance(v, float) and math.isnan(v) else v
        return out


def _nan(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def judge(effect=math.nan, lo=math.nan, hi=math.nan, *, missing: str | None = None,
          at_baseline: str | None = None, null_claim: bool = False,
          significant: bool | None = None) -> tuple[str, str]:
    """The verdict and what it rests on, by the rules of docs/reproduce.md, in order:

    1. ``missing`` (why the numbers do not exist) -> ``not run``;
    2. ``at_baseline`` (the system does not beat the metric's trivial baseline) -> ``inconclusive``;
    3. an effect claim (``effect`` positive in the paper's direction, 95% interval ``lo``-``hi``):
       ``reproduced`` if the interval lies above 0, ``not reproduced`` if below, else
       ``inconclusive`` (spans no effect; also without an interval); where a test gives only
       ``significant`` (a p-value, no interval), that and the sign of ``effect`` decide;
    4. a ``null_claim`` (the paper found no difference): ``not reproduced`` if our test is
       ``significant`` in the paper's direction, else ``reproduced``.
    """
    if missing:
        return NOT_RUN, missing
    if at_baseline:
        return INCONCLUSIVE, f"at the trivial baseline: {at_baseline}"
    if null_claim:
        if significant is None:
            return INCONCLUSIVE, "no test"
        return (NOT_REPRODUCED, "our test finds a difference") if significant and effect > 0 \
            else (REPRODUCED, "our test finds no difference either")
    if _nan(effect):
        return INCONCLUSIVE, "no effect could be computed"
    if not (_nan(lo) or _nan(hi)):
        if lo > 0:
            return REPRODUCED, "the interval lies above no effect"
        if hi < 0:
            return NOT_REPRODUCED, "the interval lies below no effect (the opposite direction)"
        return INCONCLUSIVE, "the interval spans no effect"
    if significant is not None:
        if significant:
            return (REPRODUCED, "significant, in the paper's direction") if effect > 0 else \
                (NOT_REPRODUCED, "significant, in the opposite direction")
        return INCONCLUSIVE, "not significant (the test spans no effect)"
    return INCONCLUSIVE, "no interval: the table gives none for this effect"


def at_baseline(low, baseline) -> bool:
    """Whether a score (its interval's lower end, or the score where it has none) does not
    exceed the trivial baseline of its metric."""
    return not _nan(low) and not _nan(baseline) and low <= baseline


def difference_interval(a, a_lo, a_hi, b, b_lo, b_hi) -> tuple[float, float, float]:
    """``a - b`` with a conservative interval from two separate 95% intervals
    (``[a_lo - b_hi, a_hi - b_lo]``): wider than the interval of the difference itself, so a
    verdict it supports holds under the exact one too."""
    return a - b, a_lo - b_hi, a_hi - b_lo


def paired_interval(n, a_only, b_only) -> tuple[float, float, float]:
    """The paired difference of two accuracies on the same ``n`` items, from the discordant
    counts (``a_only``: items only A gets right), with its 95% Wald interval."""
    if _nan(n) or not n:
        return math.nan, math.nan, math.nan
    n, b, c = float(n), float(a_only), float(b_only)
    d = (b - c) / n
    se = math.sqrt(max((b + c) / n - d * d, 0.0) / n)
    return d, d - Z95 * se, d + Z95 * se


def base_model(model: str, source) -> str:
    """The model a fine-tuned model starts from (its ``model_source`` reads
    ``finetune:<base>=<base source> on <data>``, :mod:`csbench.finetune`), else the model itself:
    how a task's findings pair a fine-tuned arm with its base model's prompted rows."""
    src = "" if source is None or (isinstance(source, float) and math.isnan(source)) else str(source)
    if src.startswith("finetune:") and "=" in src:
        return src[len("finetune:"):].split("=", 1)[0]
    return model


def anchor(anchors: pd.DataFrame, anchor_id: str) -> float:
    """A published number by id, in percent where its unit is a percentage or a fraction (the
    number as printed otherwise); NaN where the anchors file has no such id."""
    if anchors is None or "id" not in anchors:
        return math.nan
    row = anchors[anchors["id"] == anchor_id]
    if row.empty:
        return math.nan
    if "percent" in row and not _nan(row["percent"].iloc[0]):
        return float(row["percent"].iloc[0])
    return float(row["value"].iloc[0])


def findings_markdown(findings: list[Finding]) -> str:
    """The Findings table, ordered by paper (:data:`PAPERS`), then as the tasks gave them."""
    order = {p: i for i, p in enumerate(PAPERS)}
    rows = sorted(findings, key=lambda f: order.get(f.paper, len(order)))
    show = pd.DataFrame({
        "paper": [f.paper for f in rows], "finding": [f.claim for f in rows],
        "system": [f.system for f in rows], "published": [f.published for f in rows],
        "ours [95% CI]": [f.ours for f in rows], "trivial baseline": [f.baseline for f in rows],
        "verdict": [f"**{f.verdict}**" + (f" ({f.why})" if f.why else "") for f in rows]},
        columns=["paper", "finding", "system", "published", "ours [95% CI]", "trivial baseline",
                 "verdict"])
    return ("Each paper's headline findings, checked against this run's tables (the sections "
            "below): the paper's number (from `resources/published_anchors.tsv`, by id), ours with "
            "its 95% interval, the metric's trivial baseline computed from the gold labels, and "
            "the verdict by the rules of docs/reproduce.md (`reproduced`: the interval of the effect "
            "lies on the paper's side of no effect; `not reproduced`: on the other side; "
            "`inconclusive`: it spans no effect, or the system is at its trivial baseline; `not "
            "run`: the numbers do not exist in this run).\n\n" + markdown_table(show))


def points(x, digits: int = 1) -> str:
    return "–" if _nan(x) else f"{x:.{digits}f}"


def with_interval(value, lo, hi, digits: int = 1) -> str:
    """``58.2 [55.1, 61.0]`` (already in the unit shown); ``–`` without a value."""
    if _nan(value):
        return "–"
    if _nan(lo) or _nan(hi):
        return points(value, digits)
    return f"{points(value, digits)} [{points(lo, digits)}, {points(hi, digits)}]"


def effect_text(effect, lo, hi, digits: int = 1) -> str:
    """``effect +7.3 [4.5, 10.1]``: the effect in the paper's direction."""
    if _nan(effect):
        return ""
    sign = "+" if effect >= 0 else "−"
    return f"effect {sign}{points(abs(effect), digits)}" + (
        "" if _nan(lo) or _nan(hi) else f" [{points(lo, digits)}, {points(hi, digits)}]")
