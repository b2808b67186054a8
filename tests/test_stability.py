"""A verdict's stability (replikit.scoring.stability): the vectorized rule is Part.decide's, and the
stated probability that 5 fresh seeds give the same verdict matches how often they do, for effects near
the threshold (issue 64)."""

from __future__ import annotations

import numpy as np
import pytest

from replikit.scoring.claims import Part
from replikit.scoring.stability import CODES, FRAGILE_BELOW, fragile, stabilities, stability, verdict_codes

LEVEL, SEEDS, DRAWS = 0.90, 5, 1000


@pytest.mark.parametrize("direction", ["above", "below"])
def test_the_vectorized_rule_is_part_decides(direction):
    samples = np.random.default_rng(1).normal(0.1, 0.3, (300, SEEDS))
    codes = verdict_codes(samples, 0.1, direction, LEVEL)
    expected = [CODES[Part("x", dict(enumerate(row)), 0.1, direction).decide(LEVEL, SEEDS).verdict]
                for row in samples]
    assert codes.tolist() == expected
    assert set(expected) == {1, 0, -1}  # every verdict occurs, so the check is not vacuous


def _calibration(effect: float, rng: np.random.Generator) -> tuple[float, float]:
    """Over DRAWS experiments of 5 seeds from N(effect, 1) against threshold 0: the mean stated
    stability, and how often 5 fresh seeds from the same truth gave the same verdict."""
    seen = rng.normal(effect, 1.0, (DRAWS, SEEDS))
    fresh = rng.normal(effect, 1.0, (DRAWS, SEEDS))
    first = verdict_codes(seen, 0.0, "above", LEVEL)
    again = verdict_codes(fresh, 0.0, "above", LEVEL)
    names = {code: name for name, code in CODES.items()}
    stated = stabilities(seen, [names[v] for v in first], 0.0, "above", LEVEL, SEEDS, draws=400)
    return float(np.mean(stated)), float(np.mean(first == again))


@pytest.mark.parametrize("effect", [0.3, 0.6])
def test_the_stated_stability_matches_how_often_fresh_seeds_agree_near_the_threshold(effect):
    """A known effect near the threshold (0.3 and 0.6 seed standard deviations above it): the mean
    stated probability is within 0.1 of the observed frequency of the same verdict, over 1,000 draws."""
    stated, observed = _calibration(effect, np.random.default_rng(int(effect * 10)))
    print(f"effect {effect}: stated {stated:.3f}, observed {observed:.3f}")
    assert abs(stated - observed) <= 0.1


def test_where_it_is_off_it_errs_as_documented():
    """Exactly at the threshold the predictive spreads fresh seeds wider than the truth does, so it
    understates how often "inconclusive" comes again (the flag errs on the safe side); where a 5-seed
    verdict is nearly a coin flip (an effect of one seed s.d.), the seeds that gave a verdict tend to
    have overshot, so it overstates (a winner's curse: there the number is an upper bound). The
    sizes are printed; neither is within the 0.1 that the test above holds near the threshold."""
    at, at_seen = _calibration(0.0, np.random.default_rng(0))
    far, far_seen = _calibration(1.0, np.random.default_rng(10))
    print(f"effect 0.0: stated {at:.3f}, observed {at_seen:.3f}; effect 1.0: stated {far:.3f}, "
          f"observed {far_seen:.3f}")
    assert at < at_seen and far > far_seen


def test_stability_needs_a_spread_and_marks_fragile_rows():
    assert stability([1.0], "inconclusive", 0.0, "above", LEVEL, SEEDS) is None
    assert stability([1.0, 1.0, 1.0], "replicated", 0.0, "above", LEVEL, SEEDS) is None
    clear = stability([5.0, 5.1, 4.9, 5.2, 5.0], "replicated", 0.0, "above", LEVEL, SEEDS)
    edge = stability([0.1, 0.9, 0.4, 0.05, 0.6], "replicated", 0.0, "above", LEVEL, SEEDS)
    assert clear > 0.99 and not fragile(clear)
    assert edge < FRAGILE_BELOW and fragile(edge) and not fragile(None)
    again = stability([0.1, 0.9, 0.4, 0.05, 0.6], "replicated", 0.0, "above", LEVEL, SEEDS)
    assert again == edge  # a fixed seed: the number in claims.json is reproducible


# ---------------------------------------------------------------- a row's stability, jointly (issue 85)

