"""One figure of a paper, its table and its provenance: replikit.papers.glue.draw_figure."""

from replikit.core.jobs import job
from replikit.papers.glue import draw_figure

with job(snakemake):  # noqa: F821
    draw_figure(snakemake)  # noqa: F821
