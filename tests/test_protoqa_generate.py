"""Generation baseline: prompt rules, completion cleaning, seeded sampling on a tiny model."""
import pytest

from csbench.protoqa.baseline import clean_completion, question_to_prompt, rank_answers


@pytest.mark.parametrize("q,prompt", [
    ("name something people usually do before they leave the house for work.",
     "One thing people usually do before they leave the house for work is"),
    ("tell me something you bring to the beach.", "One thing you bring to the beach is"),
    ("name a sport played with a ball.", "One sport played with a ball is"),
    ("name an animal you might see on a farm.", "One animal you might see on a farm is"),
    ("how can you tell that it is going to rain?", "One way to tell that it is going to rain is"),
    ("give me a word people say when surprised.", "One word people say when surprised is"),
    ("at the beach, name something that protects you from sun.",
     "At the beach, one thing that protects you from sun is"),
    ("what do people eat?", "What do people eat? One answer is"),
])
def test_prompt_rules(q, prompt):
    assert question_to_prompt(q) == prompt


def test_clean_and_rank():
    assert clean_completion(" a Shower. Then breakfast") == "a shower"
    samples = ["shower.", "Breakfast!", "shower and more", "shower", "", "breakfast\nx", "coffee"]
    assert rank_answers(samples, top=2) == ["shower", "breakfast"]   # tie: first seen first
    assert rank_answers(samples + ["breakfast"], top=1) == ["breakfast"]


def test_sampling_is_seeded_and_order_independent(tiny_lm_dir):
    from csbench.lm.generate import sample_completions
    from csbench.models.load import load_causal_lm

    model, tok = load_causal_lm(tiny_lm_dir, "cpu", "float32")
    kw = dict(max_new_tokens=4, temperature=0.69, top_p=0.9, seed=3, chunk=3)
    a = sample_completions(model, tok, ["One thing is", "One sport is"], 5, **kw)
    b = sample_completions(model, tok, ["One sport is", "One thing is"], 5, **kw)
    assert len(a) == 2 and all(len(x) == 5 for x in a)
    assert a[0] == b[1] and a[1] == b[0]


def test_prompt_past_the_window_is_refused_naming_the_question(tiny_lm_dir):
    """A prompt whose tokens plus max_new_tokens exceed the window (512 for tiny-gpt2) is
    refused before anything is sampled (lm-evaluation-harness would left-truncate it)."""
    from csbench.lm.backend import sample
    from csbench.lm.base import RequestError

    prompts = [question_to_prompt("name a fruit."), question_to_prompt("name a colour.")]
    kw = dict(lm={"device": "cpu"}, seed=1, chunk=2, names=["question q1", "question q2"])
    assert len(sample(tiny_lm_dir, prompts, 2, max_new_tokens=4, **kw)) == 2
    with pytest.raises(RequestError, match=r"prompt 0 \(question q1\) 'One fruit is': \d+ prompt "
                                           r"tokens \+ max_new_tokens 510 exceed the model's "
                                           r"window of 512 tokens"):
        sample(tiny_lm_dir, prompts, 2, max_new_tokens=510, **kw)
    long = question_to_prompt("name something " + "very " * 600 + "big.")
    with pytest.raises(RequestError, match=r"prompt 1 \(question q2\) 'One thing very very"):
        sample(tiny_lm_dir, [prompts[0], long], 2, max_new_tokens=4, **kw)


