"""20Q prompt construction, yes/no metrics and the topic-frequency quartiles."""
import numpy as np
import pandas as pd
import pytest

from csbench.twentyq import prompts, scoring

TRAIN = pd.DataFrame({"subject": ["dog", "cat", "car", "tree", "fish", "rock"],
                      "question": ["Is it alive?", "Does it purr?", "Does it fly?", "Is it tall?",
                                   "Can it walk?", "Is it soft?"],
                      "label": ["yes", "yes", "no", "yes", "no", "no"]})
TEST = pd.DataFrame({"id": ["a", "b"], "subject": ["spoon", "chair"],
                     "question": ["Is it metal?", "Can you sit on it?"], "label": ["yes", "no"]})


def test_zero_shot_prompt_is_the_papers():
    p = prompts.zero_shot("Is it metal?", "spoon").raw()
    assert p == ("You are playing a game of 20 questions.\nAnswer the following question about with "
                 "yes or no.\n\nTopic: spoon\nQuestion: Is it metal?\nAnswer:")
    assert "Topic:" not in prompts.zero_shot("Is it metal?", None).raw()
    assert prompts.zero_shot("Is it metal?", None).raw().endswith(
        "\n\nQuestion: Is it metal?\nAnswer:")


def test_few_shot_two_yes_two_no_seeded():
    p1 = prompts.build_prompts(TEST, TRAIN, "few_shot", seed=3)
    p2 = prompts.build_prompts(TEST, TRAIN, "few_shot", seed=3)
    assert p1 == p2
    body = p1[0].raw()[len(prompts.HEADER):]
    blocks = body.split("\n\n")
    assert len(blocks) == 5
    answers = [b.rsplit("Answer: ", 1)[1] for b in blocks[:4]]
    assert sorted(answers) == ["no", "no", "yes", "yes"]
    assert all(b.startswith("Topic: ") for b in blocks)
    assert blocks[4] == "Topic: spoon\nQuestion: Is it metal?\nAnswer:"
    orders = {tuple(b.rsplit("Answer: ", 1)[1] for b in p.raw().split("\n\n")[1:5])
              for p in prompts.build_prompts(pd.concat([TEST] * 20), TRAIN, "few_shot", seed=0)}
    assert len(orders) > 1  # order is randomised


def test_few_shot_without_topic_drops_every_topic_line():
    p = prompts.build_prompts(TEST, TRAIN, "few_shot_no_topic")[0].raw()
    assert "Topic:" not in p and p.count("Question:") == 5


def test_metrics_and_renormalised_nll():
    lp = {" yes": np.log(0.3), " no": np.log(0.1)}

    def ll(reqs):
        return [(lp[c], 1) for _, c in reqs]

    items = scoring.score_items(ll, TEST, TRAIN, variants=["zero_shot"])
    assert list(items["pred"]) == ["yes", "yes"]
    assert items["p_yes"].iloc[0] == pytest.approx(0.75)
    m = scoring.metrics(items).iloc[0]
    assert m["accuracy"] == pytest.approx(0.5)
    assert m["f1"] == pytest.approx(2 / 3)
    assert m["nll"] == pytest.approx((-np.log(0.75) - np.log(0.25)) / 2)


def test_topic_frequency_quartiles():
    topics = [f"t{i}" for i in range(8)]
    freq = scoring.topic_frequency(lambda reqs: [(-float(i), 2) for i in range(len(reqs))], topics + topics)
    assert list(freq["topic_xent"]) == [float(i) for i in range(8)]
    items = pd.DataFrame({"subject": topics, "nll": np.arange(8.0), "variant": "zero_shot"})
    q = scoring.nll_by_quartile(items, freq)
    assert list(q["quartile"]) == ["Q1", "Q1", "Q2", "Q2", "Q3", "Q3", "Q4", "Q4"]


def test_scoring_with_the_lm_engine(tiny_lm_dir, tmp_path):
    from csbench.lm import open_scorer

    scorer = open_scorer(tiny_lm_dir, {"device": "cpu", "dtype": "float32", "batch_size": 8})
    items = scoring.score_items(scorer.loglikelihood, TEST, TRAIN, variants=["zero_shot", "few_shot"])
    assert len(items) == 4 and items["p_yes"].between(0, 1).all()
    freq = scoring.topic_frequency(scorer.loglikelihood, TEST["subject"])
    assert (freq["topic_xent"] > 0).all()
    per = {"tiny": scoring.nll_by_quartile(items, freq)}
    scoring.plot_nll_by_quartile(per, tmp_path / "f.png")
    assert (tmp_path / "f.png").stat().st_size > 0
