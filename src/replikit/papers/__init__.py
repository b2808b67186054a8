"""One module per replicated paper: run specs, experiments, aggregation, figures and claims."""

from __future__ import annotations

from collections.abc import Callable, Iterable
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


def per_seed_files(run_file: Callable[[str, int], str], names: Iterable[str], seeds: list[int]) -> list[str]:
    """`run_file(name, seed)` for every run name (each once, in order) and seed: a rule's inputs."""
    return [run_file(n, s) for n in dict.fromkeys(names) for s in seeds]


def claim_files(run_file: Callable[[str, int], str], experiments: dict[str, list[_Named]],
                seeds: list[int]) -> list[str]:
    """Every run's per-seed file, once: what a paper's claims rule reads."""
    return per_seed_files(run_file, sorted(r.name for r in unique_runs(experiments)), seeds)
