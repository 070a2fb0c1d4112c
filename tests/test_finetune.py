"""Causal-LM fine-tuning (csbench.finetune): finetune specs, training on tiny random models,
provenance, determinism, and the ProtoQA fine-tuning text."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from csbench.config import default
from csbench.errors import ConfigError, InputError
from csbench.finetune import TRAINING_LOG, encode, finetune, settings, subset
from csbench.modelspec import check_config_models
from csbench.provenance import provenance, provenance_columns

FT = {"base": "tiny", "data": "protoqa/finetune_train"}


def cfg(ft=None, **lm):
    return {"models": {"lm": {"tiny": "random:tiny-gpt2", "ft": {"finetune": {**FT, **(ft or {})}},
                              **lm}}}


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    """A trivial training set: two prompts, each always completed the same way."""
    d = tmp_path_factory.mktemp("ft-data")
    rows = [("The colour of the sky is", " blue."), ("One thing that barks is", " a dog.")] * 16
    path = d / "train.parquet"
    pd.DataFrame(rows, columns=["prompt", "completion"]).to_parquet(path)
    return path


def run(tiny_lm_dir, table, out, **over):
    s = {**default("finetune"), "base": "tiny", "data": "demo/train", "dev": None,
         "lr": 3e-3, "batch": 4, "grad_accum": 1, "epochs": 2, "dtype": "float32", **over}
    return finetune(tiny_lm_dir, table, out, s, device="cpu", base_name="tiny")


def test_spec_settings_fill_from_the_finetune_section():
    s = settings({**cfg({"epochs": 3}), "finetune": {**default("finetune"), "lr": 1e-4}}, "ft")
    assert s["epochs"] == 3 and s["lr"] == 1e-4 and s["grad_accum"] == 8 and s["dev"] is None
    assert check_config_models(cfg())["ft"].label() == "finetune:tiny+protoqa/finetune_train"


@pytest.mark.parametrize("ft, msg", [
    ({"base": "nope"}, "not an entry of models.lm"),
    ({"data": "finetune_train"}, "is not <source>/<table>"),
    ({"epochs": 0}, "epochs: 0 is not a whole number >= 1"),
    ({"fraction": 1.5}, "fraction: 1.5 is not a number in"),
    ({"loss": "prompt"}, "loss: 'prompt' is not completion or all"),
    ({"batch": True}, "batch: True is not"),
    ({"optimizer": "sgd"}, "unknown key(s) ['optimizer']"),
])
def test_bad_finetune_specs_fail_at_parse_time(ft, msg):
    with pytest.raises(ConfigError) as e:
        check_config_models(cfg(ft))
    assert msg in str(e.value)


def test_finetune_base_must_be_local_weights_without_cycles():
    served = {"openai": {"base_url": "http://127.0.0.1:1/v1", "model": "m"}}
    with pytest.raises(ConfigError, match="served model"):
        check_config_models(cfg({"base": "s"}, s=served))
    loop = cfg({"base": "ft2"}, ft2={"finetune": {"base": "ft", "data": "protoqa/x"}})
    with pytest.raises(ConfigError, match="cycle"):
        check_config_models(loop)
    chain = cfg(ft2={"finetune": {"base": "ft", "data": "protoqa/x"}})
    assert check_config_models(chain)["ft2"].kind == "finetune"
    with pytest.raises(ConfigError, match="causal LMs only"):
        check_config_models({"models": {"lm": {}, "qa": {"q": {"finetune": FT}}}})


def test_subset_is_seeded_and_capped():
    assert subset(10) == list(range(10))
    a = subset(100, 0.25, seed=1)
    assert len(a) == 25 and a == sorted(a) and a == subset(100, 0.25, seed=1) != subset(100, 0.25, seed=2)
    assert len(subset(100, 0.5, max_examples=7, seed=0)) == 7


def test_loss_on_the_completion_masks_the_prompt(tiny_lm_dir):
    from csbench.models.load import load_tokenizer

    tok = load_tokenizer(tiny_lm_dir)
    (ids, labels), = encode(tok, [("One thing is", " a dog.")], 64, "completion")[0]
    n_prompt = len(tok("One thing is")["input_ids"])
    assert labels[:n_prompt] == [-100] * n_prompt and labels[n_prompt:] == ids[n_prompt:]
    (ids2, labels2), = encode(tok, [("One thing is", " a dog.")], 64, "all")[0]
    assert labels2 == ids2 == ids
    enc, cut = encode(tok, [("One thing is", " a dog.")], 3, "all")
    assert cut == 1 and len(enc[0][0]) == 3


def test_training_lowers_the_loss_and_records_provenance(tiny_lm_dir, table, tmp_path):
    out = run(tiny_lm_dir, table, tmp_path / "ft")
    curve = pd.read_csv(out / TRAINING_LOG, sep="\t")
    train = curve[curve["split"] == "train"]
    assert len(train) == 16 and train["loss"].iloc[-4:].mean() < 0.8 * train["loss"].iloc[:4].mean()
    p = provenance(out)
    base = provenance(tiny_lm_dir)
    assert p["spec"]["kind"] == "finetune" and p["random"] is True
    assert p["base"]["name"] == "tiny" and len(p["base"]["weights_sha256"]) == 64
    assert p["base"]["sha256"] == base.get("file_sha256")
    assert p["data"]["rows"] == p["data"]["used"] == 32 and len(p["data"]["sha256"]) == 64
    assert p["settings"]["lr"] == 3e-3 and p["seed"] == 42
    assert p["compute_device"] == "cpu" and p["compute_dtype"] == "float32"
    assert p["training"]["optimizer_steps"] == 16 and p["training"]["examples_per_s"] > 0
    cols = provenance_columns(out)
    assert cols["model_source"].startswith("finetune:tiny=random:tiny-gpt2 on demo/train")
    assert cols["random_model"] and cols["model_sha256"] == p["file_sha256"]
    # a plain Hugging Face directory the tasks load like any other
    from csbench.models.load import load_causal_lm

    model, tok = load_causal_lm(out, "cpu", "float32")
    assert model.config.model_type == "gpt2"


def test_one_seed_gives_the_same_weights(tiny_lm_dir, table, tmp_path):
    over = {"epochs": 1, "grad_accum": 2, "fraction": 0.5}
    a = provenance(run(tiny_lm_dir, table, tmp_path / "a", **over))["file_sha256"]
    b = provenance(run(tiny_lm_dir, table, tmp_path / "b", **over))["file_sha256"]
    c = provenance(run(tiny_lm_dir, table, tmp_path / "c", seed=7, **over))["file_sha256"]
    assert a == b != c


def test_bf16_training_and_dev_checkpoint_choice(tiny_lm_dir, table, tmp_path):
    out = run(tiny_lm_dir, table, tmp_path / "bf16", dtype="bfloat16", epochs=3, dev="demo/dev",
              lr=3e-2)
    p = provenance(out)
    assert p["compute_dtype"] == "bfloat16" and len(p["training"]["dev_loss"]) == 0
    out = finetune(tiny_lm_dir, table, tmp_path / "dev", {
        **default("finetune"), "base": "tiny", "data": "demo/train", "dev": "demo/dev",
        "lr": 3e-3, "batch": 4, "grad_accum": 1, "epochs": 3, "dtype": "bfloat16"},
        device="cpu", dev_path=table, base_name="tiny")
    p = provenance(out)
    dev = p["training"]["dev_loss"]
    assert len(dev) == 3 and p["training"]["epoch_kept"] == 1 + dev.index(min(dev))
    assert p["dev"]["used"] == 32


def test_protoqa_finetune_text_is_read_line_by_line(tmp_path):
    from csbench.data.protoqa import normalise

    f = tmp_path / "finetune_train.txt"
    f.write_text("one thing that barks is\ta dog.\nQ: name a fruit? A: \tapple.\n")
    df = normalise("finetune_train", {"gpt2/finetune_train.txt": f})
    assert list(df["completion"]) == [" a dog.", " apple."]
    assert list(df["id"]) == ["finetune_train.txt:1", "finetune_train.txt:2"]
    assert df["prompt"][1] == "Q: name a fruit? A: " and df["answer"][0] == "a dog."
    f.write_text("one thing that barks is\ta dog.\nno tab here\n")
    with pytest.raises(InputError) as e:
        normalise("finetune_train", {"gpt2/finetune_train.txt": f})
    assert "finetune_train.txt:2: expected <prompt><TAB><answer>" in str(e.value)
    json.dumps(df.to_dict("records"))  # plain values