def _outcome(claim: Part, falsified: Part) -> int:
    """What a one-part row with its falsifier reads, as `stability.row_outcomes` codes it."""
    from replikit.scoring.claims import contrast
    from replikit.scoring.stability import row_outcomes

    seen_contrast = contrast(claim, falsified, LEVEL, SEEDS)
    return int(row_outcomes(np.array([[CODES[claim.verdict]]]), np.array([[CODES[falsified.verdict]]]),
                            np.array([[CODES[seen_contrast.verdict]]]), [[0]], [True])[0])


def _judged(seeds: np.ndarray) -> tuple[Part, Part]:
    """A claim part (column 0) and its falsifier's (column 1), judged against 0."""
    return tuple(Part(n, dict(enumerate(seeds[:, i])), 0.0).decide(LEVEL, SEEDS) for i, n in enumerate("cf"))


def _simulated_rows(tau: float, rows: int, rng: np.random.Generator, rho: float = 0.5) -> tuple[int, float]:
    """Rows of one claim part and its falsifier, their seeds correlated (rho), whose true offsets from
    the threshold are drawn from N(0, tau^2) in seed s.d.: of the rows stated at FRAGILE_BELOW or more
    (`row_stability`), how many, and the share whose 5 fresh seeds from the same truth keep the row's
    outcome."""
    from replikit.scoring.claims import row_stability

    cov = [[1.0, rho], [rho, 1.0]]
    kept = []
    for _ in range(rows):
        truth = rng.normal(0.0, tau, 2)
        seen, fresh = (rng.multivariate_normal(truth, cov, SEEDS) for _ in range(2))
        c, f = _judged(seen)
        stated = row_stability([c], [f], LEVEL, SEEDS, draws=400, seed=int(rng.integers(1 << 30)))
        if stated is not None and stated >= FRAGILE_BELOW:
            kept.append(_outcome(c, f) == _outcome(*_judged(fresh)))
    return len(kept), float(np.mean(kept)) if kept else float("nan")


def test_rows_stated_stable_keep_their_standing_under_the_stated_prior():
    """The calibration the fragile line promises: under the stated prior (PRIOR_SCALE), at least 80 % of
    the rows stated at 0.8 or more keep their outcome on fresh seeds. The rates under a narrower and a
    wider prior are printed beside it (a prior narrower than the stated one, most effects at the
    threshold, is where the number overstates)."""
    from replikit.scoring.stability import PRIOR_SCALE

    rng = np.random.default_rng(85)
    n, rate = _simulated_rows(PRIOR_SCALE, 1500, rng)
    print(f"stated prior tau={PRIOR_SCALE:g}: {n} rows stated >= {FRAGILE_BELOW:g}, {rate:.3f} kept")
    for tau in (0.5, 2.0):
        m, other = _simulated_rows(tau, 600, rng)
        print(f"prior tau={tau:g}: {m} rows stated >= {FRAGILE_BELOW:g}, {other:.3f} kept")
    assert n >= 100 and rate >= FRAGILE_BELOW


def test_a_rows_stability_is_joint_and_shrunk_toward_the_threshold():
    from replikit.scoring.claims import row_stability

    clear = Part("c", {s: 3.0 + 0.1 * s for s in range(5)}, 0.0).decide(LEVEL, SEEDS)
    gone = Part("f", {s: -3.0 + 0.1 * s for s in range(5)}, 0.0).decide(LEVEL, SEEDS)
    assert row_stability([clear], [gone], LEVEL, SEEDS) > 0.95
    edge = Part("c", {0: 0.1, 1: 0.9, 2: 0.4, 3: 0.05, 4: 0.6}, 0.0).decide(LEVEL, SEEDS)
    alone = row_stability([edge], None, LEVEL, SEEDS)
    assert alone < stability(list(edge.per_seed.values()), edge.verdict, 0.0, "above", LEVEL, SEEDS)  # shrunk
    near = Part("f", {0: -0.1, 1: 0.3, 2: -0.4, 3: -0.05, 4: -0.3}, 0.0).decide(LEVEL, SEEDS)
    assert row_stability([edge], [near], LEVEL, SEEDS) <= alone + 0.02  # the falsifier's doubt adds
    assert row_stability([Part("c", {0: 1.0}, 0.0).decide(LEVEL, 1)], None, LEVEL, SEEDS) is None
