# replikit: re-runs the headline experiments of four lines of deep-learning research.
#   snakemake --cores all                                   (default scale)
#   snakemake --cores 2 --configfile config/smoke.yaml      (CI scale)
#   snakemake --profile profiles/slurm --configfile config/paper.yaml
from pathlib import Path

from snakemake.utils import min_version

from replikit.config import validate_config

min_version("9.0")


configfile: "config/config.yaml"


# Stops the run before any job starts, naming the offending key.
ROOT = Path(workflow.basedir)
validate_config(config, ROOT / "workflow/schemas/config.schema.yaml")


wildcard_constraints:
    seed=r"\d+",
    dataset=r"cifar10|mnist",


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/benign_memorization.smk"
include: "workflow/rules/latent_lookahead.smk"
include: "workflow/rules/continual_learning.smk"
include: "workflow/rules/cold_posterior.smk"
include: "workflow/rules/report.smk"


rule all:
    input:
        "results/report/index.html",
        "results/report/index.md",
        TARGETS,
    default_target: True
