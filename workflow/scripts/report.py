"""Render results/report/index.html (self-contained) and its Markdown twin."""

from pathlib import Path

from replikit.jobs import job
from replikit.report import load_inputs, render

sm = snakemake  # noqa: F821
with job(sm):
    inputs = load_inputs(list(sm.input.claims), list(sm.input.figures), list(sm.input.benchmarks))
    render(str(Path(sm.input.templates[0]).parent), inputs, sm.output.html, sm.output.markdown)
