"""Intervals and tests over seeds: the verdict rule's statistics.

A claim part is a statistic per seed (usually a paired difference). Its interval is the
Student-t interval of the seed mean; its test is that interval *and* an exact sign-flip
(permutation) test, both one-sided at (1 - level) / 2. The t interval alone is not valid for
discrete statistics (e.g. an argmax on a grid, where every seed can agree exactly); the sign-flip
test is exact for any distribution symmetric about the null, so their conjunction keeps the
false-"replicated" rate at or below the nominal level for normal, heavy-tailed and discrete noise
(tests/test_calibration.py simulates all three). The price: with n seeds the smallest sign-flip
p-value is 2^-n, so a one-sided level of 5 % needs at least 5 seeds.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np


def _finite(values: Sequence[float]) -> np.ndarray:
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        raise ValueError("need at least one value")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"non-finite per-seed values: {v.tolist()}")
    return v


def t_interval(values: Sequence[float], level: float = 0.90) -> tuple[float, float, float]:
    """Mean and two-sided Student-t interval of the mean; one value has no interval (NaN, NaN)."""
    v = _finite(values)
    mean = float(v.mean())
    if v.size < 2:
        return mean, float("nan"), float("nan")
    from scipy import stats as sps  # here, not at import: scipy.stats costs every job ~1 s

    half = sps.t.ppf(0.5 + level / 2, v.size - 1) * v.std(ddof=1) / np.sqrt(v.size)
    return mean, float(mean - half), float(mean + half)


def sign_flip_pvalue(values: Sequence[float], null: float = 0.0, alternative: str = "greater") -> float:
    """Exact one-sided p-value of the mean of `values - null` over all 2^n sign flips."""
    d = _finite(values) - null
    if alternative == "less":
        d = -d
    observed = d.mean()
    flips = np.array(list(itertools.product((1.0, -1.0), repeat=d.size)))
    means = (flips * np.abs(d)).mean(axis=1)
    return float(np.mean(means >= observed - 1e-12))


def min_seeds_for(level: float) -> int:
    """The fewest seeds with which the sign-flip test can reach one-sided (1 - level) / 2."""
    alpha = (1 - level) / 2
    return int(np.ceil(np.log2(1 / alpha) - 1e-12))
