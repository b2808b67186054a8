"""A paper's claims scorecard (results/<paper>/claims.json): replikit.papers.glue.score_claims."""

from replikit.core.jobs import job
from replikit.papers.glue import score_claims

with job(snakemake):  # noqa: F821
    score_claims(snakemake)  # noqa: F821
