"""One route per job (csbench.lm.route, csbench.qads.route) and the device/dtype policy
(csbench.compute): the params a rule holds are what its job computes with."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from csbench.config import default
from csbench.lm.route import LMJob, lm_params


def config(**lm):
    return {"lm": {**default("lm"), **lm},
            "models": {"lm": {"tiny": "random:tiny-gpt2",
                              "chat": {"weights": "tiny", "chat_template": True,
                                       "system_instruction": "Be brief."},
                              "api": {"openai": {"base_url": "http://127.0.0.1:9/v1",
                                                 "model": "m"}}}}}


def test_params_hold_device_dtype_and_a_non_raw_format_only():
    c = config(device="cpu", dtype="float32", batch_size=7)
    assert lm_params(c, "tiny") == {"device": "cpu", "dtype": "float32"}   # raw: no format keys
    assert lm_params(c, "chat") == {"device": "cpu", "dtype": "float32", "chat_template": True,
                                    "system_instruction": "Be brief."}
    assert lm_params(c, "chat", prompt=False) == {"device": "cpu", "dtype": "float32"}
    assert lm_params(c, "api") == {}                                        # the endpoint computes
    assert lm_params(config(system_instruction="Hi."), "tiny")["system_instruction"] == "Hi."


def test_the_job_computes_with_its_params_not_the_config(tiny_lm_dir, tmp_path):
    # the config says chat and bf16; the params (what the rule reruns on) say raw and fp32
    c = config(device="cpu", dtype="bfloat16", chat_template=True, system_instruction="x")
    job = LMJob(tiny_lm_dir, {"device": "cpu", "dtype": "float32"}, c["lm"], None)
    assert job.format.raw and job.settings["dtype"] == "float32"
    cols = job.columns()
    assert (cols["compute_device"], cols["compute_dtype"]) == ("cpu", "float32")
    assert (cols["prompt_format"], cols["system_instruction"]) == ("raw", "")
    assert "prompt_format" not in LMJob(tiny_lm_dir, {"device": "cpu", "dtype": "float32"},
                                        c["lm"], None, prompt=False).columns()


def test_job_sampling_goes_through_the_scorers_model(tiny_lm_dir):
    from csbench.lm.backend import open_scorer

    params = {"device": "cpu", "dtype": "float32"}
    job = LMJob(tiny_lm_dir, params, default("lm"), None)
    kw = dict(max_new_tokens=4, seed=3, chunk=2, stop=["."])
    got = job.sample(["One fruit is"], 4, **kw)
    assert job.scorer().model is not None and "engine" not in vars(job.scorer())  # no engine built
    assert got == open_scorer(tiny_lm_dir, params).sample(["One fruit is"], 4, **kw)


def test_job_of_a_snakemake_job_reads_params_and_the_cache(tiny_lm_dir, tmp_path):
    snk = SimpleNamespace(input=SimpleNamespace(model=str(tiny_lm_dir)),
                          params=SimpleNamespace(lm={"device": "cpu", "dtype": "float32"}),
                          config={"lm": default("lm"), "cache_dir": str(tmp_path)},
                          rule="winowhat_score", wildcards={"model": "tiny"})
    job = LMJob.of(snk)
    assert job.cache_dir.job == "winowhat_score.model=tiny"
    assert job.settings["device"] == "cpu"


def test_qa_job_loads_and_reports_the_same_settings(tiny_qa_dir):
    from csbench.qads.route import QAJob, fold_params, predict_params

    qa = {**default("qads.qa"), "device": "cpu", "dtype": "float32"}
    job = QAJob(tiny_qa_dir, predict_params(qa), qa)
    model, _ = job.load()
    assert str(next(model.parameters()).dtype) == "torch.float32"
    assert job.compute() == {"compute_device": "cpu", "compute_dtype": "float32"}
    fold = QAJob(tiny_qa_dir, fold_params(qa), qa, ft={"dtype": "bfloat16"})
    assert fold.compute()["compute_dtype"] == "bfloat16" and "dtype" not in fold.qa
    assert fold.qa["batch_size"] == qa["batch_size"]


@pytest.mark.parametrize("flags, want", [({"avx2", "avx512f"}, "float32"),
                                         ({"avx2", "avx512_bf16"}, "bfloat16"),
                                         ({"amx_bf16", "amx_tile"}, "bfloat16")])
def test_finetune_dtype_auto_is_bf16_only_on_bf16_hardware(monkeypatch, flags, want):
    from csbench import compute
    from csbench.finetune import settings

    monkeypatch.setattr(compute, "cpu_flags", lambda path=compute.CPUINFO: frozenset(flags))
    assert compute.training_dtype("auto", "cpu") == want
    assert compute.training_dtype("float32", "cpu") == "float32"
    assert compute.training_dtype("bfloat16", "cpu") == "bfloat16"
    c = {**config(device="cpu"), "finetune": default("finetune")}
    c["models"]["lm"]["ft"] = {"finetune": {"base": "tiny", "data": "protoqa/finetune_train"}}
    assert default("finetune")["dtype"] == "auto"
    assert settings(c, "ft")["dtype"] == want                 # what params.train hold


def test_this_machine_without_bf16_units_trains_in_float32():
    """The shared machine (AVX2 only): the default resolves to float32."""
    from csbench import compute

    if compute.cpu_half_support("bfloat16"):
        pytest.skip("this CPU has bf16 matrix units")
    assert compute.training_dtype("auto", "cpu") == "float32"
