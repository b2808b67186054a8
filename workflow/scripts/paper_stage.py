"""One job of a paper's stage (training, data, probes, benchmark): replikit.papers.glue.run_stage."""

from replikit.core.jobs import job
from replikit.papers.glue import run_stage

with job(snakemake) as device:  # noqa: F821
    run_stage(snakemake, device)  # noqa: F821
