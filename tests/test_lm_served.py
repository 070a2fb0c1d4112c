"""Served models (csbench.lm.served) against a fake OpenAI-compatible server: spec checks,
scoring, caching and resume, sampling, and each failure (bad URL, wrong model name, 401, no
log-probs, 5xx/429 bursts, a server that dies mid-run)."""
from __future__ import annotations

import json
import re

import pytest
from fake_openai import FakeServer, expected, free_port, token_logprob, tokens

from csbench.errors import ConfigError
from csbench.lm import open_scorer
from csbench.lm.backend import sample
from csbench.lm.served import Endpoint, ServedError, ServedScorer
from csbench.modelspec import check_config_models, parse
from csbench.models.materialise import materialise
from csbench.provenance import provenance, provenance_columns

PROBE = "The sun rises in the east and sets in the west"
FAST = dict(max_concurrency=3, timeout=5, retries=2, backoff=0.01)
REQS = [("The trophy would not fit in the suitcase because the trophy", " was too big."),
        ("The trophy would not fit in the suitcase because the suitcase", " was too big."),
        ("Alice thanked Bob because", " he helped her."),
        ("Question: is it alive? Answer:", " yes"),
        ("Question: is it alive? Answer:", " no"),
        ("Question: is it alive? Answer: ", "no"),   # trailing space moves to the continuation
        ("Alice thanked Bob because", " he helped her.")]  # a duplicate


def scorer(fake, tmp_path=None, **kw):
    return ServedScorer(Endpoint(fake.base_url, fake.model, kw.pop("api_key_env", None),
                                 kw.pop("empty_context", None)),
                        cache_dir=None if tmp_path is None else tmp_path / "cache", **{**FAST, **kw})


def served_dir(tmp_path, base_url, model="fake-lm", **extra):
    out = tmp_path / "models" / "served"
    materialise({"openai": {"base_url": base_url, "model": model, **extra}}, out)
    return out


# ---------------------------------------------------------------- specs and provenance
def test_spec_parses_and_materialises_without_any_key(tmp_path, monkeypatch):
    monkeypatch.setenv("CSB_TEST_KEY", "s3cret-value")
    spec = {"openai": {"base_url": "http://127.0.0.1:9/v1/", "model": "m",
                       "api_key_env": "CSB_TEST_KEY"}}
    ms = parse(spec, "models.lm.x")
    assert ms.kind == "openai" and ms.label() == "openai:m@http://127.0.0.1:9/v1"
    out = served_dir(tmp_path, "http://127.0.0.1:9/v1", "m", api_key_env="CSB_TEST_KEY")
    text = (out / "provenance.json").read_text()
    assert "s3cret" not in text and "CSB_TEST_KEY" in text
    assert provenance(out)["served"] is True
    cols = provenance_columns(out)
    assert cols["model_source"] == "openai:m@http://127.0.0.1:9/v1" and not cols["random_model"]


@pytest.mark.parametrize("spec, message", [
    ({"openai": {"base_url": "localhost:8000", "model": "m"}}, r"is not an http\(s\) URL"),
    ({"openai": {"base_url": "http://h/v1"}}, "model's name is required"),
    ({"openai": {"base_url": "http://h/v1", "model": "m", "api_key": "sk-1"}}, "never put a key"),
    ({"openai": {"base_url": "http://h/v1", "model": "m", "api_key_env": "1X"}}, "not an environment"),
    ({"openai": {"base_url": "http://h/v1", "model": "m", "temperature": 1}}, "unknown key"),
    ({"openai": {"base_url": "http://h/v1", "model": "m"}, "sha256": "0" * 64}, "no other key"),
])
def test_bad_served_specs_fail_at_parse_time(spec, message):
    with pytest.raises(ConfigError, match=message):
        parse(spec, "models.lm.x")


def test_served_specs_are_causal_lms_only():
    with pytest.raises(ConfigError, match="models.qa.q: served"):
        check_config_models({"models": {"lm": {}, "qa": {"q": {"openai": {
            "base_url": "http://h/v1", "model": "m"}}}}})


def test_missing_key_variable_is_named(monkeypatch):
    monkeypatch.delenv("CSB_NO_SUCH_KEY", raising=False)
    with pytest.raises(ServedError, match="CSB_NO_SUCH_KEY"):
        ServedScorer(Endpoint("http://127.0.0.1:9/v1", "m", "CSB_NO_SUCH_KEY"))


