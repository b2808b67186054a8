"""One module pair per replicated paper (see `interface`): `<name>.py` runs the experiments,
`<name>_analysis.py` turns their results into figures and claims and declares the paper (`SPEC`)."""

from __future__ import annotations

from typing import Protocol, TypeVar


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
