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


# ---------------------------------------------------------------- a row's stability, jointly

# The stated prior of a row's stability: each statistic's true offset from its threshold is drawn from
# N(0, (PRIOR_SCALE * sigma)^2), sigma its seed-to-seed s.d. A verdict is read on the seeds that made
# it, so their mean overshoots where the effect is small (a winner's curse); the prior shrinks it back
# toward the threshold by n tau^2 / (n tau^2 + 1) before fresh seeds are predicted (tau = PRIOR_SCALE),
# so that, of rows stated at FRAGILE_BELOW or more, at least that share keep their standing under this
# prior (tests/test_stability.py prints the rates, under it and under wider and narrower ones).
PRIOR_SCALE = 1.0
MIN_JOINT_SEEDS = 3  # fewer seeds common to every part: no joint spread to draw from


def joint_predictive(values: np.ndarray, centres: np.ndarray, n_fresh: int, draws: int,
                     rng: np.random.Generator, prior_scale: float = PRIOR_SCALE) -> np.ndarray:
    """Fresh seeds of several statistics at once (`values`: seeds x statistics, their seeds' own
    correlation kept): their means shrunk toward `centres`, then a Gaussian predictive whose covariance
    is the seeds' sample covariance scaled by (n - 1) / chi^2_(n-1) (the flat-prior posterior of the
    spread; with one statistic, `predictive_seeds` up to the shrinkage). Shape (draws, n_fresh, stats)."""
    n = values.shape[0]
    mean = values.mean(axis=0)
    resid = (values - mean) / np.sqrt(n - 1)  # resid.T @ resid: the sample covariance
    w = np.where(values.std(axis=0) > 0, n * prior_scale ** 2 / (n * prior_scale ** 2 + 1), 1.0)
    scale = np.sqrt((n - 1) / rng.chisquare(n - 1, draws))[:, None]
    spread = rng.standard_normal((draws, n)) @ resid  # the means' draws, with the seeds' correlation
    mu = centres + w * (mean - centres) + np.sqrt(w) * scale / np.sqrt(n) * spread
    noise = rng.standard_normal((draws, n_fresh, n)) @ resid
    return mu[:, None, :] + scale[:, :, None] * noise


def combined_codes(codes: np.ndarray) -> np.ndarray:
    """`claims.combine` on codes (draws x parts): 1 when every part is 1, -1 when any is -1, else 0."""
    if codes.shape[1] == 0:
        return np.zeros(codes.shape[0], dtype=int)
    return np.where((codes == 1).all(axis=1), 1, np.where((codes == -1).any(axis=1), -1, 0))


def row_outcomes(claim: np.ndarray, falsifier: np.ndarray | None, contrast: np.ndarray | None,
                 groups: list[list[int]], evident: list[bool]) -> np.ndarray:
    """What a row reads in each draw (codes: draws x parts), as `claims.standing` would count it: its
    verdict (1, -1, 0), and for a replicated row with a falsifier 10 when it is told apart, 20 when a
    falsifier part fools it, 30 when the falsifier is inconclusive without a significant contrast
    (`claims.discrimination`)."""
    verdict = combined_codes(claim)
    if falsifier is None:
        return verdict
    f_verdict = combined_codes(falsifier[:, [i for i, e in enumerate(evident) if e]])
    fooled = np.zeros(len(verdict), dtype=bool)
    by_contrast = np.ones(len(verdict), dtype=bool) if contrast is not None else np.zeros(len(verdict), bool)
    for g in groups:
        fooled |= (falsifier[:, g] == 1).all(axis=1)
        if contrast is not None:
            by_contrast &= (contrast[:, g] == 1).any(axis=1)
    told = (f_verdict == -1) | by_contrast
    return np.where(verdict != 1, verdict, np.where(fooled, 20, np.where(told, 10, 30)))
