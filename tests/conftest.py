"""Shared pytest fixtures: offline WordNet, tiny random models built once per session, the
demo runs of tests/test_workflow.py started in the background at the first test."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from cpu_durations import pytest_addoption, pytest_configure  # noqa: F401  (--cpu-durations FILE)
from demo_runs import DemoRuns

from csbench.runtime import job_environment

REPO = Path(__file__).resolve().parents[1]
os.environ.setdefault("NLTK_DATA", str(REPO / "resources" / "nltk_data"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# The thread set-up of a workflow job: idle OpenMP workers of torch sleep instead of spinning, set
# before any test imports torch. The unit tests share the 2 cores with the demo runs, where a
# spinning worker waits on a busy core: one test took 66 s wall and 45 CPU s beside the demos,
# 24 s and 16 CPU s in a quieter run.
job_environment()


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session", autouse=True)
def demo_background(request, tmp_path_factory):
    """The demo run(s) the selected workflow tests read (tests/demo_runs.py), started now so they
    run beside the unit tests; stopped at the end of the run if still running (``-x``, Ctrl-C)."""
    runs = DemoRuns(tmp_path_factory, request.session.items)
    yield runs
    runs.stop()


@pytest.fixture(scope="session")
def tiny_lm_dir(tmp_path_factory) -> Path:
    """A randomly initialised GPT-2-shaped causal LM with an in-process trained tokenizer."""
    from csbench.models.random import build_random_model

    return build_random_model("tiny-gpt2", tmp_path_factory.mktemp("tiny-gpt2"))


@pytest.fixture(scope="session")
def tiny_bos_lm_dir(tiny_lm_dir, tmp_path_factory) -> Path:
    """``tiny_lm_dir`` with a tokenizer that adds its start token to every text (as Llama's or
    Gemma's do; the tiny one adds none)."""
    import shutil

    from tokenizers.processors import TemplateProcessing

    from csbench.models.load import load_tokenizer

    dst = tmp_path_factory.mktemp("tiny-gpt2-bos") / "m"
    shutil.copytree(tiny_lm_dir, dst)
    tok = load_tokenizer(dst)
    tok._tokenizer.post_processor = TemplateProcessing(
        single=f"{tok.bos_token} $A", special_tokens=[(tok.bos_token, tok.bos_token_id)])
    tok.save_pretrained(dst)
    return dst


@pytest.fixture(scope="session")
def tiny_neox_dir(tmp_path_factory) -> Path:
    from csbench.models.random import build_random_model

    return build_random_model("tiny-neox", tmp_path_factory.mktemp("tiny-neox"))


@pytest.fixture(scope="session")
def tiny_qa_dir(tmp_path_factory) -> Path:
    from csbench.models.random import build_random_model

    return build_random_model("tiny-bert-qa", tmp_path_factory.mktemp("tiny-bert-qa"))
