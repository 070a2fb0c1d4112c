"""RESULTS.md (csbench.results, rule `results`): built from result tables only, skipped tasks say
so, every published anchor has a source, and two runs on the same tables give identical files."""
from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pandas as pd
import pytest

from csbench import results as R
from csbench.errors import InputError
from csbench.protoqa.report import PQ_METRICS
from csbench.record import validate
from csbench.twentyq.prompts import PROMPTED

REPO = Path(__file__).resolve().parents[1]
ANCHORS = REPO / "resources" / "published_anchors.tsv"


def tsv(path: Path, rows: list[dict]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(path, sep="\t", index=False)
    return str(path)


def result_tables(root: Path, compute: bool = True) -> dict[str, list[str]]:
    """Small tables in the layouts the tasks write (the registered targets, by task); without
    ``compute``, as written before the compute columns were recorded."""
    r = root / "results"
    prov = {"random_model": False, "model_source": "pypi:x==1", "model_sha256": "ab", "model_quant": "Q4"}
    qa_prov = dict(prov)
    if compute:
        qa_prov.update(compute_device="cpu", compute_dtype="float32")
        prov.update(compute_device="cpu", compute_dtype="bfloat16", prompt_format="chat",
                    system_instruction="Be brief.")
    acc = []
    for model in ("m2", "m1"):
        for dataset, variant, cats in (("winogrande_dev", "orig", ("all", "physical", "social")),
                                       ("winogrande_dev", "transf", ("all", "physical", "social")),
                                       ("wsc", "orig", ("all",)),
                                       ("mywino", "orig", ("all", "kitchen"))):  # a user's set
            for i, cat in enumerate(cats):
                a = 0.5 + 0.01 * i + (0.02 if variant == "orig" else 0.0) + (0.1 if model == "m1" else 0)
                for subset in ("all", "in_original_experiment"):
                    for method, shift in (("paper", 0.0), ("sentence", 0.03), ("sentence_norm", 0.01)):
                        b = a + shift * (variant == "transf") + (0.01 if subset == "all" else 0)
                        acc.append({"model": model, "dataset": dataset, "variant": variant,
                                    "subset": subset, "method": method, "category": cat, "n": 100,
                                    "accuracy": b, "ci_low": b - 0.05, "ci_high": b + 0.05, **prov})
    mcn = [{"model": m, "dataset": "winogrande_dev", "subset": s, "method": method, "n_pairs": 90,
            "acc_orig": 0.52, "acc_transf": 0.5 + shift, "difference": shift - 0.02,
            "diff_ci_low": shift - 0.05, "diff_ci_high": shift + 0.01, "orig_only_correct": 12,
            "transf_only_correct": 10, "p_value": 0.83, **prov}
           for m in ("m1", "m2") for s in ("all", "in_original_experiment")
           for method, shift in (("paper", 0.0), ("sentence", 0.03), ("sentence_norm", 0.01))]
    pq = {"metric": list(PQ_METRICS) + ["max_answers@all"]}
    for sim in ("exact", "wordnet"):
        for system in ("gpt2finetuned", "human", "gen-m1", "gen-m1-chat"):
            pq[f"{sim}/{system}"] = [0.1 * (k + 1) for k in range(len(pq["metric"]))]
    if compute:  # protoqa_summary: the sampling baselines' provenance rows below the metrics,
        # then their sampling rows (a chat-prompt variant of m1 is a model of its own)
        # (its prompt columns: each model's own)
        base = {k: v for k, v in prov.items() if k not in ("prompt_format", "system_instruction")}
        sampling = {"gen-m1": ["raw", "", "1500", "0.2340", "complete_words", "raw"],
                    "gen-m1-chat": ["chat", "", "1500", "0.0127", "complete_words", "raw"]}
        pq["metric"] += [*base, "prompt_format", "system_instruction", "samples",
                         "samples_cut_share", "cut_policy", "recipe"]
        for col in pq:
            if col != "metric":
                gen = col.partition("/")[2]
                pq[col] += [str(v) if gen in sampling else "" for v in base.values()]
                pq[col] += sampling.get(gen, [""] * 6)
    cal = {"auroc": 0.65, "auroc_ci_low": 0.6, "auroc_ci_high": 0.7, "cal_accuracy": 0.6,
           "cal_accuracy_ci_low": 0.55, "cal_accuracy_ci_high": 0.65, "cal_f1": 0.62, "cal_f1_ci_low": 0.5,
           "cal_f1_ci_high": 0.7, "cal_pct_pred_yes": 48.0, "cal_threshold_median": -1.2, "cal_folds": 5,
           "ci_level": 0.95}
    tq = [{"model": m, "variant": v, "n": 10, "f1": 0.4, "accuracy": 0.55, "nll": 0.7, "pct_pred_yes": 40.0,
           **cal, **prov} for m in ("m1", "m2") for v in PROMPTED]
    audit = [{"audit": "csqa2", "n_train": 9, "n_test": 5, "exact_duplicate_pairs": 1,
              "normalised_duplicate_pairs": 0, "test_items_with_duplicate": 1, "top1_mean": 0.5,
              "top1_q50": 0.5, "top1_q90": 0.7, "top1_q99": 0.9, "top1_max": 1.0, "pct_top1_ge_0.8": 20.0,
              "pct_top1_ge_0.9": 20.0, "pct_top1_ge_0.95": 20.0, "encode_s": 1.23}]
    wsd = [{"method": m, "dataset": d, "precision": 0.5, "recall": 0.5, "f1": 0.5, "n": 7, "attempted": 7,
            "correct": 3} for m in ("first_sense", "enhanced_lesk") for d in ("ALL", "senseval2")]
    ft = [{"model": "qa", "fold": f, "split": "finetuned", "questions": q, "exact": 40.0, "f1": 50.0 - i,
           "HasAns_exact": 30.0, "HasAns_f1": 45.0 - 3 * i, "NoAns_exact": 60.0, "n": 100,
           "HasAns_n": 40, "NoAns_n": 60, **qa_prov}
          for f in ("0", "pooled") for i, q in enumerate(("original", "one", "all"))]
    by_dom = [{"model": "qa", "split": "finetuned", "questions": q, "domain": d, "articles": k,
               "titles": "A, B"[: 1 + 3 * (k - 1)], "exact": 40.0, "f1": 50.0, "HasAns_exact": 30.0,
               "HasAns_f1": 45.0 - 2 * i - k, "NoAns_exact": 60.0, "n": 10 * k, **prov}
              for i, q in enumerate(("original", "one", "all")) for d, k in (("law", 2), ("art", 1))]
    eff = [{"model": "m1", "dataset": "winogrande_dev", "variant": "orig", "benchmark": "winogrande_dev",
            "corpus": "web", "method": "exact", "n_contaminated": 3, "n_clean": 20, "acc_contaminated": 0.6,
            "acc_clean": 0.5, "difference": 0.1, "u": 33.0, "p_value": 0.3, "random_model": False}]
    (r / "winowhat").mkdir(parents=True, exist_ok=True)  # the gold labels: majority class
    pd.DataFrame({"dataset": ["winogrande_dev"] * 5 + ["wsc"] * 2, "label": [1, 1, 2, 1, None, 2, 2],
                  "variant": ["orig", "orig", "orig", "transf", "transf", "orig", "orig"]}) \
        .to_parquet(r / "winowhat" / "items.parquet")
    qa_scores = r / "qads" / "qa_scores.tsv"
    qa_scores.parent.mkdir(parents=True, exist_ok=True)
    qa_scores.write_text("\n")  # no pretrained QA model configured: an empty table
    return {
        "winowhat": [tsv(r / "winowhat/accuracy.tsv", acc), tsv(r / "winowhat/mcnemar.tsv", mcn),
                     str(r / "winowhat/accuracy.png")],
        "protoqa": [tsv(r / "protoqa/protoqa_dev/summary.tsv", [dict(zip(pq, v)) for v in zip(*pq.values())])],
        "twentyq": [tsv(r / "twentyq/csqa2/metrics.tsv", tq), str(r / "twentyq/csqa2/nll.png"),
                    tsv(r / "audit/summary.tsv", audit)],
        "qads": [tsv(r / "qads/wsd_eval.tsv", wsd), str(qa_scores),
                 tsv(r / "qads/finetune/qa.squad-by-article.tsv", ft),
                 tsv(r / "qads/finetune/qa.squad-by-article.by_domain.tsv", by_dom),
                 tsv(r / "qads/domains.tsv", [{"title": "A", "questions": 5, "words_with_domain": 2,
                                               "domains": "law (2)"}])],
        "contamination": [tsv(r / "contamination/effect.tsv", eff),
                          tsv(r / "contamination/summary.tsv", [{"benchmark": "winogrande_dev",
                              "corpus": "web", "method": "exact", "items": 23, "contaminated": 3,
                              "rate": 0.13}])],
    }


def run_build(root: Path, targets: dict[str, list[str]], configured: list[str], out: Path) -> dict:
    planned = R.planned(targets)
    outputs = {k: str(out / "summary" / name) for k, name in planned.items()}
    tables = {t: R.inputs_of(t, ts) for t, ts in targets.items()}
    R.build(tables, configured + ["results"], ANCHORS, out / "RESULTS.md", outputs,
            json_path=out / "results.json", config={"tasks": configured}, commit="0123abc")
    return outputs


def test_every_published_anchor_has_a_value_and_a_source():
    df = R.read_anchors(ANCHORS)
    assert len(df) and df["source"].str.len().min() > 10
    assert set(df["task"]) <= set(R.TASK_ORDER)
    assert df["id"].is_unique


def test_each_anchor_source_names_a_table_or_section():
    df = R.read_anchors(ANCHORS)
    unnamed = df[~df["source"].str.contains(
        r"Table \d+|Section [0-9IVX]|§\s*\d|appendix|abstract|model card", case=False)]
    assert unnamed.empty, list(unnamed["id"])
    outside = df[~df["id"].str.match(r"(20q|winowhat|protoqa|qads)\.")]
    assert outside["note"].str.contains("primary source outside the four papers").all()


def test_headline_anchors_as_printed_in_the_papers():
    a = R.read_anchors(ANCHORS).set_index("id")
    printed = a["printed"].to_dict()
    assert [printed[f"20q.t5.gpt3-175b.{s}.f1"] for s in ("zero-shot", "few-shot", "fine-tuned")] \
        == ["61.10", "67.14", "82.50"]
    assert printed["20q.s7-4.gpt3-175b.fine-tuned-no-topic.f1"] == "59.40"
    assert printed["winowhat.t2.opt-1.3b.wg-val-original.accuracy"] == "0.60"
    assert printed["winowhat.t2.opt-1.3b.wg-val-paraphrased.accuracy"] == "0.53"
    assert a.loc["winowhat.t2.opt-1.3b.wg-val-paraphrased.accuracy", "percent"] == pytest.approx(53.0)
    assert printed["winowhat.t4.pythia-1b.wg-val-paraphrased.accuracy"] == "0.53"
    assert printed["protoqa.t3.gpt2-finetuned.test.exact-max-answers-1"] == "29.4"
    # QADS Table 2: 22.25 before fine-tuning on QADS, 25.93 (the abstract's "26") after
    assert printed["qads.t2.electra-large.qads-before-ft.accuracy"] == "22.25"
    assert printed["qads.t2.electra-base.qads-before-ft.accuracy"] == "22.15"
    assert printed["qads.t2.electra-large.qads-after-ft.accuracy"] == "25.93"
    assert printed["qads.t2.electra-large.squad2-dev.accuracy"] == "87.85"
    assert not a["source"].str.contains("BenchmarkCards").any()


GOOD = ("20q.t5.gpt3-175b.fine-tuned.f1\ttwentyq\t20Q\tGPT-3 175B\tF1\t82.50\t%\tfine-tuned\t"
        "De Bruyn et al., 20Q, Table 5, row GPT-3 175B, column F-T F1\t")


@pytest.mark.parametrize("row, message", [
    (GOOD.replace("De Bruyn et al., 20Q, Table 5, row GPT-3 175B, column F-T F1", ""), "source"),
    (GOOD.replace("Table 5, row", "the results, row"), "table or section"),
    (GOOD.replace("20q.t5.gpt3-175b", "20Q.t5.GPT3 175b"), "id"),
    (GOOD.replace("20q.t5.gpt3-175b.fine-tuned.f1", "20q.t5.f1"), "id"),
    (GOOD.replace("82.50", "82,50"), "not a number"),
    (GOOD.replace("82.50", "nan"), "not a number"),
    (GOOD.replace("\t%\t", "\tpercent\t"), "unit"),
    (GOOD.replace("twentyq", "twenty_q"), "task"),
    (GOOD + "\n" + GOOD, "already used on line 3"),
])
def test_bad_anchor_rows_are_refused_with_file_and_line(tmp_path, row, message):
    bad = tmp_path / "a.tsv"
    bad.write_text("# comment\n" + "\t".join(R.ANCHOR_COLUMNS) + "\n" + row + "\n")
    with pytest.raises(InputError, match=message) as e:
        R.read_anchors(bad)
    assert str(bad) in str(e.value) and e.value.line in (3, 4)
    bad.write_text("# comment\n" + "\t".join(R.ANCHOR_COLUMNS) + "\n" + GOOD + "\n")
    assert R.read_anchors(bad).loc[0, "percent"] == pytest.approx(82.5)


def test_results_from_tables_and_byte_identical_reruns(tmp_path):
    targets = result_tables(tmp_path / "run")
    a = run_build(tmp_path, targets, list(R.TASK_ORDER), tmp_path / "a")
    b = run_build(tmp_path, targets, list(R.TASK_ORDER), tmp_path / "b")
    assert set(a) == {"winowhat_accuracy", "winowhat_methods", "winowhat_categories",
                      "winowhat_datasets", "paraphrase_effect", "protoqa",
                      "twentyq_yesno", "audits", "qads_wsd", "qads_qa", "qads_qa_domains",
                      "contamination_effect"}
    for key in a:
        assert Path(a[key]).read_bytes() == Path(b[key]).read_bytes(), key
    md = (tmp_path / "a" / "RESULTS.md").read_text()
    assert md == (tmp_path / "b" / "RESULTS.md").read_text()
    # WinoWhat: the paired comparison first, the paper's subset, the control beside it
    assert ("| m1 | 90 | 52.0 | 50.0 | -2.0 [-5.0, +1.0] | 12 / 10 | 0.830 | 52.0 → 53.0 "
            "| +1.0 [-2.0, +4.0] | 0.830 | 63.0 [58.0, 68.0] |") in md  # WSC273: all its items
    assert "subset `in_original_experiment`" in md
    assert "| m1 | 62.0 [57.0, 67.0] | 100 | 60.0 [55.0, 65.0] | 100 |" in md  # unpaired
    assert "| m1 | control: the sentence from the blank on, on both sides | 52.0 | 53.0 |" in md
    assert "![Paraphrase effect per category](summary/paraphrase_effect.png)" in md
    assert "GPT-2 fine-tuned (release predictions file)" in md and "m1 (sampling baseline" in md
    assert "**CSQA2 dev**" in md and "zero-shot with / without topic" in md
    # the calibrated yes/no metrics (issue 28 item 3)
    assert "| m1 | zero shot | 0.650 [0.600, 0.700] | 60.0 [55.0, 65.0] | 62.0 [50.0, 70.0] | 48.0 |" in md
    assert "cross-fitted over 5 folds" in md and "95% percentile bootstrap intervals" in md
    # pooled rows only; the synonym effect over all questions and over the answerable ones
    assert ("| qa | fine-tuned (article folds) | one | 100 | 40.0 | 49.0 | 30.0 | 42.0 | 60.0 | -1.0 "
            "| -3.0 |") in md
    qa = pd.read_csv(a["qads_qa"], sep="\t")
    assert list(qa["hasans_f1_minus_original"]) == [0.0, -3.0, -6.0]
    assert "**Published**" in md and "arXiv:2201.05320" in md
    assert "### Extractive QA by domain" in md
    assert "| qa | law | 2 | 20 | 20 | 20 | 43.0 | 41.0 | 39.0 | -2.0 | -4.0 |" in md  # most questions first
    dom = pd.read_csv(a["qads_qa_domains"], sep="\t")
    assert list(dom["domain"]) == ["law", "art"] and list(dom["titles"]) == ["A, B", "A"]
    sets = pd.read_csv(a["winowhat_datasets"], sep="\t")  # every data set scored, subset all
    assert {"winogrande_dev", "wsc", "mywino"} <= set(sets["dataset"]) and "Every data set scored" in md
    assert "| m1 | mywino | kitchen | 100 | 64.0 [59.0, 69.0] |" in md  # its own category too
    cats = pd.read_csv(a["winowhat_categories"], sep="\t")
    m1 = cats[(cats.model == "m1") & (cats.category == "all")]
    assert m1["difference"].round(4).item() == -0.02 and m1["control_difference"].round(4).item() == 0.01
    assert set(cats["subset"]) == {"in_original_experiment"}
    pq = pd.read_csv(a["protoqa"], sep="\t")  # the provenance rows stay out of the metrics
    assert set(pq.columns) == {"questions", "similarity", "system", *PQ_METRICS} and len(pq) == 8
    assert set(pq["questions"]) == {"protoqa_dev"}  # the question set it scored, named
    assert pq.loc[pq.system == "gen-m1", "max_answers@1"].round(4).tolist() == [0.1, 0.1]
    assert pq.system.tolist()[:4] == ["gpt2finetuned", "human", "gen-m1", "gen-m1-chat"]
    # the samples cut by the token budget, one row per model (the chat variant beside it)
    assert ("| questions | model | prompt | samples | cut by max_new_tokens | cut policy | recipe |\n"
            "|---|---|---|---|---|---|---|\n"
            "| protoqa_dev | m1 | raw | 1500 | 23.4% | complete_words | raw |\n"
            "| protoqa_dev | m1-chat | chat | 1500 | 1.3% | complete_words | raw |") in md
    assert "**questions `protoqa_dev`, exact matching**" in md
    # the Models table: one row per model and table, with what computed it
    models = md[md.index("## Models"):]
    lm = "| pypi:x==1 | Q4 | False | cpu | bfloat16 | chat | Be brief. |"
    for row in (f"| m1 | WinoWhat {lm}", f"| m1 | 20Q yes/no, CSQA2 dev {lm}",
                "| m1 | ProtoQA sampling | pypi:x==1 | Q4 | False | cpu | bfloat16 | raw |  |",
                "| m1-chat | ProtoQA sampling | pypi:x==1 | Q4 | False | cpu | bfloat16 | chat |  |",
                "| qa | QADS QA, training fine-tuned (article folds) | pypi:x==1 | Q4 | False | cpu "
                "| float32 |  |  |"):
        assert row in models, models
    assert "| model | table | source | quantisation | random weights | compute device | compute " \
        "dtype | prompt format | system instruction |" in models


def test_tables_written_before_the_compute_columns_say_not_recorded(tmp_path):
    targets = result_tables(tmp_path / "run", compute=False)
    run_build(tmp_path, targets, list(R.TASK_ORDER), tmp_path / "a")
    md = (tmp_path / "a" / "RESULTS.md").read_text()
    models = md[md.index("## Models"):]
    assert "| m1 | WinoWhat | pypi:x==1 | Q4 | False | not recorded | not recorded |" in models
    assert "| m1 | ProtoQA sampling |  |  |  | not recorded | not recorded |" in models
    assert "| m1 | not recorded | not recorded | not recorded |" in md   # no sampling rows


def test_tasks_not_configured_are_skipped_with_a_line(tmp_path):
    targets = result_tables(tmp_path / "run")
    only = {"winowhat": targets["winowhat"], "contamination": []}  # contamination without a corpus
    outputs = run_build(tmp_path, only, ["winowhat", "contamination"], tmp_path / "o")
    md = (tmp_path / "o" / "RESULTS.md").read_text()
    assert "Skipped: `protoqa` is not in this run's `tasks`" in md
    assert "Skipped: `qads` is not in this run's `tasks`" in md
    assert "No corpus is configured" in md
    assert set(outputs) == {"winowhat_accuracy", "winowhat_methods", "winowhat_categories",
                            "winowhat_datasets", "paraphrase_effect"}


def test_winowhat_subset_is_one_setting_away(tmp_path):
    """winowhat.subset (the results rule's settings): the paper's rows by default, `all` on request,
    in the headline, the tables and the text alike."""
    targets = {"winowhat": result_tables(tmp_path / "run")["winowhat"]}
    tables = {t: R.inputs_of(t, ts) for t, ts in targets.items()}
    for subset in ("in_original_experiment", "all"):
        out = tmp_path / subset
        outputs = {k: str(out / "summary" / name) for k, name in R.planned(targets).items()}
        R.build(tables, ["winowhat", "results"], ANCHORS, out / "RESULTS.md", outputs,
                settings={"winowhat": {"subset": subset}})
        md = (out / "RESULTS.md").read_text()
        head = pd.read_csv(outputs["winowhat_accuracy"], sep="\t")
        assert set(head["subset"]) == {subset} and f"subset `{subset}`" in md
        # the fixture's `all` rows are one point above its in_original_experiment rows
        orig, para = (("63.0 [58.0, 68.0]", "61.0 [56.0, 66.0]") if subset == "all"
                      else ("62.0 [57.0, 67.0]", "60.0 [55.0, 65.0]"))
        assert f"| m1 | {orig} | 100 | {para} | 100 |" in md  # the unpaired table


def test_findings_come_first_and_results_json_holds_every_shown_number(tmp_path):
    targets = result_tables(tmp_path / "run")
    run_build(tmp_path, targets, list(R.TASK_ORDER), tmp_path / "a")
    md = (tmp_path / "a" / "RESULTS.md").read_text()
    assert md.index("## Findings") < md.index("## WinoWhat")
    findings = md[md.index("## Findings"):md.index("## WinoWhat")]
    assert "| 20Q | fine-tuning beats prompting (F1) | every model, CSQA2 dev |" in findings
    assert "**not run** (no fine-tuned arm in this run: prompting only)" in findings
    # m2's originals (52.0 [47.0, 57.0]) do not beat the majority class of the gold labels (2/3)
    assert "at the trivial baseline: original accuracy 47.0 (interval low) ≤ majority class 66.7" \
        in findings
    # the trivial baselines as rows of the task tables, from the gold labels
    assert "| *majority class* (trivial baseline) | 66.7 | – | 100.0 | – |" in md  # the unpaired table
    assert "| *always no answer* (trivial baseline) | – | original | 100 | 60.0 | 60.0 | 0.0 | 0.0 " \
        "| 100.0 | – | – |" in md
    rec = json.loads((tmp_path / "a" / "results.json").read_text())
    validate(rec)
    assert rec["git_commit"] == "0123abc" and rec["config"] == {"tasks": list(R.TASK_ORDER)}
    assert rec["packages"]["pandas"] == pd.__version__
    ww = rec["sections"]["winowhat"]["tables"]["winowhat_accuracy"]
    assert [r["wg_orig_acc"] for r in ww] == [0.62, 0.52] and ww[0]["wg_orig_ci_low"] == 0.57
    assert {f["verdict"] for f in rec["findings"]} <= {"reproduced", "not reproduced", "inconclusive",
                                                       "not run"}
    m1 = [m for m in rec["models"] if m["model"] == "m1" and m["table"] == "WinoWhat"]
    assert m1 and m1[0]["model_sha256"] == "ab"
    bad = dict(rec, findings=[dict(rec["findings"][0], verdict="maybe")])
    with pytest.raises(jsonschema.ValidationError):
        validate(bad)


def test_a_task_without_tables_says_why_its_findings_were_not_run(tmp_path):
    targets = result_tables(tmp_path / "run")
    run_build(tmp_path, {"winowhat": targets["winowhat"]}, ["winowhat"], tmp_path / "o")
    md = (tmp_path / "o" / "RESULTS.md").read_text()
    assert "| QADS | (every finding from `qads`) |  | – | – | – | **not run** (`qads` is not in " \
        "this run's `tasks`) |" in md
