"""Figure: accuracy orig vs transf per model and common-sense category."""
import pandas as pd

from csbench.logs import snakemake_logger
from csbench.winowhat.plot import plot_accuracy

log = snakemake_logger(snakemake)
acc = pd.read_csv(snakemake.input[0], sep="\t")
note = " (random weights)" if acc.get("random_model", pd.Series(dtype=bool)).any() else ""
plot_accuracy(acc, snakemake.output[0], subset=snakemake.params.subset, title_note=note)
log.info("wrote %s", snakemake.output[0])
