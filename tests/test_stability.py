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
