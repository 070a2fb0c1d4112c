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
