"""Fine-tune a causal LM (a `finetune` model spec) into resources/models/<name>/ with its
provenance.json and training_log.tsv (csbench.finetune)."""
from csbench.finetune import finetune
from csbench.logs import snakemake_logger

log = snakemake_logger(snakemake)
s = snakemake.params.train
dev = getattr(snakemake.input, "dev", None) or None  # a spec without a dev table: []
finetune(snakemake.input.base, snakemake.input.data, snakemake.output[0], s,
         device=snakemake.params.device, dev_path=dev, base_name=s["base"])
log.info("done: %s", snakemake.output[0])
