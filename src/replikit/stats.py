"""Bootstrap confidence intervals over seeds."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def bootstrap_ci(values: Sequence[float], level: float = 0.95, n_boot: int = 10_000,
                 seed: int = 0) -> tuple[float, float, float]:
    """Mean and percentile-bootstrap CI of the mean; a single value gives a zero-width CI."""
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        raise ValueError("bootstrap_ci needs at least one value")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"bootstrap_ci got non-finite values: {v.tolist()}")
    rng = np.random.default_rng(seed)
    means = v[rng.integers(0, v.size, size=(n_boot, v.size))].mean(axis=1)
    alpha = (1 - level) / 2
    lo, hi = np.quantile(means, [alpha, 1 - alpha])
    return float(v.mean()), float(lo), float(hi)


def paired_differences(a: dict[int, float], b: dict[int, float]) -> list[float]:
    """a[seed] - b[seed] over the seeds both have (seeds pair init and labels)."""
    common = sorted(set(a) & set(b))
    if not common:
        raise ValueError("no common seeds to pair")
    return [a[s] - b[s] for s in common]
