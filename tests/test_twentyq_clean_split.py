"""20Q cleaning steps and overlap-free split admission rules."""
import numpy as np
import pandas as pd
import pytest

from csbench.twentyq import clean, split


def rows(*recs, split_name="train"):
    out = []
    for i, r in enumerate(recs):
        subject, question = r[0], r[1]
        out.append({"id": f"{split_name}-{i}", "split": split_name, "subject": subject,
                    "question": question, "score": r[2] if len(r) > 2 else 3,
                    "majority": r[3] if len(r) > 3 else True})
    return pd.DataFrame(out)


def test_score_step_keeps_max_only():
    df = rows(("dog", "Is it an animal?", 3), ("dog", "Can it fly?", 2), ("cat", "Is it big?", 0))
    kept, counts = clean.clean(df, steps=["score"])
    assert list(kept["question"]) == ["Is it an animal?"]
    assert counts.set_index("step").loc["score", "removed"] == 2


def test_it_step_whole_word_any_case():
    df = rows(("dog", "Is IT an animal?"), ("dog", "Is iteration needed?"), ("dog", "Is the dog big?"),
              ("dog", "it barks?"))
    kept, _ = clean.clean(df, steps=["it"])
    assert list(kept["question"]) == ["Is IT an animal?", "it barks?"]


def test_dedupe_on_subject_and_stemmed_bag_of_words():
    df = rows(("dog", "Is it an animal?"), ("Dog", "is it animals"), ("cat", "Is it an animal?"),
              ("dog", "Is it a big animal?"))
    kept, counts = clean.clean(df, steps=["dedupe"])
    assert list(kept["id"]) == ["train-0", "train-2", "train-3"]
    assert counts.iloc[-1]["removed"] == 1


def test_wordnet_step_multiword_subjects():
    df = rows(("ice cream", "Is it cold?"), ("flibbertigibbetxyz", "Is it cold?"), ("dog", "Is it cold?"))
    kept, _ = clean.clean(df, steps=["wordnet"])
    assert list(kept["subject"]) == ["ice cream", "dog"]


def test_count_table_percentages_and_order():
    df = rows(("dog", "Is it an animal?", 3), ("dog", "Is it an animal", 3), ("dog", "Is dog?", 3),
              ("dog", "Is it big?", 1))
    kept, counts = clean.clean(df)
    assert list(counts["step"]) == ["input", "score", "it", "dedupe", "wordnet"]
    assert list(counts["kept"]) == [4, 3, 2, 1, 1]
    assert counts.loc[1, "removed_pct"] == pytest.approx(25.0)
    assert counts.loc[4, "kept_pct_of_input"] == pytest.approx(25.0)
    with pytest.raises(ValueError):
        clean.clean(df, steps=["bogus"])


def fake_encoder(groups):
    """Texts in the same group get the same unit vector; others are orthogonal."""
    slots = {}

    def encode(texts):
        out = np.zeros((len(texts), 256), np.float32)
        for i, t in enumerate(texts):
            out[i, slots.setdefault(groups.get(t, t), len(slots))] = 1.0
        return out
    return encode


def split_table():
    train = rows(("dog", "Is it an animal?"), ("bicycle", "Does it have wheels?", 3, False))
    dev = rows(("airplane", "Is it an animal??"),          # (a) question bag of words
               ("Dog", "Does it bark?"),                   # (a) topic bag of words
               ("domestic dog", "Is it loud?"),            # (b) shares synset dog.n.01
               ("spoon", "Is it some kind of animal?"),    # (c) near-duplicate question
               ("chair", "Is it made of wood?"),           # admitted
               ("kettle", "Is it used in the kitchen?"),   # admitted
               split_name="dev")
    return pd.concat([train, dev], ignore_index=True)


def test_each_admission_rule_rejects_its_item():
    enc = fake_encoder({"Is it some kind of animal?": "Is it an animal?"})
    tr, te, counts = split.build_split(split_table(), enc, n_train_questions=10, n_test=10, seed=1)
    assert set(tr["subject"]) == {"dog", "bicycle"}
    assert set(te["subject"]) == {"chair", "kettle"}
    c = counts.set_index("step")["rejected"]
    assert (c["lexical"], c["wordnet"], c["embedding"]) == (2, 1, 1)
    assert set(te["label"]) == {"yes"} and set(tr["label"]) == {"yes", "no"}


def test_rules_can_be_disabled_and_cap_is_applied():
    enc = fake_encoder({})
    _, te, counts = split.build_split(split_table(), enc, n_train_questions=10, n_test=3, seed=0,
                                      rules=["lexical"])
    assert len(te) == 3 and counts.iloc[-1]["rejected"] == 1
    _, te_all, _ = split.build_split(split_table(), None, n_train_questions=10, n_test=100, rules=[])
    assert len(te_all) == 6


def test_embedding_threshold_is_configurable():
    enc = fake_encoder({"Is it some kind of animal?": "Is it an animal?"})
    _, te, _ = split.build_split(split_table(), enc, n_train_questions=10, n_test=10,
                                 max_similarity=1.0)
    assert "spoon" in set(te["subject"])


def test_sample_train_counts_distinct_questions_and_is_seeded():
    df = rows(*[(f"t{i}", f"Is it number {i % 5}?") for i in range(20)])
    a = split.sample_train(df, 3, seed=7)
    b = split.sample_train(df, 3, seed=7)
    assert a["question"].nunique() == 3 and len(a) == 12
    assert list(a["id"]) == list(b["id"])


def test_statistics_layout():
    df = pd.DataFrame({"subject": ["dog", "cat", "dog"], "question": ["Is it big?", "Is it big?", "Can it fly?"],
                       "label": ["yes", "no", "yes"]})
    s = split.statistics({"train": df}).iloc[0]
    assert (s["questions"], s["generic_questions"], s["topics"]) == (3, 2, 2)
    assert s["mean_words"] == pytest.approx(3.0) and s["pct_yes"] == pytest.approx(200 / 3)
