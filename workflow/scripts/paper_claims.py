"""A paper's claims scorecard (results/<paper>/claims.json): replikit.papers.interface.score_claims."""

from replikit.jobs import job
from replikit.papers.interface import score_claims

with job(snakemake):  # noqa: F821
    score_claims(snakemake)  # noqa: F821
