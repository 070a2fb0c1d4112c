"""What computed a model's outputs (issue 27): the jobs that read model outputs written by other
jobs carry the compute device and dtype through (ProtoQA's summary from meta.json, QADS scores
from the predictions file), and outputs written before csbench recorded them are named."""
from __future__ import annotations

import json
import logging
import runpy
import sys
from pathlib import Path

import pandas as pd
import pytest

from csbench.errors import InputError

REPO = Path(__file__).resolve().parents[1]


class Files(list):
    """A Snakemake-style list of files with named entries."""

    def __init__(self, *items, **named):
        flat = list(items)
        for value in named.values():
            flat += value if isinstance(value, list) else [value]
        super().__init__(flat)
        self.__dict__.update(named)


def run_script(name: str, tmp_path, monkeypatch, input: Files, output: Files, params: dict,
               config: dict | None = None, wildcards: dict | None = None) -> None:
    """Run workflow/scripts/<name>.py as Snakemake would (a ``snakemake`` object in its globals)."""
    from types import SimpleNamespace

    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", list(root.handlers))
    monkeypatch.setattr(root, "level", root.level)
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)
    job = SimpleNamespace(input=input, output=output, params=SimpleNamespace(**params),
                          config=config or {}, wildcards=SimpleNamespace(**(wildcards or {})),
                          threads=None, log=[str(tmp_path / f"{name}.log")])
    runpy.run_path(str(REPO / "workflow" / "scripts" / f"{name}.py"),
                   init_globals={"snakemake": job}, run_name="__main__")


def _meta(path: Path, model: str, samples: dict | None = None, **compute) -> str:
    cols = {"random_model": False, "model_source": f"pypi:{model}==1", "model_sha256": "ab",
            "model_quant": "Q4_1", **compute}
    path.write_text(json.dumps({"model": model, **cols, "provenance": {}, "settings": {},
                                **(samples or {})}))
    return str(path)


def _eval(path: Path, score: float) -> str:
    from csbench.protoqa.scoring import METRICS

    pd.DataFrame({"question_id": ["q1"] * len(METRICS) + ["mean"] * len(METRICS),
                  "metric": list(METRICS) * 2, "score": [score] * 2 * len(METRICS)}) \
        .to_csv(path, sep="\t", index=False)
    return str(path)


def test_protoqa_summary_carries_each_samplers_compute_rows(tmp_path, monkeypatch):
    from csbench.protoqa import report as R

    keys = [("human", "exact"), ("gen-a", "exact"), ("gen-b", "exact")]
    evals = [_eval(tmp_path / f"{s}.tsv", 0.25 * (i + 1)) for i, (s, _) in enumerate(keys)]
    metas = [_meta(tmp_path / "a.json", "a", {"samples": 600, "samples_cut": 45},
                   compute_device="cpu", compute_dtype="bfloat16", prompt_format="raw",
                   system_instruction=""),
             _meta(tmp_path / "b.json", "b", compute_device="served", compute_dtype="served",
                   prompt_format="chat", system_instruction="")]
    out = tmp_path / "summary.tsv"
    run_script("protoqa_summary", tmp_path, monkeypatch, Files(evals=evals, meta=metas),
               Files(str(out)), {"eval_keys": keys, "gen_models": ["a", "b"], "cut_policy": "drop",
                                       "recipe": "paper"})
    text = out.read_text()
    assert "max_answers@1\t0.5000\t0.7500\t0.2500" in text  # gen-a, gen-b, human: 4 decimals
    summary = R.read_table(out)
    assert summary.columns.tolist() == ["metric", "exact/gen-a", "exact/gen-b", "exact/human"]
    prov = summary.set_index("metric")
    assert prov.loc["compute_dtype"].fillna("").tolist() == ["bfloat16", "served", ""]
    # the sampling rows: b's meta.json was written before they were recorded (empty)
    assert prov.loc["samples"].fillna("").tolist() == ["600", "", ""]
    assert prov.loc["samples_cut_share"].fillna("").tolist() == ["0.0750", "", ""]
    assert prov.loc["cut_policy"].fillna("").tolist() == ["drop", "drop", ""]
    assert prov.loc["recipe"].fillna("").tolist() == ["paper", "paper", ""]
    assert R.protoqa_sampling(summary).fillna("").values.tolist() == \
        [["a", "raw", "600", "0.0750", "drop", "paper"], ["b", "chat", "", "", "drop", "paper"]]
    table = R.protoqa_table(summary)   # RESULTS.md reads the metrics as numbers, as before
    assert table.set_index("system").loc["gen-a", "max_answers@1"] == 0.5
    models = R.protoqa_models(summary)
    assert models[["model", "compute_device", "compute_dtype"]].values.tolist() == \
        [["a", "cpu", "bfloat16"], ["b", "served", "served"]]
    # a meta.json written before the compute columns were recorded: named, with --forcerun
    old = _meta(tmp_path / "old.json", "a")
    with pytest.raises(InputError) as exc:
        run_script("protoqa_summary", tmp_path, monkeypatch, Files(evals=evals, meta=[old, metas[1]]),
                   Files(str(out)), {"eval_keys": keys, "gen_models": ["a", "b"],
                                     "cut_policy": "drop", "recipe": "paper"})
    assert "old.json" in str(exc.value) and "compute_device" in str(exc.value) \
        and "--forcerun" in str(exc.value)


def test_qads_score_records_what_computed_the_predictions(tmp_path, monkeypatch):
    from csbench.provenance import with_compute

    data = {"data": [{"title": "t", "paragraphs": [{"context": "c", "qas": [
        {"id": "q1", "question": "?", "answers": [{"text": "c", "answer_start": 0}]}]}]}]}
    questions = tmp_path / "original.json"
    questions.write_text(json.dumps(data))
    pred, na = tmp_path / "m.original.json", tmp_path / "m.original.na_prob.json"
    compute = {"compute_device": "cpu", "compute_dtype": "bfloat16"}
    pred.write_text(json.dumps(with_compute({"q1": "c"}, compute)))
    na.write_text(json.dumps({"q1": -1.0}))
    out, per_question = tmp_path / "qa_scores.tsv", tmp_path / "qa_items.tsv"
    params = {"pairs": [("m", "original")], "sets": ["original"], "random": {"m": False},
              "source": {"m": "hf:x/y"}, "verified": False, "dataset_name": "squad_v2_dev"}
    run_script("qads_score", tmp_path, monkeypatch,
               Files(questions=[str(questions)], preds=[str(pred)], na_probs=[str(na)]),
               Files(str(out), per_question=str(per_question)), params)
    row = pd.read_csv(out, sep="\t").iloc[0]
    assert (row["exact"], row["compute_device"], row["compute_dtype"]) == (100.0, "cpu", "bfloat16")
    pred.write_text(json.dumps({"q1": "c"}))  # written before: named, with --forcerun
    with pytest.raises(InputError) as exc:
        run_script("qads_score", tmp_path, monkeypatch,
                   Files(questions=[str(questions)], preds=[str(pred)], na_probs=[str(na)]),
                   Files(str(out), per_question=str(per_question)), params)
    assert "m.original.json" in str(exc.value) and "--forcerun" in str(exc.value)
