"""Official SQuAD 2.0 metric per model and question set (original / one / all) of one squad data
set (named in the `dataset` column), and each question's scores (the findings' intervals in
RESULTS.md)."""
import pandas as pd

from csbench.io import read_json, write_tsv
from csbench.logs import snakemake_logger
from csbench.provenance import pop_compute
from csbench.qads.metric import item_scores
from csbench.qads.workflow import ITEM_COLUMNS, score_row

log = snakemake_logger(snakemake)
p = snakemake.params
rows, items = [], []
for (model, qs), pred, na in zip(p.pairs, snakemake.input.preds, snakemake.input.na_probs):
    data = read_json(snakemake.input.questions[p.sets.index(qs)])["data"]
    preds, compute = pop_compute(read_json(pred), pred)  # what computed the predictions
    na = read_json(na)
    rows.append(score_row(model, qs, data, preds, na))
    items += [{"model": model, "questions": qs, **r} for r in item_scores(data, preds, na)]
    rows[-1]["random_model"] = p.random.get(model, False)  # scores of random weights mean nothing
    rows[-1]["model_source"] = p.source.get(model, "")
    rows[-1].update(compute)
    rows[-1]["verified"] = p.verified  # False: questions not checked by annotators
    rows[-1]["dataset"] = p.dataset_name  # the data set the questions come from
    log.info("%s", rows[-1])
write_tsv(pd.DataFrame(rows), snakemake.output[0], float_format="%.2f")
write_tsv(pd.DataFrame(items, columns=ITEM_COLUMNS), snakemake.output.per_question,
          float_format="%.4f")
