"""The replicated papers. Each is one module pair (see `interface`): `<name>.py` runs the
experiments (its `STAGES`), `<name>_analysis.py` turns their results into figures and claims and
declares the paper (`SPEC`).

`PAPERS` is the one list of them: the registry (`interface.get`) imports a paper's modules only
when that paper is asked for, and a Snakemake job maps its rule to its paper through this list
alone, so it imports nothing of the other papers."""

from __future__ import annotations

from typing import Protocol, TypeVar

# paper name (config block, results/<name>, modules <name>.py and <name>_analysis.py) -> rule-name
# prefix (rules <prefix>_<stage>, <prefix>_figure, <prefix>_claims: lowercase letters and digits).
PAPERS: dict[str, str] = {
    "benign_memorization": "bm",
    "cold_posterior": "cp",
    "continual_learning": "cl",
    "latent_lookahead": "ll",
    "rank_collapse": "rc",
}


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
