"""`python -m replikit.papers.rule_index > docs/rules.md`: every rule of the workflow with the file
and function that computes it. The papers' rules are generated from their declarations
(`workflow/rules/papers.smk`), so a name such as `ll_figure` appears in no source file; this index
lets grep find a rule's code from its name in one step (`tests/test_rule_index.py` keeps it current)."""

from __future__ import annotations

import inspect
from pathlib import Path

from . import paper_names
from .interface import get

ROOT = Path(__file__).resolve().parents[3]
FIXED = (  # the workflow's own rules: name, file, what it runs
    ("prepare_dataset", "workflow/rules/data.smk",
     "`replikit.data.prepare` (workflow/scripts/prepare_dataset.py)"),
    ("cost_plan", "workflow/rules/report.smk",
     "`replikit.plan` (workflow/scripts/cost_plan.py), where config key report.cost_plan is true"),
    ("report", "workflow/rules/report.smk",
     "`replikit.report.load_inputs` and `render` (workflow/scripts/report.py)"),
    ("all", "Snakefile", "every paper's figures, scorecard and benchmark records, and the report"),
)


def _where(func) -> str:
    """`path/to/module.py`: `function` of a callable, the path relative to the checkout."""
    path = Path(inspect.getsourcefile(func)).resolve()
    try:
        path = path.relative_to(ROOT)
    except ValueError:
        path = Path("src/replikit") / path.relative_to(path.parents[2])
    return f"`{path}`: `{func.__qualname__}`"


def index() -> str:
    """The Markdown page: the workflow's fixed rules, then each paper's generated ones."""
    lines = ["# Rules", "", "Every rule of the workflow and the code that computes it. A paper's rules are",
             "generated from its declaration (`workflow/rules/papers.smk`): one per stage",
             "(`<prefix>_<stage>`), one figure rule (`<prefix>_figure`, one job per figure) and one claims",
             "rule (`<prefix>_claims`). Regenerate with",
             "`python -m replikit.papers.rule_index > docs/rules.md`.",
             "", "| rule | declared in | computed by |", "|---|---|---|"]
    lines += [f"| `{name}` | `{where}` | {what} |" for name, where, what in FIXED]
    for name in paper_names():
        paper = get(name)
        declared = f"`src/replikit/papers/{paper.claims.__module__.rsplit('.', 1)[-1]}.py`: `SPEC`"
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
