"""The replicated papers. A paper is its config file `config/papers/<name>.yaml` (settings per scale
and the schema of its block) and its module `<name>.py` (see `interface`), optionally split into a
run module and `<name>_analysis.py`.

The config files are the one list of papers (`paper_names`): the registry (`interface.get`) imports a
paper's modules only when that paper is asked for, so a job imports nothing of the other papers."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, TypeVar

# The papers' config files: one per paper, named <name>.yaml (the config block, results/<name>, the
# module <name>.py).
CONFIGS = Path(__file__).resolve().parents[3] / "config" / "papers"


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
