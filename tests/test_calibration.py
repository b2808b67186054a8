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

from replikit.claims import Part
from replikit.config import load_config
from replikit.stats import min_seeds_for

DRAWS = 2000
LEVEL = 0.90
NOMINAL = (1 - LEVEL) / 2


def _rate(draw, n: int, direction: str = "above", verdict: str = "replicated", seed: int = 0) -> float:
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(DRAWS):
        part = Part("x", dict(enumerate(draw(rng, n))), 0.0, direction).decide(LEVEL, min_seeds=2)
        hits += part.verdict == verdict
    return hits / DRAWS


NULLS = {
    "normal": lambda rng, n: rng.normal(0, 1, n),
    "cauchy": lambda rng, n: rng.standard_cauchy(n),
    "coin": lambda rng, n: rng.choice([-1.0, 1.0], n),  # a discrete statistic (e.g. argmax on a grid)
}
MC_ERROR = 3 * math.sqrt(NOMINAL * (1 - NOMINAL) / DRAWS)


@pytest.mark.parametrize("noise", sorted(NULLS))
@pytest.mark.parametrize("n", [3, 5])
@pytest.mark.parametrize("direction", ["above", "below"])
def test_no_effect_is_called_replicated_at_most_at_the_nominal_level(noise, n, direction):
    rate = _rate(NULLS[noise], n, direction)
    assert rate <= NOMINAL + MC_ERROR, f"{noise}, {n} seeds, {direction}: {rate:.4f} > {NOMINAL}"


@pytest.mark.parametrize("n", [3, 5])
def test_no_effect_is_called_not_replicated_at_most_at_the_nominal_level(n):
    assert _rate(NULLS["normal"], n, verdict="not replicated") <= NOMINAL + MC_ERROR


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
