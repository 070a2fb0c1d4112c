"""Any yes/no data set as a 20Q-style test set (twentyq.benchmarks: csqa2 or a user's set)."""
from __future__ import annotations

import pandas as pd
import pytest

from csbench.config import SCHEMA, validate
from csbench.twentyq.prompts import build_prompts, sample_shots
from csbench.twentyq.workflow import benchmarks, targets, yesno_names, yesno_wildcard
from csbench.twentyq.yesno import split_items, yesno_items


def yesno_table(n=6, split="dev"):
    """A normalised yes/no table (csbench.datasets)."""
    return pd.DataFrame({
        "id": [f"q{i}" for i in range(n)],
        "question": [f"Is thing {i} a thing?" for i in range(n)],
        "answer": ["yes" if i % 2 else "no" for i in range(n)],
        "topic": [f" topic{i} " if i != 3 else None for i in range(n)],
        "split": split,
    })


def test_yesno_items_map_topic_question_answer_and_drop_items_without_topic():
    items, dropped = yesno_items(yesno_table())
    assert dropped == 1 and list(items["id"]) == ["q0", "q1", "q2", "q4", "q5"]
    assert list(items.columns) == ["id", "source_split", "subject", "question", "label"]
    assert items.loc[0, "subject"] == "topic0" and set(items["source_split"]) == {"dev"}
    assert list(items["label"]) == ["no", "yes", "no", "no", "yes"]


def test_a_set_without_any_topic_is_named():
    with pytest.raises(ValueError, match="datasets.mine: no item has a topic"):
        yesno_items(yesno_table().assign(topic=None), "mine")


def test_pool_is_the_fewshot_set_else_the_train_split_else_the_items():
    table = pd.concat([yesno_table(6, "train"), yesno_table(4, "test").assign(
        id=lambda d: "t" + d["id"])], ignore_index=True)
    train, test, dropped = split_items(table, None)
    assert set(train["source_split"]) == {"train"} and set(test["source_split"]) == {"test"}
    assert dropped == {"test": 1, "train": 1}
    pool = yesno_table(8, "test").assign(id=lambda d: "p" + d["id"])
    train, test, _ = split_items(table, pool)
    assert train["id"].str.startswith("p").all() and set(train["source_split"]) == {"train"}
    assert len(test) == 3  # train rows are never scored (a named pool replaces them as the pool)


def test_an_item_is_never_its_own_few_shot_example():
    items, _ = yesno_items(yesno_table(12).assign(topic="t"))
    shots = sample_shots(items, len(items), seed=0, item_ids=list(items["id"]))
    for (q, s) in zip(items["question"], shots):
        assert q not in [x[1] for x in s]
    disjoint = sample_shots(items, 5, seed=3, item_ids=[f"x{i}" for i in range(5)])
    assert disjoint == sample_shots(items, 5, seed=3)  # disjoint pools draw as before
    smallest = items.head(4).assign(label=["yes", "no", "yes", "no"])  # 2 yes, 2 no: enough
    assert len(sample_shots(smallest, 3, item_ids=["a", "b", "c"])[0]) == 4


def test_20q_prompts_apply_to_yesno_items():
    train, _ = yesno_items(yesno_table(8).assign(topic="cat"))
    test, _ = yesno_items(yesno_table(2).assign(topic="dog", id=["a", "b"]))
    zero = build_prompts(test, train, "zero_shot")
    assert "Topic: dog\nQuestion: Is thing 0 a thing?\nAnswer:" in zero[0].raw()
    assert "Topic:" not in build_prompts(test, train, "few_shot_no_topic", seed=1)[0].raw()


def test_benchmarks_name_twentyq_or_yesno_data_sets():
    cfg = validate({"datasets": {"mine": {"kind": "yesno", "path": "x.tsv"}}}, SCHEMA)
    assert yesno_names(cfg["datasets"])[:1] == ["twentyq"] and "mine" in yesno_names(cfg["datasets"])
    assert benchmarks({"benchmarks": ["twentyq", "mine"]}, cfg["datasets"]) == ["twentyq", "mine"]
    with pytest.raises(ValueError, match="'wsc' is a winograd data set"):
        benchmarks({"benchmarks": ["wsc"]}, cfg["datasets"])
    with pytest.raises(ValueError, match="'nope' is not under datasets"):
        benchmarks({"benchmarks": ["nope"]}, cfg["datasets"])


def test_targets_per_benchmark():
    only_csqa2 = targets(["m"], ["csqa2"])
    assert only_csqa2 == ["results/twentyq/csqa2/metrics.tsv",
                          "results/twentyq/csqa2/nll_by_topic_frequency.png"]
    both = targets(["m"], ["twentyq", "csqa2", "mine"])
    assert "results/twentyq/split/statistics.tsv" in both and "results/twentyq/metrics.tsv" in both
    assert "results/twentyq/mine/metrics.tsv" in both
    assert yesno_wildcard(["twentyq", "csqa2", "mine"]).split("|") == ["", "csqa2/", "mine/"]
