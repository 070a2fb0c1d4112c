"""The 20Q fine-tuned arm: the overlap-free training table (the split rules run against the scored
items), its prompt and completion, training a tiny model on it through csbench.finetune, and the
fine-tuned prompt variants the scoring reads."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from csbench.config import default
from csbench.finetune import finetune, read_examples
from csbench.modelspec import check_config_models
from csbench.provenance import provenance
from csbench.twentyq import workflow
from csbench.twentyq.finetune import training_table
from csbench.twentyq.prompts import VARIANTS, build_prompts
from csbench.twentyq.scoring import metrics, score_items
from test_twentyq_clean_split import fake_encoder  # same-group texts share a unit vector


def items(*recs, split="train"):
    return pd.DataFrame([{"id": f"{split}-{i}", "source_split": split, "subject": s, "question": q,
                          "label": lab} for i, (s, q, lab) in enumerate(recs)])


SCORED = items(("dog", "Is it an animal?", "yes"), ("bicycle", "Does it have wheels?", "no"),
               split="dev")
CANDIDATES = items(("airplane", "Is it an animal??", "no"),      # lexical: question bag of words
                   ("Dog", "Does it bark?", "yes"),              # lexical: topic bag of words
                   ("domestic dog", "Is it loud?", "yes"),       # wordnet: shares dog.n.01
                   ("spoon", "Is it some kind of animal?", "no"),  # embedding: near-duplicate
                   ("chair", "Is it made of wood?", "yes"),      # kept
                   ("kettle", "Is it used in the kitchen?", "no"))  # kept


def test_training_items_pass_the_split_rules_against_the_scored_items():
    enc = fake_encoder({"Is it some kind of animal?": "Is it an animal?"})
    table, counts = training_table(CANDIDATES, SCORED, enc)
    assert list(table["id"]) == ["train-4", "train-5"]  # source ids and order kept
    c = counts.set_index("step")
    assert list(c.index) == ["candidates", "lexical", "wordnet", "embedding"]
    assert list(c["removed"]) == [0, 2, 1, 1] and list(c["kept"]) == [6, 4, 3, 2]
    assert c.loc["embedding", "kept_pct"] == pytest.approx(100 * 2 / 6)
    assert set(c["against"]) == {2}
    # the paper's fine-tuning prompt; the completion is the continuation the scoring reads
    assert table.loc[0, "prompt"] == "Topic: chair\nQuestion: Is it made of wood?\nAnswer:"
    assert list(table["completion"]) == [" yes", " no"]
    # a rule switched off keeps what it would have removed; the threshold is the setting's
    t2, c2 = training_table(CANDIDATES, SCORED, enc, rules=["lexical", "wordnet"])
    assert len(t2) == 3 and "embedding" not in set(c2["step"])
    t3, _ = training_table(CANDIDATES, SCORED, enc, rules=["embedding"], max_similarity=1.0)
    assert len(t3) == 6


def test_bad_labels_are_refused():
    with pytest.raises(ValueError, match="yes/no"):
        training_table(items(("cat", "Is it big?", "maybe")), SCORED, fake_encoder({}))


def test_fine_tuned_variants_are_the_training_prompt_without_header_or_examples():
    assert {"fine_tuned", "fine_tuned_no_topic"} <= set(VARIANTS)
    [p] = build_prompts(SCORED.head(1), SCORED, "fine_tuned")
    [q] = build_prompts(SCORED.head(1), SCORED, "fine_tuned_no_topic")
    assert p.raw() == "Topic: dog\nQuestion: Is it an animal?\nAnswer:" and not p.shots
    assert q.raw() == "Question: Is it an animal?\nAnswer:"
    table, _ = training_table(SCORED, CANDIDATES.tail(1), fake_encoder({}))
    assert list(table["prompt"]) == [pr.raw() for pr in build_prompts(SCORED, SCORED, "fine_tuned")]


def test_finetune_specs_name_their_training_tables():
    cfg = {"models": {"lm": {"tiny": "random:tiny-gpt2",
                             "ft": {"finetune": {"base": "tiny", "data": "twentyq_ft/csqa2"}},
                             "other": {"finetune": {"base": "tiny", "data": "protoqa/finetune_train"}}}}}
    specs = check_config_models(cfg)
    assert workflow.finetune_tables(specs, ["twentyq", "csqa2"]) == ["csqa2"]
    assert workflow.is_fine_tuned(specs, "ft") and not workflow.is_fine_tuned(specs, "tiny")
    assert workflow.finetune_data("csqa2") == "results/data/twentyq_ft/csqa2.parquet"
    assert workflow.finetune_admission("csqa2") in workflow.targets([], ["csqa2"], ["csqa2"])


def test_a_tiny_model_trains_on_the_table_and_is_scored_in_its_prompt(tiny_lm_dir, tmp_path):
    train = items(*[("chair", f"Is it item {i}?", "yes" if i % 2 else "no") for i in range(12)])
    table, _ = training_table(train, SCORED, fake_encoder({}))
    path = tmp_path / "csqa2.parquet"
    table.to_parquet(path)
    assert read_examples(path)[0] == (table.loc[0, "prompt"], table.loc[0, "completion"])
    s = {**default("finetune"), "base": "tiny", "data": "twentyq_ft/csqa2", "dev": None,
         "batch": 4, "grad_accum": 1, "dtype": "float32", "lr": 1e-3}
    out = finetune(tiny_lm_dir, path, tmp_path / "ft", s, device="cpu", base_name="tiny")
    prov = provenance(out)
    assert prov["data"]["table"] == "twentyq_ft/csqa2" and prov["data"]["rows"] == 12
    assert prov["settings"]["epochs"] == 1 and prov["training"]["optimizer_steps"] == 3
    assert json.dumps(prov)  # plain JSON

    from csbench.lm import open_scorer

    scorer = open_scorer(out, {**default("lm"), "device": "cpu", "dtype": "float32"}, None)
    scored = score_items(scorer.loglikelihood, SCORED, train,
                         variants=["fine_tuned", "fine_tuned_no_topic"])
    assert list(metrics(scored)["variant"]) == ["fine_tuned", "fine_tuned_no_topic"]


CAL = {"auroc_ci_low": 0.5, "auroc_ci_high": 0.7, "cal_accuracy": 0.6, "cal_accuracy_ci_low": 0.5,
       "cal_accuracy_ci_high": 0.7, "cal_f1": 0.6, "cal_f1_ci_low": 0.5, "cal_f1_ci_high": 0.7,
       "cal_pct_pred_yes": 50.0, "cal_folds": 5, "ci_level": 0.95}


def test_results_show_the_fine_tuned_arm_in_table5_layout_and_the_admission_counts(tmp_path):
    from csbench.twentyq import report

    rows = [{"model": m, "variant": v, "n": 4, "f1": f1, "accuracy": 0.5, "nll": 0.69,
             "pct_pred_yes": 50.0, "auroc": 0.6, "model_source": src, **CAL}
            for m, src, vs in (("lm", "gguf:x", ("zero_shot", "few_shot", "zero_shot_no_topic")),
                               ("lm-ft", "finetune:lm=gguf:x on twentyq_ft/csqa2",
                                ("fine_tuned", "fine_tuned_no_topic")))
            for v, f1 in zip(vs, (0.61, 0.67, 0.5))]
    metrics_path = tmp_path / "twentyq" / "csqa2" / "metrics.tsv"
    metrics_path.parent.mkdir(parents=True)
    pd.DataFrame(rows).to_csv(metrics_path, sep="\t", index=False)
    t = report.twentyq_table([str(metrics_path)])
    ft = t[t["arm"] == "fine_tuned"]
    assert set(ft["variant"]) == {"fine_tuned", "fine_tuned_no_topic"} and set(ft["base_model"]) == {"lm"}
    assert set(t.loc[t["arm"] == "prompted", "base_model"]) == {"lm"}
    md = report.table5_markdown(t)
    assert "| CSQA2 dev | lm | lm-ft | 61.0 | 67.0 | 61.0 | 67.0 |" in md  # F1 Z-S F-S F-T F-T-topic
    counts = tmp_path / "twentyq" / "finetune" / "csqa2.admission_counts.tsv"
    counts.parent.mkdir(parents=True)
    pd.DataFrame({"benchmark": "csqa2", "step": ["candidates", "lexical"], "against": 2541,
                  "removed": [0, 803], "kept": [9264, 8461], "kept_pct": [100.0, 91.33]}) \
        .to_csv(counts, sep="\t", index=False)
    ins = report.inputs([str(metrics_path), str(counts)])
    outs = {k: str(tmp_path / v) for k, v in report.planned(ins).items()}
    from csbench import results as R

    sec = report.section(ins, outs, {}, R.read_anchors("resources/published_anchors.tsv"))
    assert "Table 5 layout" in sec.markdown and "| csqa2 | lexical | 2541 | 803 | 8461 | 91.3 |" in sec.markdown
    assert "fine-tuned with / without topic" in sec.markdown


def test_qads_arm_rows_are_labelled_beside_the_plain_run(tmp_path):
    from csbench.qads import report

    def table(name, trained_on):
        path = tmp_path / name
        pd.DataFrame([{"model": "qa", "trained_on": trained_on, "fold": "pooled", "split": "finetuned",
                       "questions": q, "exact": 40.0, "f1": 50.0, "HasAns_exact": 30.0,
                       "HasAns_f1": 45.0, "NoAns_exact": 60.0, "n": 10} for q in ("original", "one")]
                     ).to_csv(path, sep="\t", index=False)
        return str(path)

    q = report.qads_qa_table([], [table("qa.squad-by-article.tsv", "squad"),
                                  table("qa.squad-by-article+one.tsv", "squad + one")])
    assert sorted(set(q["training"])) == ["fine-tuned (article folds)",
                                          "fine-tuned (article folds) + QADS-one training questions"]
    assert (q["f1_minus_original"].fillna(0) == 0).all()  # each run against its own original row


def test_the_fine_tuning_finding_compares_the_fine_tuned_model_with_its_base_prompted(tmp_path):
    from csbench import results as R
    from csbench.twentyq import report

    rows = [{"model": m, "variant": v, "n": 100, "f1": f1, "accuracy": 0.5, "nll": 0.69,
             "pct_pred_yes": 50.0, "auroc": 0.6, "model_source": src, "f1_ci_low": f1 - 0.05,
             "f1_ci_high": f1 + 0.05, "gold_yes_share": 0.45, **CAL}
            for m, src, vs in (("lm", "gguf:x", (("zero_shot", 0.30), ("few_shot", 0.35))),
                               ("lm-ft", "finetune:lm=gguf:x on twentyq_ft/csqa2",
                                (("fine_tuned", 0.70), ("fine_tuned_no_topic", 0.50))))
            for v, f1 in vs]
    path = tmp_path / "twentyq" / "csqa2" / "metrics.tsv"
    path.parent.mkdir(parents=True)
    pd.DataFrame(rows).to_csv(path, sep="\t", index=False)
    t = report.twentyq_table([str(path)])
    got = report.findings(t, None, R.read_anchors("resources/published_anchors.tsv"))
    ft = [f for f in got if f.claim == "fine-tuning beats prompting (F1)"]
    assert len(ft) == 1 and ft[0].system.startswith("lm-ft vs lm prompted")
    assert ft[0].verdict != "not run" and ft[0].effect == pytest.approx(35.0)  # 70 vs few-shot 35
    topic = [f for f in got if f.claim == "removing the topic lowers F1" and f.system.startswith("lm-ft")]
    assert topic and topic[0].effect == pytest.approx(20.0)


def test_the_qads_recovery_finding_reads_the_arm_beside_the_plain_folds(tmp_path):
    from csbench import results as R
    from csbench.qads import report

    def table(name, trained_on, f1s):
        path = tmp_path / name
        pd.DataFrame([{"model": "qa", "trained_on": trained_on, "fold": "pooled", "split": "finetuned",
                       "questions": q, "exact": 40.0, "f1": f1, "HasAns_exact": 30.0,
                       "HasAns_f1": 45.0, "NoAns_exact": 60.0, "n": 10}
                      for q, f1 in zip(("original", "one"), f1s)]).to_csv(path, sep="\t", index=False)
        return str(path)

    q = report.qads_qa_table([], [table("qa.squad-by-article.tsv", "squad", (50.0, 40.0)),
                                  table("qa.squad-by-article+one.tsv", "squad + one", (50.0, 48.0))])
    got = report.findings(q, pd.DataFrame(), R.read_anchors("resources/published_anchors.tsv"))
    rec = [f for f in got if f.claim == "fine-tuning on QADS recovers little"]
    assert len(rec) == 1 and "without → with QADS-one" in rec[0].system
    assert "40.0 → 48.0 of 50.0" in rec[0].ours  # 80% of the drop recovered
