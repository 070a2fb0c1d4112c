"""Build the WinoWhat item table (all datasets x variants with their requests) and sample templates."""
from pathlib import Path

import pandas as pd

from csbench.datasets import read_entry, read_in_part
from csbench.io import write_parquet, write_tsv
from csbench.logs import snakemake_logger
from csbench.winowhat.items import build_items, template

log = snakemake_logger(snakemake)
inp, p = snakemake.input, snakemake.params
users = {k[len("user_"):]: inp[k] for k in inp.keys() if k.startswith("user_")}
# every data set read with the params the rule reruns on ({name: params}; winogrande_dev first)
sets = {n: read_entry(r, inp[f"set_{n}"], n) for n, r in p.datasets.items()}
items = build_items(sets, pd.read_parquet(inp["winowhat"]), sample_size=p.samples["size"],
                    seed=p.samples["seed"], user_files=users, winowhat_path=inp["winowhat"],
                    parts=[n for n, r in p.datasets.items() if read_in_part(r)])
for (ds, var), n in items.groupby(["dataset", "variant"]).size().items():
    log.info("%s/%s: %d items", ds, var, n)
flagged = items[items["flagged"]][["dataset", "item_id", "sentence", "option1", "option2"]]
log.info("%d paraphrases do not end with the blank: scored with the original method, flagged",
         len(flagged))
write_parquet(items, snakemake.output.table)
write_tsv(flagged, snakemake.output.flagged)
outdir = Path(snakemake.output.templates)
outdir.mkdir(parents=True, exist_ok=True)
for ds in ("winogrande_test", "wsc"):
    if (items["dataset"] == ds).any():
        template(items, ds).to_csv(outdir / f"{ds}.csv", index=False)