# ---------------------------------------------------------------- scoring, cache, resume
def test_loglikelihood_matches_the_servers_token_logprobs(tmp_path):
    with FakeServer() as fake:
        s = scorer(fake, tmp_path)
        got = s.loglikelihood(REQS)
    for (c, x), (lp, n) in zip(REQS, got):
        want = expected(c, x)
        assert n == want[1] and lp == pytest.approx(want[0], abs=1e-9)
    assert got[5] == got[4]  # the harness's whitespace convention
    # each distinct prompt once (plus the feature probe); duplicates never sent
    assert sum(fake.prompts.values()) == len(set(c + x for c, x in REQS)) + 1


def test_cache_answers_a_rerun_without_any_request(tmp_path):
    with FakeServer() as fake:
        first = scorer(fake, tmp_path).loglikelihood(REQS, keys=[f"k{i}" for i in range(len(REQS))])
        sent = fake.completions
        again = scorer(fake, tmp_path)
        assert again.loglikelihood(REQS, keys=[f"k{i}" for i in range(len(REQS))]) == first
        assert fake.completions == sent  # all cached: nothing sent, not even the probe
        assert again.stats["cached"] == len(REQS)


def test_open_scorer_picks_the_served_backend(tmp_path):
    with FakeServer() as fake:
        d = served_dir(tmp_path, fake.base_url)
        s = open_scorer(d, {"served": FAST}, tmp_path / "cache")
        assert s.backend == "served" and "fake-lm" in s.describe()
        assert s.compute() == {"compute_device": "served", "compute_dtype": "served"}
        assert s.loglikelihood(REQS[:1])[0] == pytest.approx(expected(*REQS[0]))


def test_retries_5xx_and_429_then_succeeds(tmp_path):
    with FakeServer() as fake:
        s = scorer(fake, tmp_path, retries=3)
        fake.fail_next, fake.fail_status = 2, 503
        assert s.loglikelihood(REQS[:2]) == [pytest.approx(expected(*r)) for r in REQS[:2]]
        fake.fail_next, fake.fail_status = 2, 429
        assert s.loglikelihood(REQS[2:4]) == [pytest.approx(expected(*r)) for r in REQS[2:4]]
        assert s.stats["retries"] == 4


def test_server_dying_mid_run_fails_clearly_and_resumes_to_the_same_results(tmp_path):
    many = [(f"Item {i} says that the answer is", f" option {j}.") for i in range(12)
            for j in range(3)]
    with FakeServer() as ref:
        want = scorer(ref).loglikelihood(many)
    port = free_port()
    with FakeServer(port=port) as fake:
        fake.die_after = 15
        with pytest.raises(ServedError, match="no answer after 3 tries"):
            scorer(fake, tmp_path).loglikelihood(many)
        done_before = sum(fake.prompts.values())
    assert 0 < done_before < len(many)
    with FakeServer(port=port) as again:  # the server is back: resume
        got = scorer(again, tmp_path).loglikelihood(many)
        resent = set(again.prompts) - {PROBE}
    assert got == want
    # nothing answered before the failure is sent again (the probe is the start-of-job check)
    assert len(resent) == len(many) - (done_before - 1)


# ---------------------------------------------------------------- failures
def test_bad_endpoint_url_fails_with_the_url(tmp_path):
    url = f"http://127.0.0.1:{free_port()}/v1"
    s = ServedScorer(Endpoint(url, "m"), **FAST)
    with pytest.raises(ServedError, match=rf"{url}/models: no answer after 3 tries .*is the server "
                                          "running"):
        s.loglikelihood(REQS[:1])


def test_wrong_path_is_a_404_naming_base_url(tmp_path):
    with FakeServer() as fake:
        s = ServedScorer(Endpoint(fake.base_url.replace("/v1", "/api"), fake.model), **FAST)
        with pytest.raises(ServedError, match="404.*base_url"):
            s.loglikelihood(REQS[:1])


def test_wrong_model_name_names_what_the_server_serves():
    with FakeServer(models=["smollm2", "other"]) as fake:
        s = ServedScorer(Endpoint(fake.base_url, "smolm2"), **FAST)
        with pytest.raises(ServedError, match="does not serve model 'smolm2'; it serves: "
                                              "smollm2, other"):
            s.loglikelihood(REQS[:1])
        assert fake.completions == 0


