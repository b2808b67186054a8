"""Super consistency (paper seven): the sharpness by power iteration against an exact Hessian, the
pairing of the two parameterizations, config errors, the margin rule and the claims' ability to fail."""

from __future__ import annotations

import math

import pandas as pd
import pytest
import torch
import torch.nn.functional as F

from replikit.methods.curvature import feature_movement, hvp_operator, random_direction, top_eigenvalue
from replikit.papers import super_consistency as sc
from replikit.papers import super_consistency_analysis as sca
from replikit.plan.bill import load

CFG = {"widths": [8, 16, 32], "base_width": 8, "depth": 1, "eta0": 4.0, "steps": 6, "batch_size": 8,
       "n_train": 64, "hessian_batch": 16, "measure_every": 3, "power_iters": 40}


def _data(n: int = 80) -> dict:
    g = torch.Generator().manual_seed(0)
    return {"x_train": torch.randint(0, 256, (n, 3, 4, 4), generator=g, dtype=torch.uint8),
            "y_train": torch.arange(n) % 10}


def _exact_top(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    names = [n for n, _ in model.named_parameters()]
    shapes = [p.shape for p in model.parameters()]
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])

    def loss(theta: torch.Tensor) -> torch.Tensor:
        parts, i = {}, 0
        for name, shape in zip(names, shapes, strict=True):
            k = math.prod(shape)
            parts[name] = theta[i:i + k].view(shape)
            i += k
        return F.cross_entropy(torch.func.functional_call(model, parts, (x, 0)), y)

    return float(torch.linalg.eigvalsh(torch.autograd.functional.hessian(loss, flat.double())).max())


def test_power_iteration_finds_the_exact_hessians_top_eigenvalue():
    """On a small network trained a few steps (so its readout is not zero): the estimate matches the
    top eigenvalue of the explicitly formed Hessian, within 1 %."""
    data = sc.prepare(_data(), CFG, 0, torch.device("cpu"))
    model = sc.build("mup", 8, CFG, 0, data["x"].shape[1], 10, torch.device("cpu")).double()
    opt = torch.optim.SGD(model.parameters(), lr=2.0)
    for _ in range(5):
        opt.zero_grad()
        F.cross_entropy(model(data["x"].double(), 0), data["y"]).backward()
        opt.step()
    x, y = data["x_h"].double(), data["y_h"]
    params = list(model.parameters())
    start = random_direction(params, torch.Generator().manual_seed(0))
    value, _, used = top_eigenvalue(hvp_operator(F.cross_entropy(model(x, 0), y), params), start, iters=500,
                                    tol=1e-7)
    assert value == pytest.approx(_exact_top(model, x, y), rel=1e-2) and used < 500


def test_a_negative_dominant_spectrum_still_gives_the_top_eigenvalue():
    """diag(-5, 1, 2): power iteration alone finds -5; the shifted second pass finds 2."""
    d = torch.tensor([-5.0, 1.0, 2.0])
    value, _, _ = top_eigenvalue(lambda v: [d * v[0]], [torch.tensor([1.0, 1.0, 1.0])], iters=200, tol=1e-9)
    assert value == pytest.approx(2.0, rel=1e-4)


def test_at_the_base_width_the_two_parameterizations_are_the_same_run():
    """Same initial weights, same SGD rate, same batches: identical measurements at the base width; at
    twice the width the NTK network's rate is eta0 and muP's eta0 * 2, and their features move apart."""
    data = _data()
    out = {p: sc.run(f"train_param-{p}", CFG, data, 3) for p in sc.PARAMS}
    base = [it for it in out["mup"]["items"] if it["width"] == 8][0], \
        [it for it in out["ntk"]["items"] if it["width"] == 8][0]
    assert base[0]["points"] == base[1]["points"] and base[0]["sgd_lr"] == base[1]["sgd_lr"] == 4.0
    wide = {p: [it for it in out[p]["items"] if it["width"] == 32][0] for p in sc.PARAMS}
    assert wide["mup"]["sgd_lr"] == 16.0 and wide["ntk"]["sgd_lr"] == 4.0
    assert [p["step"] for p in wide["mup"]["points"]] == [0, 3, 6]
    assert wide["mup"]["points"][0]["feature_movement"] == 0.0
    assert wide["mup"]["points"][-1]["feature_movement"] > wide["ntk"]["points"][-1]["feature_movement"]


def test_feature_movement_is_relative_to_the_initial_features():
    phi0 = torch.ones(4, 3)
    assert feature_movement(phi0 * 1.5, phi0) == pytest.approx(0.5)


