"""AUROCs of the membership signals, the Mann-Whitney test against WinoWhat correctness, the
paraphrase effect by signal quartile, and the figure, for every model."""
import pandas as pd

from csbench.contamination import signals_stats as st
from csbench.contamination.signals_report import plot
from csbench.io import write_tsv
from csbench.logs import snakemake_logger
from csbench.provenance import read_model_table

log = snakemake_logger(snakemake)
b = snakemake.params.bootstrap
auc, mw, qt = [], [], []
for model in snakemake.params.models:
    sig = read_model_table(snakemake.input[f"signals__{model}"], model)
    res = read_model_table(snakemake.input[f"results__{model}"], model)
    auc.append(st.auroc_table(model, sig, b["n"], b["seed"], b["level"]))
    mw.append(st.mannwhitney_table(model, sig, res))
    qt.append(st.quartile_table(model, sig, res))
out = snakemake.output
for frames, cols, path in ((auc, st.AUROC_COLUMNS, out.auroc), (mw, st.MW_COLUMNS, out.mannwhitney),
                           (qt, st.QUARTILE_COLUMNS, out.quartiles)):
    df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=cols)
    log.info("\n%s", df.to_string(index=False))
    write_tsv(df, path, float_format="%.4g")
plot(pd.read_csv(out.auroc, sep="\t"), pd.read_csv(out.quartiles, sep="\t"), out.figure)