def test_401_names_the_variable_never_the_key(monkeypatch):
    monkeypatch.setenv("CSB_TEST_KEY", "wrong-key-123")
    with FakeServer(key="right-key") as fake:
        s = ServedScorer(Endpoint(fake.base_url, fake.model, "CSB_TEST_KEY"), **FAST)
        with pytest.raises(ServedError) as err:
            s.loglikelihood(REQS[:1])
        assert "401" in str(err.value) and "$CSB_TEST_KEY" in str(err.value)
        assert "wrong-key-123" not in str(err.value)
        assert fake.headers_seen[-1] == "Bearer wrong-key-123"
        monkeypatch.setenv("CSB_TEST_KEY", "right-key")
        ok = ServedScorer(Endpoint(fake.base_url, fake.model, "CSB_TEST_KEY"), **FAST)
        assert ok.loglikelihood(REQS[:1])[0] == pytest.approx(expected(*REQS[0]))


def test_server_without_logprobs_fails_at_start_naming_the_feature(tmp_path):
    with FakeServer(logprobs=False) as fake:
        d = served_dir(tmp_path, fake.base_url)
        with pytest.raises(ServedError, match="lacks echo with logprobs"):
            open_scorer(d, {"served": FAST}, tmp_path / "cache")
        assert fake.completions == 2  # the probe (greedy token, then echoed), nothing else


def test_empty_context_needs_the_start_token():
    with FakeServer() as fake:
        with pytest.raises(ServedError, match="empty_context"):
            scorer(fake).loglikelihood([("", " cat")])
        got = scorer(fake, empty_context="<bos>").loglikelihood([("", " cat")])
    assert got == [pytest.approx(expected("<bos>", " cat"))]


# ---------------------------------------------------------------- sampling
@pytest.mark.parametrize("honour_n", [True, False])
def test_sampling_with_or_without_n_is_cached(tmp_path, honour_n):
    with FakeServer(honour_n=honour_n) as fake:
        d = served_dir(tmp_path, fake.base_url)
        kw = dict(lm={"served": FAST}, cache_dir=tmp_path / "cache", max_new_tokens=5,
                  temperature=0.7, top_p=0.9, seed=3)
        got = sample(d, ["Name a fruit:", "Name a colour:"], 4, **kw)
        assert [len(x) for x in got] == [4, 4]
        assert all("\n" not in t for x in got for t in x)  # cut at the stop string
        sent = fake.completions
        assert sample(d, ["Name a fruit:", "Name a colour:"], 4, **kw) == got
        assert fake.completions == sent + 1  # the start-of-job probe only


def test_sampling_reports_the_samples_max_tokens_cut(tmp_path):
    """``cut``: finish_reason "length" with no stop string in the text (one cut here, past the
    four sent); cached with the texts; a cached entry without the flags is asked again; a
    server that gives no finish_reason is refused when the flags are wanted."""
    with FakeServer() as fake:
        d = served_dir(tmp_path, fake.base_url)
        kw = dict(lm={"served": FAST}, cache_dir=tmp_path / "cache", max_new_tokens=5, seed=3)
        cut = []
        got = sample(d, ["Name a fruit:"], 3, stop=["zz"], cut=cut, **kw)
        assert cut == [[True, True, True]] and got[0][0].startswith(" answer")
        cut = []
        got = sample(d, ["Name a fruit:"], 3, stop=["\n", "zz1", "zz2", "zz3", "more"], cut=cut,
                     **kw)
        assert cut == [[False, False, False]]   # "\n" sent and cut there; "more" cut here
        sent = fake.completions
        again = []
        assert sample(d, ["Name a fruit:"], 3, stop=["\n", "zz1", "zz2", "zz3", "more"],
                      cut=again, **kw) == got and again == cut
        assert fake.completions == sent + 1     # the start-of-job probe only
        # entries cached before the flags existed: texts only, asked again when flags are wanted
        import sqlite3

        from csbench.lm.cache import samples_checksum

        for f in (tmp_path / "cache").rglob("*"):
            if f.is_file() and f.suffix not in (".lock",) and f.read_bytes()[:6] == b"SQLite":
                con = sqlite3.connect(f)
                for model, req, texts in con.execute("SELECT model, req, texts FROM samples")\
                        .fetchall():
                    old = json.dumps(json.loads(texts)["texts"])
                    con.execute("UPDATE samples SET texts=?, checksum=? WHERE model=? AND req=?",
                                (old, samples_checksum(model, req, old), model, req))
                con.commit()
                con.close()
        sent = fake.completions
        assert sample(d, ["Name a fruit:"], 3, stop=["\n", "zz1", "zz2", "zz3", "more"],
                      **kw) == got
        assert fake.completions == sent + 1     # texts only wanted: the old entry serves
        again = []
        assert sample(d, ["Name a fruit:"], 3, stop=["\n", "zz1", "zz2", "zz3", "more"],
                      cut=again, **kw) == got and again == cut
        assert fake.completions > sent + 2      # asked again for the flags