def test_cut_policies_on_hand_made_samples():
    """keep: as today; drop: cut samples give no answer; complete_words: a cut sample loses its
    last word unless its text ends after it, and one left empty gives no answer."""
    from csbench.protoqa.baseline import CUT_POLICIES, sample_answer

    samples = [(" a sword.", False), (" a sword", False), (" to fill up their air fres", True),
               (" a sword, a sh", True), (" a smartphone,", True), (" pizza", True),
               (" a sword ", True), ("", True)]
    want = {
        "keep": ["a sword", "a sword", "to fill up their air fres", "a sword a sh",
                 "a smartphone", "pizza", "a sword", ""],
        "drop": ["a sword", "a sword", "", "", "", "", "", ""],
        "complete_words": ["a sword", "a sword", "to fill up their air", "a sword a",
                           "a smartphone", "", "a sword", ""],
    }
    assert set(want) == set(CUT_POLICIES)
    for policy, answers in want.items():
        assert [sample_answer(t, c, policy) for t, c in samples] == answers, policy
    texts, cut = [t for t, _ in samples], [c for _, c in samples]
    assert rank_answers(texts, 3, cut, "keep") == ["a sword", "to fill up their air fres",
                                                   "a sword a sh"]
    assert rank_answers(texts, 3, cut, "drop") == ["a sword"]
    assert rank_answers(texts, 3, cut, "complete_words") == ["a sword", "to fill up their air",
                                                             "a sword a"]
    assert rank_answers(texts, 3) == rank_answers(texts, 3, cut, "keep")   # the former lists
    with pytest.raises(ValueError, match="cut policy must be one of keep, drop, complete_words"):
        sample_answer("x", True, "trim")
    with pytest.raises(ValueError, match="2 samples but 1 cut flags"):
        rank_answers(["a", "b"], 3, [True])


def test_paper_recipe_counts_answers_without_stop_words():
    """The paper's recipe: the answer is the text before the first "." (not "!", "?" or a
    newline), folded, with NLTK's English stop words removed, so "A sword." and "sword" are one
    answer; a sample left without a word is no answer (not an empty one)."""
    from csbench.protoqa.baseline import sample_answer

    assert clean_completion(" A Sword.", "paper") == "sword"
    assert clean_completion(" a sword! and a shield. then", "paper") == "sword shield"
    assert clean_completion(" a sword! and a shield. then", "raw") == "a sword"
    assert clean_completion(" to find a recipe that", "paper") == "find recipe"
    assert clean_completion(" don't know.", "paper") == "know"   # "don t": both in the list
    samples = [" a sword.", " sword", " the sword.", " it is.", " a kernel.", " the.", " swords."]
    assert rank_answers(samples, 5, recipe="paper") == ["sword", "kernel", "swords"]
    assert rank_answers(samples, 5) == ["a sword", "sword", "the sword", "it is", "a kernel"]
    # cut samples: complete_words drops the text's last word before the stop words go
    assert sample_answer(" a kind of the", True, "complete_words", "paper") == "kind"
    assert sample_answer(" a big red ki", True, "complete_words", "paper") == "big red"
    assert sample_answer(" a big red ki", True, "keep", "paper") == "big red ki"
    assert sample_answer(" a big red ki", True, "drop", "paper") == ""
    with pytest.raises(ValueError, match="recipe must be one of paper, raw"):
        clean_completion("x", "gpt2")


def test_recipe_settings():
    """A null max_new_tokens / cut_policy takes the recipe's value; a set one stays."""
    from csbench.protoqa.baseline import SENTENCE_ENDS, generation_settings

    g = {"recipe": "paper", "max_new_tokens": None, "cut_policy": None, "top": 20}
    assert generation_settings(g) == {**g, "max_new_tokens": 10, "cut_policy": "drop",
                                      "stop": ["."]}
    assert generation_settings({**g, "recipe": "raw"}) == {
        **g, "recipe": "raw", "max_new_tokens": 20, "cut_policy": "complete_words",
        "stop": list(SENTENCE_ENDS)}
    assert generation_settings({**g, "max_new_tokens": 6, "cut_policy": "keep"}) == {
        **g, "max_new_tokens": 6, "cut_policy": "keep", "stop": ["."]}


