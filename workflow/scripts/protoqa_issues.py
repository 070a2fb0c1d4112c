"""List what was odd in a predictions file (unknown ids, empty lists/answers, duplicates, gaps)."""
import pandas as pd

from csbench.io import write_tsv
from csbench.logs import snakemake_logger
from csbench.protoqa.data import check_against, load_predictions, load_questions

log = snakemake_logger(snakemake)
preds = load_predictions(snakemake.input.predictions)
check_against(preds, load_questions(snakemake.input.questions, snakemake.params.targets))
df = pd.DataFrame(preds.issues, columns=["kind", "question_id", "line", "detail"])
log.info("%s: %d issues %s", preds.path, len(df), df.kind.value_counts().to_dict())
write_tsv(df, snakemake.output[0])
