"""Official SQuAD 2.0 metric per model and question set (original / one / all)."""
import pandas as pd

from csbench.io import read_json, write_tsv
from csbench.logs import snakemake_logger
from csbench.provenance import pop_compute
from csbench.qads.workflow import score_row

log = snakemake_logger(snakemake)
p = snakemake.params
rows = []
for (model, qs), pred, na in zip(p.pairs, snakemake.input.preds, snakemake.input.na_probs):
    data = read_json(snakemake.input.questions[p.sets.index(qs)])["data"]
    preds, compute = pop_compute(read_json(pred), pred)  # what computed the predictions
    rows.append(score_row(model, qs, data, preds, read_json(na)))
    rows[-1]["random_model"] = p.random.get(model, False)  # scores of random weights mean nothing
    rows[-1]["model_source"] = p.source.get(model, "")
    rows[-1].update(compute)
    rows[-1]["verified"] = p.verified  # False: questions not checked by annotators
    log.info("%s", rows[-1])
write_tsv(pd.DataFrame(rows), snakemake.output[0], float_format="%.2f")
