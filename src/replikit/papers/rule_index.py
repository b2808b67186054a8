"""`python -m replikit.papers.rule_index > docs/rules.md`: every rule of the workflow with the file
and function that computes it. The papers' rules are generated from their declarations
(`workflow/rules/papers.smk`), so a name such as `ll_figure` appears in no source file; this index
lets grep find a rule's code from its name in one step (`tests/test_rule_index.py` keeps it current)."""

from __future__ import annotations

import inspect
from pathlib import Path

from replikit.papers import paper_names
from replikit.papers.registry import get

PACKAGE = Path(__file__).resolve().parents[1]  # the replikit package folder
FIXED = (  # the workflow's own rules: name, file, what it runs
    ("prepare_dataset", "workflow/rules/data.smk",
     "`replikit.data.prepare.prepare` (workflow/scripts/prepare_dataset.py)"),
    ("cost_plan", "workflow/rules/report.smk",
     "`replikit.plan.bill` (workflow/scripts/cost_plan.py); its own target, in `all` where config key "
     "report.cost_plan is true"),
    ("report", "workflow/rules/report.smk",
     "`replikit.reporting.report.load_inputs` and `render` (workflow/scripts/report.py)"),
    ("all", "Snakefile", "every paper's figures, scorecard and benchmark records, and the report"),
)


def _where(func) -> str:
    """`src/replikit/.../module.py`: `function` of a callable, the path as the checkout names it
    (also from an installed copy, whose package folder is not under src/)."""
    path = Path(inspect.getsourcefile(func)).resolve().relative_to(PACKAGE.parent)
    return f"`src/{path}`: `{func.__qualname__}`"


def index() -> str:
    """The Markdown page: the workflow's fixed rules, then each paper's generated ones."""
    lines = ["# Rules", "", "Every rule of the workflow and the code that computes it. A paper's rules are",
             "generated from its declaration (`workflow/rules/papers.smk`): one per stage",
             "(`<prefix>_<stage>`, one job per run and seed; with config key `batch_seeds`, as at the",
             "smoke and default scales, one job per run for all the paper's seeds, and",
             "`<prefix>_<stage>_seeds<first>` per run for each set of fresh or earlier seeds), one figure",
             "rule (`<prefix>_figure`, one job per figure) and one claims rule (`<prefix>_claims`).",
             "Regenerate with",
             "`python -m replikit.papers.rule_index > docs/rules.md`.",
             "", "| rule | declared in | computed by |", "|---|---|---|"]
    lines += [f"| `{name}` | `{where}` | {what} |" for name, where, what in FIXED]
    for name in paper_names():
        paper = get(name)
        declared = f"{_where(paper.claims).rsplit(': ', 1)[0]}: `SPEC`"  # SPEC sits beside its claims
        for stage in paper.stages:
            lines.append(f"| `{paper.prefix}_{stage.name}` | {declared} (stage `{stage.name}`) | "
                         f"{_where(stage.run)} |")
        for fig in paper.figures:
            lines.append(f"| `{paper.prefix}_figure` (figure `{fig.name}`) | {declared} | "
                         f"{_where(fig.func)} |")
        lines.append(f"| `{paper.prefix}_claims` | {declared} | {_where(paper.claims)} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(index(), end="")
