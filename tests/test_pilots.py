"""Every margin that a pilot sets (issue 30): the committed config value is what the paper's stated
rule gives on the committed pilot curves, and the pilot's seeds are not the verdicts' seeds."""

from __future__ import annotations

import json

import pytest

from replikit.plan.bill import load
from replikit.plan.pilot import PAPERS, pilot_file, read_curves, rule_module


def configured(paper: str, cfg: dict) -> dict[str, float]:
    """The margins the config holds, by claim (induction heads' cap, max_steps, is set by its rule too)."""
    if paper == "induction_heads":
        return {**cfg["margins"], "max_steps": cfg["max_steps"]}
    return cfg["margins"] if "margins" in cfg else {"CL-5": cfg["cl5_tolerance"],
                                                                  "CL-2": cfg["cl2_tolerance"]}


@pytest.mark.parametrize("paper", sorted(PAPERS))
@pytest.mark.parametrize("scale", ["smoke", "default"])
def test_the_committed_margins_follow_from_the_committed_pilot(paper, scale):
    pilot = json.loads(pilot_file(paper, scale).read_text())
    config = load([f"config/{scale}.yaml"] if scale != "default" else [])
    cfg, module = config[paper], rule_module(paper)
    seeds = cfg.get("seeds") or config["seeds"]
    assert pilot["seeds"] and not set(pilot["seeds"]) & set(seeds) and pilot["rule"] == module.MARGIN_RULE
    got = module.margins_from_curves(read_curves(pilot), cfg)
    assert {k: v["margin"] for k, v in got.items()} == pilot["margins"] == configured(paper, cfg)


