"""audits: section: built-ins merged with user keys, user benchmarks, schemas documented."""
import pytest

from csbench.audit import workflow as aw
from csbench.config import ConfigError, check_schema_documented, validate
from csbench.twentyq import workflow as tw


def validated(cfg, repo):
    """The config as the Snakefile sees it: validated once, defaults filled."""
    return validate(cfg, repo / "workflow/schemas/config.schema.yaml")


def test_builtin_override_keeps_other_settings(repo):
    cfg = {"audits": {"csqa2": {"top_k": 5}, "com2sense": {"enabled": False},
                      "mine": {"train": "a.tsv", "test": "b.tsv", "text_fields": ["q"]}}}
    a = aw.audit_config(validated(cfg, repo))
    assert a["csqa2"]["train"] == "csqa2:train" and a["csqa2"]["top_k"] == 5
    assert a["mine"]["search"] == "exact" and a["mine"]["short_field"] is None
    assert set(aw.enabled(a)) == {"csqa2", "mine", "twentyq"}
    ins = aw.inputs(a, ("csqa2",), lambda s, t: f"results/data/{s}/{t}.parquet")
    assert ins["csqa2"]["test"] == "results/data/csqa2/test.parquet" and ins["mine"]["train"] == "a.tsv"
    t = aw.targets(a)
    assert "results/audit/csqa2/top_pairs.wordnet.tsv" in t and "results/audit/top1_similarity.png" in t
    assert not any("com2sense" in x for x in t)


def test_user_audit_needs_tables_and_typos_fail(repo):
    with pytest.raises(ValueError, match="audits.mine"):
        aw.audit_config(validated({"audits": {"mine": {"text_fields": ["q"]}}}, repo))
    with pytest.raises(ConfigError, match="serch"):
        validated({"audits": {"csqa2": {"serch": "ivf"}}}, repo)


def test_twentyq_section_defaults(repo):
    tq = validated({}, repo)["twentyq"]
    assert tq["split"]["n_train_questions"] == 500 and tq["split"]["n_test"] == 2500
    assert tq["split"]["max_similarity"] == 0.8 and tq["clean"]["min_score"] == 3
    assert tw.scoring_models(tq, {"a": "x", "b": "y"}) == ["a", "b"]
    assert tw.reference_lm(tq, {"a": "x"}) == "a"


@pytest.mark.parametrize("name", ["twentyq", "audits"])
def test_schemas_documented(repo, name):
    assert check_schema_documented(repo / f"workflow/schemas/{name}.schema.yaml") == []
