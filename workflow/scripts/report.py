"""Render results/report/index.html (self-contained), its Markdown twin and the forest plots; with
config key report.cost_plan, the "Cost of the paper scale" from rule cost_plan's plan."""

from pathlib import Path

from replikit.core.io import read_json
from replikit.core.jobs import job
from replikit.reporting.plotting import forest_plot
from replikit.reporting.report import load_inputs, render, section_of

sm = snakemake  # noqa: F821
with job(sm):
    for claims, forest in zip(sm.input.claims, sm.output.forests, strict=True):
        card = read_json(claims)  # titled by its section: two datasets of one paper are two plots
        forest_plot({**card, "paper": section_of(card["paper"], claims)}, forest)
    plan = sm.input.cost_plan  # [] when config key report.cost_plan is false
    plan = plan if isinstance(plan, str) else next(iter(plan), None)
    inputs = load_inputs(list(sm.input.claims), list(sm.input.figures), list(sm.input.benchmarks),
                         list(sm.output.forests), plan, list(sm.input.ladders), dict(sm.params.code),
                         list(sm.input.earlier))
    render(str(Path(sm.input.templates[0]).parent), inputs, sm.output.html, sm.output.markdown)