def test_the_cl5_rule_reads_the_curvature_of_the_accuracy_curve():
    """AA = 0.8 (1 - k x^2) around the optimum: a shift of sqrt(0.02 / k) decades costs 2 % of it."""
    import math

    from replikit.papers import continual_learning_analysis as cla

    cfg = load(["config/smoke.yaml"])["continual_learning"]
    lo, hi = cla._gamma_ends(cfg)
    gammas = cfg["gamma_sweep"]["gammas"]
    mid = math.log10(sorted(gammas)[len(gammas) // 2])
    ntp = {s: {64.0: 0.3 + s / 100, 1024.0: 0.25} for s in range(5)}
    for k, want in ((0.5, 0.2), (2.0, 0.1)):
        curve = {g: 0.8 * (1 - k * (math.log10(g) - mid) ** 2) for g in gammas}
        got = cla.margins_from_curves({lo.name: {0: curve, 1: curve}, hi.name: {0: curve},
                                       cla._ntp_widths(cfg).name: ntp}, cfg)
        assert got["CL-5"]["margin"] == want


def test_the_cl2_rule_is_the_seed_range_at_the_base_width_whatever_ntps_width_effect():
    """CL2_MARGIN_RULE: the range of CFr over the pilot's seeds at N0 = 64, rounded down to 0.005;
    NTP's change across widths, which CL-2's falsifier reads, does not move it."""
    from replikit.papers import continual_learning_analysis as cla

    for effect in (0.0, 0.05, 0.5):
        curves = {seed: {64.0: 0.3 + e, 256.0: 0.3 - effect / 2, 1024.0: 0.3 - effect}
                  for seed, e in enumerate((0.0, 0.013, 0.0275, 0.01, 0.02))}
        assert cla.cl2_margin(curves, 64)["margin"] == 0.025
    with pytest.raises(ValueError, match="no run at the base width 32"):
        cla.cl2_margin(curves, 32)


def test_a_noise_margin_is_the_mean_seed_range_rounded_down_and_capped():
    from replikit.scoring.aggregate import margin_from_seed_range

    by = {"a": {0: 0.1, 1: 0.14, 2: 0.12, 3: 0.11, 4: 0.13},  # ranges 0.04 and 0.02
          "b": {0: 0.0, 1: 0.02, 2: 0.01, 3: 0.005, 4: 0.015}}
    assert margin_from_seed_range(by, 0.005)["margin"] == 0.03
    assert margin_from_seed_range(by, 0.02)["margin"] == 0.02
    assert margin_from_seed_range(by, 0.005, cap=0.01)["margin"] == 0.01
    with pytest.raises(ValueError, match="reads 5 pilot seeds per setting, not \\[2\\]"):
        margin_from_seed_range({"a": {0: 1.0, 1: 2.0}}, 0.01)  # a range grows with the seeds' count


def test_the_pilot_tool_applies_a_changed_rule_to_the_committed_curves(tmp_path, monkeypatch):
    """`--committed`: the rule now in the module, on the committed pilot's curves, gives the committed
    margins (what tests/test_pilots.py's first test checks, through the tool's own path)."""
    from replikit.plan import pilot as tool

    for paper in ("super_consistency", "shaped_transformer", "continual_learning"):
        committed = json.loads(pilot_file(paper, "default").read_text())
        monkeypatch.setattr(tool, "PILOTS", tmp_path)
        (tmp_path / f"{paper}.default.json").write_text(json.dumps(committed))
        tool.main([paper, "--scale", "default", "--committed"])
        again = json.loads((tmp_path / f"{paper}.default.json").read_text())
        # the margins exactly; the derivation's floats to their last bits (a pilot file computed before
        # NumPy's loops were pinned, replikit.core.numerics, rounds some of them otherwise there)
        assert _same(again, committed), paper
        monkeypatch.undo()


def _same(a: object, b: object) -> bool:
    """Equal, floats within 1e-12 relative (nested dicts and lists)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float):
        return a == pytest.approx(b, rel=1e-12, abs=1e-15)
    return a == b


def test_only_a_rule_that_reads_checkpoints_takes_the_checkpoints_flag(tmp_path):
    from replikit.plan.pilot import main

    with pytest.raises(SystemExit, match="cannot be read from checkpoints"):
        main(["depthwise_transfer", "--scale", "default", "--runs", str(tmp_path), "--checkpoints"])
    with pytest.raises(SystemExit, match="no pilot runs under"):
        main(["induction_heads", "--scale", "default", "--runs", str(tmp_path), "--checkpoints"])



def test_margins_from_another_scales_pilot_carry_no_evidence():
    """A noise margin does not transfer between scales: the paper block (no pilot there) names the scale
    whose pilot sized its margins, `margins_from`, and SC-1's, SC-3's and ST-1's margin parts then carry
    no evidence (they read inconclusive), while a block's own margins do; the key is no setting."""
    from replikit.papers import shaped_transformer as st
    from replikit.papers import shaped_transformer_analysis as sta
    from replikit.papers import super_consistency as sc
    from replikit.papers import super_consistency_analysis as sca
    from replikit.scoring.fidelity import deviations
    from tests.test_shaped_transformer import _samples
    from tests.test_super_consistency import _points

    paper, default = load(["config/paper.yaml"]), load([])
    for name in ("super_consistency", "shaped_transformer"):
        assert paper[name]["margins_from"] == "default" and "margins_from" not in default[name]
        assert not [d for d in deviations(default[name], paper[name]) if d["key"] == "margins_from"]
    smoke = load(["config/smoke.yaml"])
    for borrowed in (None, "default"):
        cfg = {**smoke["shaped_transformer"], **({"margins_from": borrowed} if borrowed else {})}
        claims = {c.id: c for c in sta.claims(st.experiment_runs(cfg), cfg)}
        parts = claims["ST-1"].measure(_samples(0.0)) + claims["ST-1"].falsifier.measure(_samples(0.0))
        assert all(bool(p.no_evidence) == bool(borrowed) for p in parts), borrowed
        cfg = {**smoke["super_consistency"], **({"margins_from": borrowed} if borrowed else {})}
        claims = {c.id: c for c in sca.claims(sc.experiment_runs(cfg), cfg)}
        results = {"points": _points(0.0, 0.3)}
        margin_parts = claims["SC-1"].measure(results) + claims["SC-3"].measure(results)[1:]
        assert all(bool(p.no_evidence) == bool(borrowed) for p in margin_parts), borrowed
        if borrowed:
            assert "default scale's pilot" in margin_parts[0].no_evidence
            assert margin_parts[0].decide(0.9, 5).verdict == "inconclusive"
