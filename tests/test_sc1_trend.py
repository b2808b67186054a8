"""SC-1 reads the change of the sharpness across the widths (issue 85): its statistic, its margin by
TREND_RULE from the committed pilot (the config holds it), the probability that it passes where the width
has no effect at all (at least 0.8 unless the cap binds, printed), and its falsifier's power in the pilot."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from replikit.papers import super_consistency_analysis as sca
from replikit.plan.bill import load
from replikit.plan.pilot import pilot_file, read_curves
from replikit.scoring.claims import combine


def _cfg(scale: str) -> dict:
    return load([f"config/{scale}.yaml"] if scale != "default" else [])["super_consistency"]


def _curves(scale: str) -> dict:
    return read_curves(json.loads(pilot_file("super_consistency", scale).read_text()))


def _points(curves: dict, param: str) -> pd.DataFrame:
    """The pilot's sharpness curves as the figure and claims jobs load points."""
    return pd.DataFrame([{"param": param, "width": int(key.split("-")[1]), "seed": seed, "step": step,
                          "sharpness": value}
                         for key, by_seed in curves.items() if key.startswith("sharpness width-")
                         for seed, by_step in by_seed.items() for step, value in by_step.items()])


def test_the_trend_is_the_change_across_the_widths_in_decades():
    rows = [{"param": "mup", "width": w, "seed": s, "step": t, "sharpness": 0.1 * w ** 0.25}
            for w in (64, 128, 256, 512) for s in (0, 1) for t in (0, 50, 100)]
    points = pd.DataFrame(rows)
    span = math.log10(512 / 64)
    assert sca.trajectory_trend(points, "mup") == pytest.approx({0: 0.25 * span, 1: 0.25 * span})
    flat = points.assign(sharpness=0.1)
    assert sca.trajectory_trend(flat, "mup") == pytest.approx({0: 0.0, 1: 0.0})
    gap = points[~((points["width"] == 512) & (points["seed"] == 1) & (points["step"] == 50))]
    assert set(sca.trajectory_trend(gap, "mup")) == {0}  # a seed missing a width at a step has no value


@pytest.mark.parametrize("scale", ["smoke", "default"])
def test_the_configured_trend_margin_follows_from_the_committed_pilot(scale):
    cfg = _cfg(scale)
    got = sca.trend_margin_from_curves(_curves(scale), cfg)
    assert got["margin"] == cfg["trend_margin"]
    rates = sca.null_pass_rates(sca.pilot_deviations(_curves(scale)), sca._widths(cfg),
                                [0.05, 0.08, 0.1, 0.15])
    print(f"\n{scale}: SC-1's margin {got['margin']} decades passes where the width has no effect with "
          f"probability {got['pass_rate']:.3f}; at other margins: {rates}")
    assert got["pass_rate"] >= sca.TREND_POWER or got["margin"] == sca.SHARPNESS_CAP


def test_the_range_over_widths_could_barely_pass_where_the_width_has_no_effect():
    """Why the statistic changed: SC-1's old statistic, the range over the default's widths, against its
    old margin (0.08 decades), under the same simulated noise."""
    cfg = _cfg("default")
    dev = sca.pilot_deviations(_curves("default"))
    picks = np.random.default_rng(0).integers(0, len(dev), size=(20_000, 5, len(sca._widths(cfg))))
    draws = dev[picks]
    per_seed = (draws.max(2) - draws.min(2)).mean(-1)
    upper = per_seed.mean(-1) + 2.132 * per_seed.std(-1, ddof=1) / math.sqrt(5)
    rate = float(np.mean((upper < 0.08) & (per_seed.max(-1) < 0.08)))
    print(f"\nthe range over widths below 0.08 decades, no width effect: passes with probability {rate:.3f}")
    assert rate < 0.8


def test_the_pilots_ntk_arm_breaks_sc1s_margin_at_the_default():
    """SC-1's falsifier can read "not replicated": the pilot's NTK arm (seeds 100-104, the default's
    settings), judged by SC-1's rule, leaves the margin."""
    cfg = _cfg("default")
    points = _points(_curves("default"), "ntk")
    parts = [p.decide(0.90, 5) for p in sca._sc1_parts({"points": points}, "ntk", sca._widths(cfg),
                                                        cfg["trend_margin"], "")]
    print("\npilot NTK trend per seed:", {s: round(v, 3) for s, v in parts[0].per_seed.items()})
    assert combine([p.verdict for p in parts]) == "not replicated"
