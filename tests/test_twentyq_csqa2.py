"""CSQA2 dev as a 20Q-style yes/no test set (twentyq.benchmarks: csqa2)."""
from __future__ import annotations

import pandas as pd
import pytest

from csbench.twentyq.csqa2 import sample, yesno_items
from csbench.twentyq.prompts import build_prompts
from csbench.twentyq.workflow import BENCHMARK_DIRS, YESNO_WILDCARD, targets


def csqa2_table(n=6):
    return pd.DataFrame({
        "id": [f"q{i}" for i in range(n)],
        "question": [f"Is thing {i} a thing?" for i in range(n)],
        "answer": ["yes" if i % 2 else "no" for i in range(n)],
        "confidence": [1.0] * n,
        "topic_prompt": [f" topic{i} " if i != 3 else None for i in range(n)],
        "relational_prompt": [None] * n,
    })


def test_yesno_items_map_topic_question_answer_and_drop_items_without_topic():
    items, dropped = yesno_items(csqa2_table(), "dev")
    assert dropped == 1 and list(items["id"]) == ["q0", "q1", "q2", "q4", "q5"]
    assert list(items.columns) == ["id", "source_split", "subject", "question", "label"]
    assert items.loc[0, "subject"] == "topic0" and set(items["source_split"]) == {"dev"}
    assert list(items["label"]) == ["no", "yes", "no", "no", "yes"]


def test_yesno_items_reject_other_answers():
    t = csqa2_table()
    t.loc[0, "answer"] = "maybe"
    with pytest.raises(ValueError, match="yes/no"):
        yesno_items(t, "dev")


def test_sample_is_seeded_and_keeps_order():
    items, _ = yesno_items(csqa2_table(40).assign(topic_prompt="t"), "dev")
    a, b = sample(items, 10, 3), sample(items, 10, 3)
    assert a.equals(b) and len(a) == 10
    assert list(a["id"]) == sorted(a["id"], key=lambda s: int(s[1:]))
    assert sample(items, None, 0).equals(items)


def test_20q_prompts_apply_to_csqa2_items():
    train, _ = yesno_items(csqa2_table(8).assign(topic_prompt="cat"), "train")
    test, _ = yesno_items(csqa2_table(2).assign(topic_prompt="dog"), "dev")
    zero = build_prompts(test, train, "zero_shot")
    assert "Topic: dog\nQuestion: Is thing 0 a thing?\nAnswer:" in zero[0].raw()
    assert "Topic:" not in build_prompts(test, train, "few_shot_no_topic", seed=1)[0].raw()


def test_targets_per_benchmark():
    only_csqa2 = targets(["m"], ["csqa2"])
    assert only_csqa2 == ["results/twentyq/csqa2/metrics.tsv",
                          "results/twentyq/csqa2/nll_by_topic_frequency.png"]
    both = targets(["m"], ["twentyq", "csqa2"])
    assert "results/twentyq/split/statistics.tsv" in both and "results/twentyq/metrics.tsv" in both
    assert YESNO_WILDCARD.split("|") == ["", "csqa2/"] and set(BENCHMARK_DIRS) == {"twentyq", "csqa2"}
