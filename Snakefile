# replikit: re-runs the headline experiments of a line of deep-learning research.
#   snakemake --cores all                                   (default scale)
#   snakemake --cores 2 --configfile config/smoke.yaml      (CI scale)
#   snakemake --profile profiles/slurm --configfile config/paper.yaml
import os
import sys
from pathlib import Path

from snakemake.utils import min_version

# first: where replikit (and every job) finds config/papers, also when installed without -e
from replikit.papers import use_workflow

use_workflow(workflow.basedir)

from replikit.core.config import check_tree_scale, read_yaml, share_prepared_data, validate_config
from replikit.core.device import check_available
from replikit.core.jobs import time_limit_hints
from replikit.papers.registry import config_errors

min_version("9.0")


# A YAML syntax error in the default config file names its line (Snakemake's own message does not).
if Path("config/config.yaml").exists():
    read_yaml("config/config.yaml")


configfile: "config/config.yaml"


# Stops the run before any job starts, naming the offending key (the enabled papers' own checks too).
ROOT = Path(workflow.basedir)
validate_config(config, ROOT / "workflow/schemas/config.schema.yaml", config_errors, workflow.configfiles)


# config key outdir: every output under that folder (each scale but the default has its own, and so
# does each rung of the scale ladder); the paths the config gives relative to here are made absolute
# first, so they still point here. With --directory D the tree goes under D/<outdir> (Snakemake
# ignores a workdir directive after --directory, so the folder is entered by hand).
BASE = Path.cwd()  # the tree the run starts in: prepared datasets live here, shared by every scale's tree
if config["outdir"] != ".":
    config["data"]["search_paths"] = [str(Path(p).resolve()) for p in config["data"]["search_paths"]]
    if config["run_store"]:
        config["run_store"] = str(Path(config["run_store"]).resolve())
    if workflow.overwrite_workdir is None:

        workdir: config["outdir"]

    else:
        Path(config["outdir"]).mkdir(parents=True, exist_ok=True)
        os.chdir(config["outdir"])


# Prepared datasets (resources/data, resources/downloads) are the same at every scale: each tree
# links to the base tree's, so a dataset is prepared once (config.share_prepared_data).
share_prepared_data(BASE)


# An output tree holds one scale: results of another scale here (e.g. a smoke run from before each
# scale had its own tree) would be rerun and overwritten, so the run stops first and says where to
# move them.
check_tree_scale(Path("results"), config["scale"], config["outdir"])


# device: cuda on a machine without CUDA stops the run before Snakemake deletes the outputs of the
# jobs it would rerun (on a cluster the jobs' nodes are checked by the jobs themselves).
onstart:
    if workflow.local_exec:
        check_available(config["device"])


# A SLURM job over its time limit: name the config key to raise (the plugin only says TIMEOUT).
onerror:
    for logfile in log:
        for hint in time_limit_hints(Path(logfile).read_text(errors="replace"), RULE_PREFIXES):
            print(f"replikit: {hint}", file=sys.stderr)


wildcard_constraints:
    seed=r"\d+",


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/papers.smk"
include: "workflow/rules/report.smk"


rule all:
    input:
        "results/report/index.html",
        "results/report/index.md",
        TARGETS,
    default_target: True
