"""The verdict rule under simulated nulls and effects: calibrated, and with power where it matters.

Each check draws per-seed statistics many times and applies `Part.decide` exactly as the claims
jobs do. The false-"replicated" rate under no effect must stay at or below the one-sided nominal
level (1 - ci_level) / 2 plus three Monte-Carlo standard errors, for normal, heavy-tailed
(Cauchy) and discrete (+-1 coin) noise at 3 and 5 seeds; the power against a 2-sigma effect must be
at least 80 % at the seed counts the configs use for judged claims.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import yaml

from replikit.core.config import load_config
from replikit.scoring.claims import Part, combine, difference
from replikit.scoring.stats import min_seeds_for

DRAWS = 2000
LEVEL = 0.90
NOMINAL = (1 - LEVEL) / 2


MIN_SEEDS = 5  # the production setting (stats.min_seeds); fewer seeds are inconclusive by design


def _rate(draw, n: int, direction: str = "above", verdict: str = "replicated", seed: int = 0) -> float:
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(DRAWS):
        part = Part("x", dict(enumerate(draw(rng, n))), 0.0, direction).decide(LEVEL, MIN_SEEDS)
        hits += part.verdict == verdict
    return hits / DRAWS


NULLS = {
    "normal": lambda rng, n: rng.normal(0, 1, n),
    "cauchy": lambda rng, n: rng.standard_cauchy(n),
    "coin": lambda rng, n: rng.choice([-1.0, 1.0], n),  # a discrete statistic (e.g. argmax on a grid)
}
MC_ERROR = 3 * math.sqrt(NOMINAL * (1 - NOMINAL) / DRAWS)


@pytest.mark.parametrize("noise", sorted(NULLS))
@pytest.mark.parametrize("n", [5, 8])
@pytest.mark.parametrize("direction", ["above", "below"])
def test_no_effect_is_called_replicated_at_most_at_the_nominal_level(noise, n, direction):
    rate = _rate(NULLS[noise], n, direction)
    assert rate <= NOMINAL + MC_ERROR, f"{noise}, {n} seeds, {direction}: {rate:.4f} > {NOMINAL}"


@pytest.mark.parametrize("n", [5, 8])
def test_no_effect_is_called_not_replicated_at_most_at_the_nominal_level(n):
    assert _rate(NULLS["normal"], n, verdict="not replicated") <= NOMINAL + MC_ERROR


def test_fewer_seeds_than_the_production_minimum_are_never_judged():
    assert _rate(lambda rng, k: rng.normal(5.0, 1.0, k), 4) == 0.0


def _claim_rates(k: int, effect: float = 0.0, seed: int = 0) -> dict[str, float]:
    """Verdicts of a k-part claim through the real `combine`, every part drawn independently."""
    rng = np.random.default_rng(seed)
    counts = {"replicated": 0, "not replicated": 0, "inconclusive": 0}
    for _ in range(DRAWS):
        parts = [Part(f"p{i}", dict(enumerate(rng.normal(effect, 1.0, 5))), 0.0).decide(LEVEL, MIN_SEEDS)
                 for i in range(k)]
        counts[combine([p.verdict for p in parts])] += 1
    return {v: c / DRAWS for v, c in counts.items()}


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_multi_part_claims_under_no_effect(k):
    """A claim is replicated only when every part is: under no effect at most the per-part level. It is
    "not replicated" when any part is, so that rate grows with the parts: at most 1 - (1 - a)^k."""
    rates = _claim_rates(k)
    assert rates["replicated"] <= NOMINAL + MC_ERROR
    assert rates["not replicated"] <= 1 - (1 - NOMINAL) ** k + MC_ERROR


def test_a_four_part_claim_still_has_power_at_two_sigma_per_part():
    assert _claim_rates(4, effect=2.0, seed=3)["replicated"] >= 0.5


def test_the_floor_rule_never_turns_no_evidence_into_a_verdict():
    """Both arms at the floor in every seed (neither learned): inconclusive, whatever the difference."""
    rng = np.random.default_rng(4)
    for _ in range(200):
        a = dict(enumerate(rng.choice([0.0, -0.1], 5)))
        b = dict(enumerate(np.zeros(5)))
        part = difference("x", a, b, floor=0.0).decide(LEVEL, MIN_SEEDS)
        assert part.verdict == "inconclusive" and part.no_evidence


def _judged_seed_counts(root) -> set[int]:
    """Seed counts the configs use for claims they judge (fewer than the level needs are reported
    as inconclusive by design: latent lookahead's 1-seed smoke run)."""
    counts = set()
    for name in ("smoke.yaml", "config.yaml", "paper.yaml"):
        cfg = load_config(root / "config" / name, root / "workflow/schemas/config.schema.yaml")
        counts.add(len(cfg["seeds"]))
        for section in cfg.values():
            if isinstance(section, dict) and section.get("seeds"):
                counts.add(len(section["seeds"]))
    return {n for n in counts if n >= min_seeds_for(LEVEL)}


def test_configs_judge_with_enough_seeds(root):
    assert _judged_seed_counts(root) == {5}


def test_power_against_a_two_sigma_effect_at_the_configured_seeds(root):
    for n in _judged_seed_counts(root):
        power = _rate(lambda rng, k: rng.normal(2.0, 1.0, k), n, seed=1)
        assert power >= 0.80, f"{n} seeds: power {power:.3f}"


def test_schema_default_level_is_the_one_calibrated_here(root):
    schema = yaml.safe_load((root / "workflow/schemas/config.schema.yaml").read_text())
    assert schema["properties"]["stats"]["properties"]["ci_level"]["default"] == LEVEL
