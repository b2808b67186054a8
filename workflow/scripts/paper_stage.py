"""One job of a paper's stage (training, data, probes, benchmark): replikit.papers.interface.run_stage."""

from replikit.jobs import job
from replikit.papers.interface import run_stage

with job(snakemake) as device:  # noqa: F821
    run_stage(snakemake, device)  # noqa: F821
