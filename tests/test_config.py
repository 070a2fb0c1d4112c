import copy

import pytest
import yaml

from csbench.config import check_schema_documented, validate
from csbench.errors import ConfigError

SCHEMA = "workflow/schemas/config.schema.yaml"


@pytest.fixture
def base(repo):
    return yaml.safe_load((repo / "config.yaml").read_text())


def test_default_config_validates_and_fills_defaults(repo, base):
    cfg = validate(copy.deepcopy(base), repo / SCHEMA)
    assert cfg["models"]["embedder"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert cfg["sources"]["winogrande"]["files"]["dev.jsonl"]
    assert cfg["lm"]["dtype"] == "auto"


def test_demo_config_validates(repo, base):
    base.update(yaml.safe_load((repo / "resources/demo/config.yaml").read_text()))
    validate(base, repo / SCHEMA)


def test_unknown_key_is_named(repo, base):
    base["taskz"] = ["protoqa"]
    with pytest.raises(ConfigError, match="'taskz'"):
        validate(base, repo / SCHEMA)


def test_nested_unknown_key_is_named(repo, base):
    base["models"] = {"lm": {}, "embeder": "x"}
    with pytest.raises(ConfigError, match="models.embeder"):
        validate(base, repo / SCHEMA)


def test_wrong_type_is_named(repo, base):
    base["lm"] = {"max_batch_size": "many"}
    with pytest.raises(ConfigError, match="lm.max_batch_size"):
        validate(base, repo / SCHEMA)


def test_bad_task_name(repo, base):
    base["tasks"] = ["winowhat", "nonsense"]
    with pytest.raises(ConfigError, match="tasks.1"):
        validate(base, repo / SCHEMA)


def test_bad_checksum_format(repo, base):
    base["sources"] = {"wsc273": {"files": {"WSCollection.xml": "abc"}}}
    with pytest.raises(ConfigError, match="sources.wsc273.files.WSCollection.xml"):
        validate(base, repo / SCHEMA)


def test_every_key_has_default_and_description(repo):
    assert check_schema_documented(repo / SCHEMA) == []


def test_source_file_overrides_merge_with_defaults(repo, base):
    base["sources"] = {"winogrande": {"files": {"train_xl.jsonl": "skip"}}}
    cfg = validate(base, repo / SCHEMA)
    files = cfg["sources"]["winogrande"]["files"]
    assert files["train_xl.jsonl"] == "skip"
    assert files["dev.jsonl"] and files["test.jsonl"]
    assert cfg["sources"]["winogrande"]["archive"] == "zip"


def test_model_maps_replace_defaults(repo, base):
    base["models"] = {"lm": {"mine": "/models/mine"}}
    cfg = validate(base, repo / SCHEMA)
    assert cfg["models"]["lm"] == {"mine": "/models/mine"}


def test_nested_defaults_inside_task_sections_are_filled(repo, base):
    cfg = validate(base, repo / SCHEMA)
    for section in ("winowhat", "protoqa", "twentyq", "qads", "contamination"):
        assert cfg[section], f"{section}: defaults not filled"