def test_nltk_stop_words_are_nltks_english_list():
    """The pinned list is NLTK's (198 words: the 179 of the list before 2023 plus 19
    contractions); after folding, the 19 never occur as tokens and each folds into words of the
    list, so the paper's recipe counts the same answers with either revision. Not scikit-learn's
    list (csbench.text.stop_words)."""
    from csbench.text import NLTK_STOP_WORDS, fold, stop_words

    added = {"he'd", "he'll", "he's", "i'd", "i'll", "i'm", "i've", "it'd", "it'll", "she'd",
             "she'll", "they'd", "they'll", "they're", "they've", "we'd", "we'll", "we're",
             "we've"}
    assert len(NLTK_STOP_WORDS) == 198 and added <= NLTK_STOP_WORDS
    assert len(NLTK_STOP_WORDS - added) == 179
    assert all(set(fold(w).split()) <= NLTK_STOP_WORDS - added for w in added)
    assert {"i", "me", "the", "a", "don", "t", "mustn't", "wouldn"} <= NLTK_STOP_WORDS
    assert NLTK_STOP_WORDS != stop_words() and "one" not in NLTK_STOP_WORDS


def test_samples_table_and_ranked_lists():
    """The generated table keeps every sample with its question id, index and cut flag; the
    ranked lists come from it, questions in order, under each policy."""
    from csbench.protoqa.baseline import ranked_lists, samples_table

    df = samples_table("m", ["q2", "q1"], [[" tea.", " te"], [" milk", " milk."]],
                       [[False, True], [True, False]])
    assert list(df.columns) == ["model", "question_id", "sample", "text", "cut"]
    assert df["cut"].dtype == bool and df["sample"].tolist() == [0, 1, 0, 1]
    assert ranked_lists(df, 5, "keep") == {"q2": ["tea", "te"], "q1": ["milk"]}
    assert ranked_lists(df, 5, "drop") == {"q2": ["tea"], "q1": ["milk"]}
    assert ranked_lists(df.iloc[::-1], 5, "complete_words") == {"q1": ["milk"], "q2": ["tea"]}
    with pytest.raises(ValueError, match="question q1: 1 samples but 2 cut flags"):
        samples_table("m", ["q1"], [["a"]], [[True, False]])


def test_rank_job_applies_the_cut_policy_to_the_stored_samples(tmp_path, monkeypatch):
    """protoqa_rank builds the ranked lists from protoqa_generate's samples table (checked to be
    the model's), so changing the policy never samples again."""
    import json

    from test_compute_columns import Files, run_script

    from csbench.errors import InputError
    from csbench.io import write_parquet
    from csbench.protoqa.baseline import samples_table
    from csbench.provenance import SERVED_COMPUTE, stamp

    model_dir = tmp_path / "model"
    model_dir.mkdir()
    table = samples_table("m", ["q1", "q2"], [[" a sword.", " a sword", " to fill up their air"
                                               " fres"], [" tea", " tea."]],
                          [[False, False, True], [True, False]])
    samples = tmp_path / "samples.parquet"
    write_parquet(stamp(table, model_dir, SERVED_COMPUTE,
                        {"prompt_format": "raw", "system_instruction": ""}), samples)
    got = {}
    for policy in ("keep", "drop", "complete_words"):
        out = tmp_path / f"{policy}.json"
        run_script("protoqa_rank", tmp_path, monkeypatch, Files(samples=str(samples)),
                   Files(ranked=str(out)), {"top": 5, "cut_policy": policy, "recipe": "raw"},
                   wildcards={"model": "m"})
        got[policy] = json.loads(out.read_text())
    assert got["keep"] == {"q1": ["a sword", "to fill up their air fres"], "q2": ["tea"]}
    assert got["drop"] == {"q1": ["a sword"], "q2": ["tea"]}
    assert got["complete_words"] == {"q1": ["a sword", "to fill up their air"], "q2": ["tea"]}
    out = tmp_path / "paper.json"  # the paper's counting of the same samples: stop words removed
    run_script("protoqa_rank", tmp_path, monkeypatch, Files(samples=str(samples)),
               Files(ranked=str(out)), {"top": 5, "cut_policy": "drop", "recipe": "paper"},
               wildcards={"model": "m"})
    assert json.loads(out.read_text()) == {"q1": ["sword"], "q2": ["tea"]}
    with pytest.raises(InputError, match="not only of other"):
        run_script("protoqa_rank", tmp_path, monkeypatch, Files(samples=str(samples)),
                   Files(ranked=str(tmp_path / "x.json")),
                   {"top": 5, "cut_policy": "drop", "recipe": "raw"}, wildcards={"model": "other"})
