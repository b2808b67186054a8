"""Claims scorecard: each paper declares claims; verdicts come from the numbers only.

A claim has one or more parts. Each part is a statistic per seed (e.g. a paired
difference between two conditions), its mean and bootstrap CI over seeds, and a
threshold it must exceed. A part is `replicated` when the whole CI lies above the
threshold, `not replicated` when the whole CI lies at or below it, `inconclusive`
otherwise or with fewer seeds than `min_seeds`. A claim is replicated when all its
parts are, not replicated when any part is not, inconclusive otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from .stats import bootstrap_ci

VERDICTS = ("replicated", "not replicated", "inconclusive")


@dataclass
class Part:
    """One measured statistic of a claim."""

    label: str
    per_seed: dict[int, float]
    threshold: float
    direction: str = "above"  # "above": CI must exceed threshold; "below": CI must stay under it
    mean: float = float("nan")
    ci_low: float = float("nan")
    ci_high: float = float("nan")
    verdict: str = "inconclusive"

    def decide(self, level: float, n_boot: int, min_seeds: int) -> Part:
        values = [self.per_seed[s] for s in sorted(self.per_seed)]
        if not values:
            self.verdict = "inconclusive"
            return self
        self.mean, self.ci_low, self.ci_high = bootstrap_ci(values, level, n_boot)
        if len(values) < min_seeds:
            self.verdict = "inconclusive"
        elif self.direction == "above":
            self.verdict = ("replicated" if self.ci_low > self.threshold else
                            "not replicated" if self.ci_high <= self.threshold else "inconclusive")
        else:
            self.verdict = ("replicated" if self.ci_high < self.threshold else
                            "not replicated" if self.ci_low >= self.threshold else "inconclusive")
        return self


@dataclass(frozen=True)
class Claim:
    """A paper claim and how it is measured. `measure` maps aggregated results to parts."""

    id: str
    statement: str
    paper_value: str
    paper_source: str
    statistic: str
    rule: str
    measure: Callable[[dict], list[Part]] = field(repr=False)


def combine(verdicts: list[str]) -> str:
    if verdicts and all(v == "replicated" for v in verdicts):
        return "replicated"
    if any(v == "not replicated" for v in verdicts):
        return "not replicated"
    return "inconclusive"


def evaluate(claims: list[Claim], results: dict, level: float = 0.95, n_boot: int = 10_000,
             min_seeds: int = 3) -> list[dict]:
    """Measure and judge every claim; a claim whose inputs are missing is inconclusive."""
    rows = []
    for claim in claims:
        try:
            parts = [p.decide(level, n_boot, min_seeds) for p in claim.measure(results)]
            note = ""
        except KeyError as e:  # a condition this scale did not run
            parts, note = [], f"not measurable at this scale: missing {e}"
        n_seeds = min((len(p.per_seed) for p in parts), default=0)
        row = {k: v for k, v in asdict(claim).items() if k != "measure"}
        row.update(
            verdict=combine([p.verdict for p in parts]) if parts else "inconclusive",
            n_seeds=n_seeds, ci_level=level, note=note,
            parts=[{k: v for k, v in asdict(p).items()} for p in parts],
        )
        rows.append(row)
    return rows
