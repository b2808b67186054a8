"""How stable a verdict is: the probability that 5 fresh seeds would give the same verdict.

A part's verdict rests on a handful of seeds. Its *stability* is the probability, under the Student-t
predictive of the seeds' own mean and spread (flat prior: sigma^2 ~ (n-1) s^2 / chi^2_(n-1), mu ~
N(mean, sigma^2 / n)), that FRESH_SEEDS new seeds judged by the same rule (`Part.decide`: the t-interval
beyond the threshold and the sign-flip test) give the same verdict. A part below FRAGILE_BELOW is
*fragile*: another set of seeds may well read otherwise. tests/test_stability.py checks the number
against how often fresh seeds drawn from a known effect near the threshold do give the same verdict.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

FRESH_SEEDS = 5
FRAGILE_BELOW = 0.8
DRAWS = 4000  # predictive draws: the probability's Monte Carlo error is at most 0.008 (one s.d.)
CODES = {"replicated": 1, "not replicated": -1, "inconclusive": 0}


def verdict_codes(samples: np.ndarray, threshold: float, direction: str, level: float) -> np.ndarray:
    """`Part.decide`'s rule on every row of `samples` (draws x seeds) at once: 1 replicated, -1 not
    replicated, 0 inconclusive (rows with enough seeds; the caller checks the count)."""
    from scipy import stats as sps

    d = (samples - threshold) * (1.0 if direction == "above" else -1.0)  # the claimed side is > 0
    n = d.shape[1]
    mean = d.mean(axis=1)
    half = sps.t.ppf(0.5 + level / 2, n - 1) * d.std(axis=1, ddof=1) / np.sqrt(n)
    flips = np.array(list(itertools.product((1.0, -1.0), repeat=n)))
    flipped = np.abs(d) @ flips.T / n  # the mean under every sign flip: a set symmetric about 0
    p_claimed = np.mean(flipped >= mean[:, None] - 1e-12, axis=1)
    p_other = np.mean(flipped >= -mean[:, None] - 1e-12, axis=1)
    alpha = (1 - level) / 2
    replicated = (mean - half > 0) & (p_claimed <= alpha)
    refuted = (mean + half < 0) & (p_other <= alpha)
    return np.where(replicated, 1, np.where(refuted, -1, 0))


def predictive_seeds(values: np.ndarray, n_fresh: int, draws: int, rng: np.random.Generator) -> np.ndarray:
    """For each row of `values` (experiments x seeds), `draws` sets of `n_fresh` new seeds from the
    Student-t predictive of that row: shape (experiments, draws, n_fresh)."""
    k, n = values.shape
    sigma = np.sqrt((n - 1) * values.var(axis=1, ddof=1)[:, None] / rng.chisquare(n - 1, (k, draws)))
    mu = values.mean(axis=1)[:, None] + sigma / np.sqrt(n) * rng.standard_normal((k, draws))
    return mu[..., None] + sigma[..., None] * rng.standard_normal((k, draws, n_fresh))


def stabilities(values: np.ndarray, verdicts: Sequence[str], threshold: float, direction: str, level: float,
                min_seeds: int, n_fresh: int = FRESH_SEEDS, draws: int = DRAWS, seed: int = 0) -> np.ndarray:
    """`stability` of every row of `values` (experiments x seeds, each with a spread) at once."""
    if n_fresh < min_seeds:
        return np.array([float(v == "inconclusive") for v in verdicts])
    fresh = predictive_seeds(np.asarray(values, dtype=float), n_fresh, draws, np.random.default_rng(seed))
    codes = verdict_codes(fresh.reshape(-1, n_fresh), threshold, direction, level).reshape(len(values), draws)
    return np.mean(codes == np.array([CODES[v] for v in verdicts])[:, None], axis=1)


def stability(values: Sequence[float], verdict: str, threshold: float, direction: str, level: float,
              min_seeds: int, n_fresh: int = FRESH_SEEDS, draws: int = DRAWS, seed: int = 0) -> float | None:
    """The probability that `n_fresh` fresh seeds give `verdict` again; None where the seeds carry
    no spread to judge it from (fewer than 2, or all equal)."""
    x = np.asarray([v for v in values if np.isfinite(v)], dtype=float)
    if x.size < 2 or x.max() == x.min():
        return None
    return float(stabilities(x[None, :], [verdict], threshold, direction, level, min_seeds, n_fresh, draws,
                             seed)[0])


def fragile(value: float | None) -> bool:
    """Whether a part's stability is below FRAGILE_BELOW (None: not known, so not marked)."""
    return value is not None and value < FRAGILE_BELOW
