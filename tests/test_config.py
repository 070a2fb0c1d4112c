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


def test_reruns_doc_lists_every_key_and_its_dependent_rules(repo):
    """docs/reruns.md's table is `python -m csbench.config --reruns` (the schema's x-reruns)."""
    from csbench.config import reruns_table

    doc = (repo / "docs/reruns.md").read_text()
    table = doc.split("<!-- reruns:start -->\n", 1)[1].split("\n<!-- reruns:end -->", 1)[0]
    assert table == reruns_table(), "regenerate it: python -m csbench.config --reruns"


def test_command_line_text_is_read_as_the_keys_type(repo):
    schema = repo / "workflow/schemas/config.schema.yaml"
    cfg = validate({"lm": {"max_batch_size": "16", "batch_size": "8", "served": {"timeout": "2.5"}},
                    "mirror": "null", "protoqa": {"stopword_only_match": "false"},
                    "qads": {"questions": {"limit": "null"}}}, schema)
    assert cfg["lm"]["max_batch_size"] == 16 and cfg["lm"]["batch_size"] == 8
    assert cfg["lm"]["served"]["timeout"] == 2.5 and cfg["mirror"] is None
    assert cfg["protoqa"]["stopword_only_match"] is False and cfg["qads"]["questions"]["limit"] is None
    with pytest.raises(ConfigError, match="max_batch_size.*--config 'lm=.max_batch_size: 16.'"):
        validate({"lm": {"max_batch_size": "many"}}, schema)
    with pytest.raises(ConfigError, match="batch_size"):
        validate({"lm": {"batch_size": "x"}}, schema)


@pytest.mark.parametrize("name", ["..", ".", ".hidden", "a/b", "a\\b", "x\ny"])
@pytest.mark.parametrize("key", ["models.lm", "models.qa", "audits", "protoqa.predictions",
                                 "contamination.corpora", "datasets"])
def test_names_that_become_paths_must_be_plain(repo, key, name):
    """Issue 29: a model named '..' made the materialise job's output resources/models/.., and
    Snakemake removed all of resources/ before running it."""
    value = {"paths": ["x"]} if key == "contamination.corpora" else \
        {"train": "a", "test": "b"} if key == "audits" else \
        {"kind": "text", "path": "x"} if key == "datasets" else "random:tiny-gpt2"
    cfg: dict = {}
    node = cfg
    for part in key.split("."):
        node = node.setdefault(part, {})
    node[name] = value
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        validate(cfg, repo / "workflow/schemas/config.schema.yaml")