def test_sampling_without_finish_reason_is_refused_when_cut_is_wanted(tmp_path, monkeypatch):
    from csbench.lm import served

    real = served.ServedScorer._request

    def no_reason(self, path, body=None):
        got = real(self, path, body)
        for c in got.get("choices") or []:
            c.pop("finish_reason", None)
        return got

    monkeypatch.setattr(served.ServedScorer, "_request", no_reason)
    with FakeServer() as fake:
        d = served_dir(tmp_path, fake.base_url)
        kw = dict(lm={"served": FAST}, cache_dir=tmp_path / "cache", max_new_tokens=5, seed=3)
        assert len(sample(d, ["Name a fruit:"], 2, **kw)[0]) == 2      # no flags wanted: fine
        with pytest.raises(ServedError, match=r"finish_reason is None, not 'stop' or 'length'"):
            sample(d, ["Name a fruit:"], 2, cut=[], **kw)


def test_more_than_four_stop_strings_all_cut(tmp_path):
    """The API takes at most 4 stop strings; the others still cut the text (nothing dropped)."""
    with FakeServer() as fake:
        d = served_dir(tmp_path, fake.base_url)
        got = sample(d, ["Name a fruit:"], 3, lm={"served": FAST}, cache_dir=tmp_path / "cache",
                     max_new_tokens=5, seed=3, stop=["\n", "zz1", "zz2", "zz3", "."])
    assert got and all(t.startswith(" answer") and "." not in t and "more" not in t
                       for t in got[0])

def test_no_partial_output_when_scoring_fails(tmp_path):
    """The scripts write results atomically after scoring: a failing server leaves nothing."""
    from csbench.io import write_json

    out = tmp_path / "out.json"
    with FakeServer() as fake:
        fake.die_after = 3
        with pytest.raises(ServedError):
            write_json(scorer(fake).loglikelihood(REQS * 3 + [(f"x{i}", " y") for i in range(9)]),
                       out)
    assert not out.exists() and not list(tmp_path.glob("*.json*"))
    assert json.dumps({}) == "{}"


def test_shifted_echo_logprobs_are_detected_and_fixed_by_the_start_token(tmp_path):
    with FakeServer(shift=True) as fake:
        with pytest.raises(ServedError, match="shifted by a position.*set empty_context"):
            scorer(fake).loglikelihood(REQS[:1])
        s = scorer(fake, empty_context="<s>")
        assert s.loglikelihood(REQS[:2]) == [pytest.approx(expected(*r)) for r in REQS[:2]]
        assert s._prefix == "<s>"
        # an empty context: the start token is the context; the first token's log-prob (which
        # such a server leaves out) comes from the distribution after the start token
        assert s.loglikelihood([("", " cat")]) == [pytest.approx(expected("", " cat"))]


# llama-cpp-python 0.3.36 serving SmolLM2-135M-Instruct (Q4_1), echoing a ChatML prompt with
# max_tokens=1: the start token left out, <|im_end|> written as "", offsets counted without both
CHATML_PROMPT = ("<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by "
                 "Hugging Face<|im_end|>\n<|im_start|>user\nIs a cat an animal? Answer yes or "
                 "no.<|im_end|>\n<|im_start|>assistant\nyes")
CHATML_TOKENS = ["system", "\n", "You", " are", " a", " helpful", " AI", " assistant", " named",
                 " Sm", "ol", "LM", ",", " trained", " by", " H", "ugging", " Face", "", "\n",
                 "user", "\n", "Is", " a", " cat", " an", " animal", "?", " Answer", " yes", " or",
                 " no", ".", "", "\n", "ass", "istant", "\n", "yes", "."]
CHATML_OFFSETS = [0, 6, 7, 10, 14, 16, 24, 27, 37, 43, 46, 48, 50, 51, 59, 62, 64, 70, 75, 75, 76,
                  80, 81, 83, 85, 89, 92, 99, 100, 107, 111, 114, 117, 118, 118, 119, 122, 128,
                  129, 132]