def test_config_errors_name_the_key_and_the_fix():
    bad = {**CFG, "base_width": 12, "hessian_batch": 100, "steps": 7}
    errors = " | ".join(sc.config_errors(bad))
    assert "'super_consistency.base_width' (12) is not one of" in errors
    assert "'super_consistency.hessian_batch' (100) is larger than" in errors
    assert "'super_consistency.steps' (7) is not a multiple of" in errors
    assert sc.config_errors(CFG) == []


def _points(mup_spread: float, ntk_spread: float, seeds: int = 5, widths=(32, 64, 128)) -> pd.DataFrame:
    """Fake measurements: log10 sharpness of width i is -1 + spread * i / (len - 1) (+ noise) at every
    step after 0; feature movement 1 under muP at every width, 1 / sqrt(N / N0) under NTK."""
    g = torch.Generator().manual_seed(0)
    rows = []
    for seed in range(seeds):
        for param, spread in (("mup", mup_spread), ("ntk", ntk_spread)):
            for i, w in enumerate(widths):
                for step in (0, 10, 20):
                    noise = 0.01 * float(torch.randn(1, generator=g))
                    log = -1.0 + (spread * i / (len(widths) - 1) if step else 0.0) + noise
                    move = 0.0 if step == 0 else (1.0 if param == "mup" else math.sqrt(widths[0] / w))
                    rows.append({"run": f"train_param-{param}", "seed": seed, "param": param, "width": w,
                                 "step": step, "sharpness": 10 ** log, "lambda_max": 10 ** log, "loss": 1.0,
                                 "feature_movement": move * (1 + 0.01 * float(torch.randn(1, generator=g))),
                                 "hvps": 5, "diverged_at": None})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("mup_spread, verdicts", [(0.0, ("replicated", "replicated", "replicated")),
                                                  (0.3, ("not replicated", "inconclusive", "replicated"))])
def test_sc1_can_fail_when_the_widths_sharpness_differs_under_mup(mup_spread, verdicts):
    """SC-1 at the smoke margin: replicated when muP's widths agree, not replicated when they differ by
    0.3 decades; SC-2 (NTK spread 0.3 minus muP's) then carries no evidence either way."""
    cfg = load(["config/smoke.yaml"])["super_consistency"]
    claims = {c.id: c for c in sca.claims(sc.experiment_runs(cfg), cfg)}
    results = {"points": _points(mup_spread, 0.3)}
    got = []
    for cid in ("SC-1", "SC-2", "SC-3"):
        parts = [p.decide(0.9, 5) for p in claims[cid].measure(results)]
        got.append("replicated" if all(p.verdict == "replicated" for p in parts) else
                   "not replicated" if any(p.verdict == "not replicated" for p in parts) else "inconclusive")
    assert tuple(got) == verdicts


def test_the_margin_rule_is_the_base_widths_seed_range_whatever_the_ntk_contrast():
    """MARGIN_RULE: at the base width, the range over the pilot's seeds (of log10 sharpness at each step
    after 0, averaged; of log10 feature movement at the end), rounded down to 0.01 decades and the
    sharpness capped; the NTK scaling's spread across widths, which the falsifiers read, plays no part."""
    cfg = {"widths": [8, 16, 32], "base_width": 8}
    for contrast in (0.0, 0.3, 2.0):
        curves = {}
        for i, w in enumerate(cfg["widths"]):
            noise = [0.0, 0.05, 0.12, 0.03, 0.08]  # log10 offsets per seed: a range of 0.12 decades
            curves[f"sharpness width-{w}"] = {s: {0.0: 0.1, 10.0: 10 ** (-1 + e + contrast * i),
                                                  20.0: 10 ** (-1 + e / 2 + contrast * i)}
                                              for s, e in enumerate(noise)}  # ranges 0.12, 0.06: mean 0.09
            curves[f"movement width-{w}"] = {s: {0.0: 0.0, 20.0: 10 ** (-e - contrast * i)}
                                             for s, e in enumerate([0.0, 0.1, 0.155, 0.05, 0.12])}
        got = sca.margins_from_curves(curves, cfg)
        assert got["sharpness"]["margin"] == 0.09 and got["features"]["margin"] == 0.15, contrast
    wide = {k: {s: {t: v ** 4 for t, v in c.items()} for s, c in by.items()} if k.startswith("sharp") else by
            for k, by in curves.items()}
    assert sca.margins_from_curves(wide, cfg)["sharpness"]["margin"] == sca.SHARPNESS_CAP


def test_a_diverged_width_leaves_its_seed_out_instead_of_narrowing_the_range():
    """A width whose run diverged has no later points: the range over the other widths would look
    consistent, so that seed has no SC-1 value."""
    points = _points(0.0, 0.3)
    gone = ((points["param"] == "mup") & (points["seed"] == 0) & (points["width"] == 128)
            & (points["step"] == 20))
    spread = sca.trajectory_spread(points[~gone], "mup")
    assert 0 not in spread and sorted(spread) == [1, 2, 3, 4]
