"""The replicated papers. A paper is its config file `config/papers/<name>.yaml` (settings per scale
and the schema of its block) and its module `<name>.py` (see `interface`), optionally split into a
run module and `<name>_analysis.py`.

The config files are the one list of papers (`paper_names`): the registry (`registry.get`) imports a
paper's modules only when that paper is asked for, so a job imports nothing of the other papers.

May import: every room below it (`core`, `data`, `models`, `methods`, `scoring`, `reporting`); never
`plan` or `tools`, which import the papers."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol, TypeVar

WORKFLOW_VARIABLE = "REPLIKIT_WORKFLOW"


def use_workflow(folder: str | Path) -> None:
    """Make `folder` (a Snakefile's own) the workflow whose config/papers every later import of this
    package reads, in this process and every job it starts (they inherit the environment). Call it
    before importing `interface`, which binds CONFIGS when it is imported."""
    global CONFIGS
    os.environ[WORKFLOW_VARIABLE] = str(Path(folder).resolve())
    CONFIGS = _configs()


def _configs() -> Path:
    """The workflow's config/papers: under $REPLIKIT_WORKFLOW (the Snakefile sets it with
    `use_workflow` before it imports the papers, and every job inherits it, so a non-editable
    `pip install .` finds the papers too), else the source checkout's (an editable install), else
    ./config/papers."""
    env = os.environ.get(WORKFLOW_VARIABLE)
    roots = ([Path(env)] if env else []) + [Path(__file__).resolve().parents[3], Path.cwd()]
    for root in roots:
        if (root / "config" / "papers").is_dir():
            return root / "config" / "papers"
    return roots[0] / "config" / "papers"


# The papers' config files: one per paper, named <name>.yaml (the config block, results/<name>, the
# module <name>.py).
CONFIGS = _configs()


def paper_names() -> list[str]:
    """Every paper, sorted: the names of the files in config/papers/."""
    return sorted(p.stem for p in CONFIGS.glob("*.yaml"))


class _Named(Protocol):
    @property
    def name(self) -> str: ...


R = TypeVar("R", bound=_Named)


def unique_runs(experiments: dict[str, list[R]]) -> list[R]:
    """Every run the experiments need, once: runs that several figures share have one name."""
    seen: dict[str, R] = {}
    for runs in experiments.values():
        for r in runs:
            seen.setdefault(r.name, r)
    return list(seen.values())
