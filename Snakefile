# csbench — build, audit and score commonsense-reasoning benchmarks.
# Thin entry point: config validation, rule includes, and `rule all` (built in common.smk).
import os

from csbench.config import check_config_files
from csbench.config import validate as validate_config
from csbench.runtime import job_environment
from csbench.wordnet import use_nltk_data


check_config_files(["config.yaml"])  # an empty file or YAML error: named with file and line


configfile: "config.yaml"


report: "workflow/report/workflow.rst"


validate_config(config, os.path.join(workflow.basedir, "workflow", "schemas", "config.schema.yaml"))
use_nltk_data(config["nltk_data"])  # exported to every job
job_environment()  # OpenMP workers sleep when idle (jobs share cores); see csbench.runtime


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/models.smk"
include: "workflow/rules/winowhat.smk"
include: "workflow/rules/protoqa.smk"
include: "workflow/rules/twentyq.smk"
include: "workflow/rules/audit.smk"
include: "workflow/rules/qads.smk"
include: "workflow/rules/contamination.smk"
include: "workflow/rules/results.smk"  # last: reads the targets the task files registered


rule all:
    input:
        all_targets(),
    default_target: True