def test_a_llama_cpp_echo_of_a_chat_prompt_is_read_in_the_prompts_positions():
    """In start-token mode a chat prompt (which begins with the start token) is sent once as it
    is, and its continuation ("\nyes": 2 tokens, as the local engine counts) is found although
    the echo's offsets leave the special tokens out."""
    from csbench.lm.served_http import ServedClient
    from csbench.lm.served_score import EchoScoring, sent_positions

    start, end = "<|im_start|>", "<|im_end|>"
    pos = sent_positions(CHATML_PROMPT, CHATML_OFFSETS, CHATML_TOKENS, {"<": [start, end]})
    assert all(CHATML_PROMPT.startswith(t, p) for t, p in zip(CHATML_TOKENS[:-1], pos[:-1]))
    assert [CHATML_PROMPT[p:p + len(end)] for t, p in zip(CHATML_TOKENS, pos) if not t] == [end] * 2
    assert pos[-1] == len(CHATML_PROMPT)  # the generated token
    lps = [None] + [-0.01 * i for i in range(1, len(CHATML_TOKENS))]
    sent = []

    def request(path, body=None):
        sent.append(body["prompt"])
        return {"choices": [{"text": body["prompt"] + ".", "logprobs": {
            "tokens": CHATML_TOKENS, "text_offset": CHATML_OFFSETS, "token_logprobs": lps}}]}

    endpoint = Endpoint("http://127.0.0.1:9/v1", "smollm2", None, start)
    echo = EchoScoring(ServedClient(endpoint, {}, 1, 1.0, 0, 0.0), request, {start, end})
    echo.prefix = start  # start-token mode
    got = echo.score(CHATML_PROMPT[:-len("yes")], "yes")
    assert sent == [CHATML_PROMPT] and got == (pytest.approx(lps[-3] + lps[-2]), 2)


def test_echo_that_does_not_spell_the_prompt_fails_naming_the_token():
    """Offsets that do not count the prompt as sent (special tokens the scorer does not know of,
    echoed as nothing) fail the request instead of scoring the wrong tokens."""
    from csbench.lm.served_http import ServedClient
    from csbench.lm.served_score import EchoScoring

    def request(path, body=None):
        return {"choices": [{"logprobs": {"tokens": CHATML_TOKENS, "text_offset": CHATML_OFFSETS,
                                          "token_logprobs": [None] + [-0.5] * 39}}]}

    endpoint = Endpoint("http://127.0.0.1:9/v1", "smollm2")
    echo = EchoScoring(ServedClient(endpoint, {}, 1, 1.0, 0, 0.0), request)
    with pytest.raises(ServedError, match=r"request 7: the server echoed the token '\.' where the "
                                          r"prompt has .*offsets do not count the prompt as sent"):
        echo.score(CHATML_PROMPT[:-len("yes")], "yes", what="request 7")


