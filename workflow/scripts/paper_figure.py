"""One figure of a paper, its table and its provenance: replikit.papers.interface.draw_figure."""

from replikit.jobs import job
from replikit.papers.interface import draw_figure

with job(snakemake):  # noqa: F821
    draw_figure(snakemake)  # noqa: F821
