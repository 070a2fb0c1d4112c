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
    from csbench.models import load_causal_lm

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
    kw = dict(device="cpu", seed=1, chunk=2, names=["question q1", "question q2"])
    assert len(sample(tiny_lm_dir, prompts, 2, max_new_tokens=4, **kw)) == 2
    with pytest.raises(RequestError, match=r"prompt 0 \(question q1\) 'One fruit is': \d+ prompt "
                                           r"tokens \+ max_new_tokens 510 exceed the model's "
                                           r"window of 512 tokens"):
        sample(tiny_lm_dir, prompts, 2, max_new_tokens=510, **kw)
    long = question_to_prompt("name something " + "very " * 600 + "big.")
    with pytest.raises(RequestError, match=r"prompt 1 \(question q2\) 'One thing very very"):
        sample(tiny_lm_dir, [prompts[0], long], 2, max_new_tokens=4, **kw)