@pytest.mark.integration
def test_workflow_job_fails_cleanly_when_the_server_dies_and_resumes(tmp_path):
    """The demo's WinoWhat scoring job against a server that dies mid-run: the job fails naming
    the endpoint and writes nothing; rerun once the server is back, it completes and no request
    answered before the failure is sent again."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    import yaml

    repo = Path(__file__).resolve().parents[1]
    work = tmp_path / "demo"
    (work / "resources").mkdir(parents=True)
    (work / "resources" / "demo").symlink_to(repo / "resources" / "demo")
    port = free_port()
    cfg = yaml.safe_load((repo / "resources/demo/config.yaml").read_text())
    # empty_context: WinoWhat's same-method control scores a sentence whose blank comes first
    # without a context (the fake server's start token is a word of its own)
    cfg["models"]["lm"] = {"fake": {"openai": {"base_url": f"http://127.0.0.1:{port}/v1",
                                               "model": "fake-lm", "empty_context": "<s>"}}}
    cfg["protoqa"]["generation"]["models"] = []
    cfg["twentyq"]["scoring"]["models"] = []
    cfg["winowhat"]["models"] = None  # every LM: the fake one
    cfg.get("contamination", {}).get("signals", {}).pop("models", None)
    cfg["lm"] = {"served": {"retries": 1, "backoff": 0.01, "timeout": 10}}
    (work / "fake.yaml").write_text(yaml.safe_dump(cfg))
    target = "results/winowhat/fake/shards/0-of-1.parquet"
    cmd = [str(Path(sys.executable).with_name("snakemake")), "--snakefile",
           str(repo / "Snakefile"), "--directory", str(work), "--configfile",
           str(work / "fake.yaml"), "--cores", "2", target]
    env = dict(os.environ, NLTK_DATA=str(repo / "resources/nltk_data"), HF_HUB_OFFLINE="1")
    with FakeServer(port=port, start="", specials=("<s>",)) as fake:
        fake.die_after = 40
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        answered = dict(fake.prompts)
    assert proc.returncode != 0
    log = (work / "logs/winowhat/fake/score-0-of-1.log").read_text()
    assert f"http://127.0.0.1:{port}/v1/completions: no answer after 2 tries" in log, log[-3000:]
    assert not (work / target).exists()
    with FakeServer(port=port, start="", specials=("<s>",)) as again:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        resent = set(again.prompts) & (set(answered) - {PROBE})
    assert proc.returncode == 0, proc.stderr[-4000:]
    import pandas as pd

    items = pd.read_parquet(work / target)
    assert items["loglik1"].notna().all()
    assert (items["model_source"] == f"openai:fake-lm@http://127.0.0.1:{port}/v1").all()
    assert (items["compute_device"] == "served").all() and (items["compute_dtype"] == "served").all()
    assert resent == set()


# ---------------------------------------------------------------- invalid values, window (issue 29)
def _stored_keys(tmp_path, fake):
    """The caller keys of the scores cached for the fake endpoint."""
    import sqlite3

    keys = set()
    for path in (tmp_path / "cache").glob("lm-*/*.sqlite"):
        with sqlite3.connect(path) as con:
            keys |= {k for (k,) in con.execute("SELECT key FROM scores")}
    return keys


@pytest.mark.parametrize("value, shown", [
    (float("nan"), "nan.*NaN"), (float("-inf"), "-inf.*infinite"), (float("inf"), "inf.*infinite"),
    (0.5, "0.5.*positive"), ("-0.5", "'-0.5'.*not a number"), (True, "True.*not a number")])
def test_invalid_served_logprob_fails_naming_endpoint_request_value_and_is_not_cached(
        tmp_path, value, shown):
    keys = [f"k{i}" for i in range(len(REQS))]
    with FakeServer() as fake:
        fake.poison = {"Alice thanked Bob because he helped": value}
        s = scorer(fake, tmp_path, max_concurrency=1)
        with pytest.raises(ServedError) as err:
            s.loglikelihood(REQS, keys=keys)
    msg = str(err.value)
    assert f"openai:fake-lm@{fake.base_url}" in msg
    assert "request 2 (key 'k2')" in msg and "he helped her." in msg
    assert re.search(shown, msg), msg
    assert "nothing of this answer was cached" in msg
    assert "k2" not in _stored_keys(tmp_path, fake) and "k6" not in _stored_keys(tmp_path, fake)


def test_logprob_a_hair_above_zero_counts_as_zero(tmp_path):
    with FakeServer() as fake:
        fake.poison = {"Alice thanked Bob because he helped": 5e-5}
        s = scorer(fake, tmp_path)
        got = s.loglikelihood(REQS[2:3])
    ctx, cont = REQS[2]
    want = sum(token_logprob(ctx + cont[:off], tok) for off, tok in tokens(cont)[:-1])
    assert got == [(pytest.approx(want, abs=1e-9), 3)] and s.stats["clamped_logprobs"] == 1


def test_prompt_past_the_servers_context_is_named(tmp_path):
    long = ("It was a dark and stormy night and", " the rain fell " * 12)
    with FakeServer() as fake:
        fake.n_ctx = 20
        s = scorer(fake, tmp_path)
        assert s.loglikelihood(REQS[:1])  # short prompts fit
        with pytest.raises(ServedError, match=r"HTTP 400 .*exceed context window of 20.*"
                                              r"request 1 \(key 'long'\): context .*stormy night "
                                              r"and'.*seems not to fit in the server's context"):
            s.loglikelihood([REQS[0], long], keys=["short", "long"])
        d = served_dir(tmp_path, fake.base_url)
        with pytest.raises(ServedError, match=r"prompt 1 \(question q2\) 'Name something.*"
                                              r"max_tokens seems not to fit"):
            sample(d, ["One fruit is", "Name something " * 10], 2, lm={"served": FAST},
                   names=["question q1", "question q2"], max_new_tokens=5)
