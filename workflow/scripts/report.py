"""Render results/report/index.html (self-contained), its Markdown twin and the forest plots."""

from pathlib import Path

from replikit.io import read_json
from replikit.jobs import job
from replikit.plotting import forest_plot
from replikit.report import load_inputs, render

sm = snakemake  # noqa: F821
with job(sm):
    for claims, forest in zip(sm.input.claims, sm.output.forests, strict=True):
        forest_plot(read_json(claims), forest)
    inputs = load_inputs(list(sm.input.claims), list(sm.input.figures), list(sm.input.benchmarks),
                         list(sm.output.forests))
    render(str(Path(sm.input.templates[0]).parent), inputs, sm.output.html, sm.output.markdown)
