"""Depthwise hyperparameter transfer (Bordelon et al., ICLR 2024): runs, one real job, the claims on
data where the optimum does and does not move, and the verdict rule's calibration through the claims'
own `measure` functions."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pandas as pd
import pytest
import torch

from replikit.core.config import ConfigError, load_config
from replikit.core.io import file_digest, read_json
from replikit.papers import depthwise_transfer as dt
from replikit.papers import depthwise_transfer_analysis as dta
from replikit.papers import interface, registry
from replikit.scoring.claims import evaluate
from tests.conftest import ROOT

SCHEMA = ROOT / "workflow/schemas/config.schema.yaml"
SCALES = {s: load_config(ROOT / f"config/{s}.yaml", SCHEMA)["depthwise_transfer"]
          for s in ("smoke", "config", "paper", "preflight")}
LEVEL, MIN_SEEDS, SEEDS = 0.90, 5, range(5)
DRAWS = 200
NOMINAL = (1 - LEVEL) / 2
BOUND = NOMINAL + 3 * math.sqrt(NOMINAL * (1 - NOMINAL) / DRAWS)


@pytest.fixture
def smoke() -> dict:
    return json.loads(json.dumps(SCALES["smoke"]))


def _claims(cfg: dict) -> dict:
    return {c.id: c for c in dta.claims(dt.experiment_runs(cfg), cfg)}


# ---------------------------------------------------------------- runs and the job


@pytest.mark.parametrize("scale", sorted(SCALES))
def test_run_names_round_trip_and_match_the_pattern(scale):
    runs = registry.get("depthwise_transfer").runs_of(SCALES[scale])
    assert runs
    for name in runs:
        assert re.fullmatch(dt.Sweep.pattern(), name) and dt.Sweep.parse(name).name == name
    assert dt.sweep("sqrtl", 4, 64).name == "sweep_branch-sqrtl_depth-4_width-64"
    with pytest.raises(ValueError, match="branch 'half' \\(one of sqrtl, one\\)"):
        dt.Sweep.parse("sweep_branch-half_depth-4_width-64")


def test_both_branch_scales_start_from_the_same_weights_and_differ_only_in_the_branch(smoke):
    a = dt.build(dt.sweep("sqrtl", 4, 16), smoke, 3, (12,), torch.device("cpu"))
    b = dt.build(dt.sweep("one", 4, 16), smoke, 3, (12,), torch.device("cpu"))
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))
    assert a.branch == pytest.approx(0.5) and b.branch == 1.0


@pytest.mark.parametrize("model", ["mlp", "rescnn"])
def test_one_tiny_job_writes_its_sweep(tmp_path, tiny_images, smoke, model):
    tensors, manifest = tmp_path / "tensors.pt", tmp_path / "manifest.json"
    torch.save(tiny_images, tensors)
    manifest.write_text(json.dumps({"sha256": file_digest(tensors)}))
    cfg = dt.run_config({**smoke, "model": model, "base_width": 8, "lrs": [0.5, 2.0, 1e6], "steps": 3,
                         "batch_size": 8, "n_train": 32, "n_eval": 16, "n_test": 10},
                        "sweep_branch-one_depth-2_width-8")
    out = tmp_path / "metrics.json"
    files = {"tensors": str(tensors), "manifest": str(manifest)}
    run = "sweep_branch-one_depth-2_width-8"
    job = interface.Job({"run": run, "seed": "1"}, files, {"metrics": str(out)}, cfg, None,
                        torch.device("cpu"))
    dt.train_job(job)
    m = read_json(out)
    assert (m["run"], m["seed"], m["depth"], m["width"]) == (job.wildcards["run"], 1, 2, 8)
    assert m["branch"] == "one"
    assert [it["lr"] for it in m["items"]] == [0.5, 2.0, 1e6] and m["config"] == cfg and "device" in m
    assert not m["items"][0]["diverged"] and m["items"][0]["train_loss"] > 0
    assert m["items"][2]["diverged"] and m["items"][2]["train_loss"] is None  # eta0 = 1e6 blows up
    table = dta.load_sweeps([out])
    assert table.loc[table["lr"] == 1e6, "train_loss"].item() == pytest.approx(dt.chance_loss(dt.DATASET))


# ---------------------------------------------------------------- config checks


def test_a_margin_as_wide_as_a_grid_step_is_a_config_error(smoke):
    assert dt.config_errors(smoke) == []
    wide = {**smoke["margins"], "DT-3": 0.302}  # the grid's step is log10(2) = 0.301
    errors = dt.config_errors({**smoke, "margins": wide})
    assert len(errors) == 1 and "margins.DT-3" in errors[0] and "grid step" in errors[0]
    with pytest.raises(ConfigError, match="depthwise_transfer.margins.DT-1"):
        load_config(_override(smoke, margins={**smoke["margins"], "DT-1": 0.5}), SCHEMA,
                    lambda c: registry.config_errors(c))
    assert "n_eval" in " ".join(dt.config_errors({**smoke, "n_eval": smoke["n_train"] + 1}))


def _override(cfg: dict, **keys) -> str:
    import tempfile

    f = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
    json.dump({"scale": "smoke", "papers": ["depthwise_transfer"], "depthwise_transfer": keys}, f)
    f.close()
    return f.name


# ---------------------------------------------------------------- claims on synthetic sweeps


def sweeps(cfg: dict, centre, rng: np.random.Generator | None = None, net_sd: float = 0.0,
           row_sd: float = 0.0, curvature: float = 0.3) -> pd.DataFrame:
    """load_sweeps' table with loss(eta0) = 1 + curvature (log10 eta0 - centre(run, seed))^2, plus a
    per-(run, seed) level and per-row noise; `centre(spec, seed)` is where the run's optimum lies."""
    rows = []
    for spec in {s.name: s for runs in dt.experiment_runs(cfg).values() for s in runs}.values():
        for seed in SEEDS:
            level = rng.normal(0, net_sd) if rng is not None else 0.0
            c = centre(spec, seed)
            for lr in cfg["lrs"]:
                noise = rng.normal(0, row_sd) if rng is not None else 0.0
                rows.append({"run": spec.name, "seed": seed, "branch": spec.branch, "depth": spec.depth,
                             "width": spec.width, "lr": float(lr), "diverged": False,
                             "train_loss": 1 + curvature * (math.log10(lr) - c) ** 2 + level + noise})
    return pd.DataFrame(rows)


MID = math.log10(16)  # the middle of the smoke grid 2..128


def _verdicts(cfg: dict, df: pd.DataFrame) -> dict[str, dict]:
    return {r["id"]: r for r in evaluate(list(_claims(cfg).values()), {"sweeps": df}, LEVEL, MIN_SEEDS, cfg)}


def test_transfer_is_replicated_where_the_optimum_stays_and_fails_where_it_moves_a_grid_step(smoke):
    rng = np.random.default_rng(0)
    stays = _verdicts(smoke, sweeps(smoke, lambda s, seed: MID + rng.normal(0, 0.03)))
    assert stays["DT-1"]["verdict"] == stays["DT-3"]["verdict"] == stays["DT-4"]["verdict"] == "replicated"

    step = math.log10(2)  # the deepest network's optimum one grid step lower in every seed
    moved = _verdicts(smoke, sweeps(smoke, lambda s, seed: MID - step * (s.depth == max(smoke["depths"]))
                                    + rng.normal(0, 0.03)))
    assert moved["DT-1"]["verdict"] == "not replicated"
    assert moved["DT-1"]["parts"][1]["mean"] == pytest.approx(-step, abs=0.05)


def test_dt2_can_come_out_either_way(smoke):
    deep = max(smoke["depths"])
    rng = np.random.default_rng(1)

    def moves(branch: str):
        return lambda s, seed: (MID - 0.6 * (s.branch == branch and s.depth == deep)
                                + rng.normal(0, 0.03))

    plain_moves = _verdicts(smoke, sweeps(smoke, moves("one")))
    assert plain_moves["DT-2"]["verdict"] == "replicated" and plain_moves["DT-1"]["verdict"] == "replicated"
    assert plain_moves["DT-5"]["verdict"] == "replicated"
    scaled_moves = _verdicts(smoke, sweeps(smoke, moves("sqrtl")))
    assert scaled_moves["DT-2"]["verdict"] == "not replicated"
    assert scaled_moves["DT-1"]["verdict"] == "not replicated"


def test_an_optimum_at_the_end_of_the_grid_is_not_located(smoke):
    low = math.log10(min(smoke["lrs"])) - 1
    deep = max(smoke["depths"])
    rows = _verdicts(smoke, sweeps(smoke, lambda s, seed: low if s.depth == deep else MID))
    assert rows["DT-1"]["verdict"] == "inconclusive" and "not located" in rows["DT-1"]["note"]
    # plain muP's deep optimum beyond the low end: the end bounds its shift (a smaller one)
    assert "its end used" in rows["DT-5"]["parts"][0]["label"]
    assert rows["DT-5"]["parts"][0]["mean"] == pytest.approx(math.log10(min(smoke["lrs"])) - MID)


def test_dt6_needs_three_depths_and_reads_the_gaps_between_neighbours(smoke):
    assert "3 or more depths" in _verdicts(smoke, sweeps(smoke, lambda s, seed: MID))["DT-6"]["note"]
    cfg = {**smoke, "depths": [2, 4, 8]}
    rng = np.random.default_rng(2)

    def level(s, seed):  # the optimum moves less and less as depth doubles: the curves settle
        return MID + {2: 0.3, 4: 0.1, 8: 0.05}.get(s.depth, 0) + rng.normal(0, 0.01)

    assert _verdicts(cfg, sweeps(cfg, level))["DT-6"]["verdict"] == "replicated"


# ---------------------------------------------------------------- calibration through the real measures


def _rate(cfg: dict, claim_id: str, centre, seed: int) -> float:
    rng = np.random.default_rng(seed)
    claim = _claims(cfg)[claim_id]
    hits = 0
    for _ in range(DRAWS):
        df = sweeps(cfg, lambda s, sd: centre(s, sd, rng), rng, net_sd=0.02, row_sd=0.02)
        hits += evaluate([claim], {"sweeps": df}, LEVEL, MIN_SEEDS, cfg)[0]["verdict"] == "replicated"
    return hits / DRAWS


def test_transfer_claims_are_rarely_replicated_when_the_optimum_moves_by_the_margin(smoke):
    """DT-1/DT-3/DT-4 are equivalence claims: their null is an optimum that moves by its margin."""
    deep, wide = max(smoke["depths"]), max(smoke["width_sweep"]["widths"])
    for claim_id, moved in (("DT-1", lambda s: s.depth == deep and s.width == smoke["base_width"]),
                            ("DT-3", lambda s: s.width == wide), ("DT-4", lambda s: s.width == wide)):
        tol = smoke["margins"][claim_id]
        rate = _rate(smoke, claim_id, lambda s, sd, rng, m=moved, t=tol: MID + t * m(s) + rng.normal(0, 0.05),
                     3)
        assert rate <= BOUND, (claim_id, rate)


def test_dt2_and_dt5_are_rarely_replicated_under_no_effect(smoke):
    """DT-2's null: both parameterizations' optima move alike with depth; DT-5's: no move."""
    deep = max(smoke["depths"])
    for claim_id, centre in (
            ("DT-2", lambda s, sd, rng: MID - 0.3 * (s.depth == deep) + rng.normal(0, 0.1)),
            ("DT-5", lambda s, sd, rng: MID + rng.normal(0, 0.1))):
        rate = _rate(smoke, claim_id, centre, 4)
        assert rate <= BOUND, (claim_id, rate)


def test_the_optimum_figure_draws_when_no_optimum_is_located(smoke, tmp_path):
    """A preflight's two steps leave every best learning rate at an end of the grid (found by the
    preflight run): the figure still draws, and its table says nothing was located."""
    low = math.log10(min(smoke["lrs"])) - 1
    df = sweeps(smoke, lambda s, seed: low)
    specs = dt.experiment_runs(smoke)["optimum_vs_depth"]
    table = dta.figure_optimum_vs_depth(df, specs, tmp_path / "f.png", "preflight")
    assert (tmp_path / "f.png").stat().st_size > 10_000 and not table["located"].any()


# ---------------------------------------------------------------- margins from the pilot (issue 30)


def test_the_margin_rule_reads_the_curvature_of_the_pilot(smoke):
    """loss = 1 + c x^2 around the optimum: a shift of sqrt(0.02 / c) decades costs 2 % of the loss."""
    for c, want in ((0.3, 0.25), (1.2, 0.12), (0.05, 0.63)):
        got = dta.margins_from_curves(_curves(sweeps(smoke, lambda s, seed: MID, curvature=c)), smoke)
        assert {k: v["margin"] for k, v in got.items()} == {"DT-1": want, "DT-3": want, "DT-4": want}
    # each claim reads its own networks: sharpen only the wide networks' curves
    df = sweeps(smoke, lambda s, seed: MID, curvature=0.3)
    wide = df["width"] == max(smoke["width_sweep"]["widths"])
    df.loc[wide, "train_loss"] = 1 + 4 * (df.loc[wide, "train_loss"] - 1)
    got = dta.margins_from_curves(_curves(df), smoke)
    assert got["DT-1"]["margin"] == 0.25 and got["DT-3"]["margin"] == got["DT-4"]["margin"] < 0.25


def _curves(df: pd.DataFrame) -> dict:
    return {run: dta.curves(df, run) for run in df["run"].unique()}


def test_a_curve_with_its_best_rate_at_an_end_of_the_grid_has_no_curvature():
    from replikit.scoring.aggregate import relative_curvature

    assert relative_curvature({1.0: 0.5, 2.0: 0.6, 4.0: 0.7}, minimize=True) is None
    k = relative_curvature({1.0: 0.7, 2.0: 0.5, 4.0: 0.7}, minimize=True)
    assert k == pytest.approx(0.2 / math.log10(2) ** 2 / 0.5)  # curvature 0.2 per step^2 over the minimum 0.5
    assert relative_curvature({1.0: 0.3, 2.0: 0.5, 4.0: 0.3}) == pytest.approx(0.2 / math.log10(2) ** 2 / 0.5)


# ---------------------------------------------------------------- DT-3's and DT-4's falsifier: SP


def test_sp_sweeps_are_named_apart_and_start_from_muPs_weights(smoke):
    sp = dt.sweep("sqrtl", 2, 32, param="sp")
    assert sp.name == "sweep_branch-sqrtl_depth-2_width-32_param-sp" and dt.Sweep.parse(sp.name) == sp
    assert dt.sweep("sqrtl", 2, 32).name == "sweep_branch-sqrtl_depth-2_width-32"  # muP keeps its name
    ws = smoke["width_sweep"]
    assert {(s.branch, s.width) for s in dt.experiment_runs(smoke)["loss_vs_lr_width_sp"]} == {
        (b, w) for b in dt.BRANCHES for w in (min(ws["widths"]), max(ws["widths"]))}
    mup = dt.build(dt.sweep("sqrtl", 2, 32), smoke, 3, (12,), torch.device("cpu"))
    net = dt.build(sp, smoke, 3, (12,), torch.device("cpu"))
    assert all(torch.equal(p, q) for p, q in zip(mup.parameters(), net.parameters(), strict=True))
    assert net.scaling.gamma == 1.0 and mup.scaling.gamma != 1.0


def test_sp_trains_every_weight_at_its_fan_in_times_one_rate_and_mup_at_one_rate(smoke):
    """SP's one rate eta0 / N0 on N(0, 1/fan-in) weights is, on this network's N(0, 1) weights, that
    rate times each weight's fan-in; muP keeps its single rate eta0 * gamma^2."""
    sp = dt.sweep("sqrtl", 2, 32, param="sp")
    net = dt.build(sp, smoke, 0, (12,), torch.device("cpu"))
    groups, lr = dt.sgd_rates(net, sp, 4.0, smoke["base_width"])
    assert lr == 4.0 / smoke["base_width"]
    fans = {name: g["lr"] / lr for (name, _), g in zip(net.named_parameters(), groups, strict=True)}
    assert fans == {"inp": 12, "blocks.0": 32, "blocks.1": 32, "head.weight": 32}
    mup = dt.build(dt.sweep("sqrtl", 2, 32), smoke, 0, (12,), torch.device("cpu"))
    (group,), rate = dt.sgd_rates(mup, dt.sweep("sqrtl", 2, 32), 4.0, smoke["base_width"])
    assert rate == group["lr"] == mup.scaling.lr(4.0)


def test_sp_reads_one_sgd_step_as_the_standard_parameterization_does(smoke):
    """One SGD step of the SP sweep on the N(0, 1) network equals one step of PyTorch-style SP (weights
    N(0, 1/fan-in), no multipliers, one rate) on the same function: the readout, times 1/sqrt(N)."""
    import torch.nn.functional as F

    sp = dt.sweep("one", 1, 16, param="sp")
    net = dt.build(sp, smoke, 0, (12,), torch.device("cpu"))
    x, y = torch.randn(8, 12, generator=torch.Generator().manual_seed(1)), torch.arange(8) % 10
    with torch.no_grad():
        net.head.weight.normal_(generator=torch.Generator().manual_seed(2))
    w_in, w_b, w_out = (p.detach().clone() for p in (net.inp, net.blocks[0], net.head.weight[0]))
    # the standard parameterization of the same function, each weight divided by sqrt(fan-in)
    std = [(w_in / 12 ** 0.5).requires_grad_(), (w_b / 16 ** 0.5).requires_grad_(),
           (w_out / 16 ** 0.5).requires_grad_()]

    def std_forward(x):
        h = x @ std[0].T
        h = h + F.relu(h) @ std[1].T
        return F.relu(h) @ std[2].T

    assert torch.allclose(std_forward(x), net(x, 0), atol=1e-5)
    groups, lr = dt.sgd_rates(net, sp, 2.0, smoke["base_width"])
    opt = torch.optim.SGD(groups, lr=lr)
    F.cross_entropy(net(x, 0), y).backward()
    opt.step()
    std_opt = torch.optim.SGD(std, lr=lr)
    F.cross_entropy(std_forward(x), y).backward()
    std_opt.step()
    assert torch.allclose(std_forward(x), net(x, 0), atol=1e-4)


def test_the_sp_falsifier_reads_not_replicated_when_sps_optimum_moves_and_cannot_discriminate_when_not(smoke):
    step = math.log10(2)
    rng = np.random.default_rng(0)
    widest = max(smoke["width_sweep"]["widths"])

    def centre(s, seed):  # muP's optimum stays; SP's moves one grid step lower at the widest width
        return MID - step * (s.param == "sp" and s.width == widest) + rng.normal(0, 0.03)

    rows = _verdicts(smoke, sweeps(smoke, centre))
    for claim in ("DT-3", "DT-4"):
        assert rows[claim]["verdict"] == "replicated"
        assert rows[claim]["falsifier"]["verdict"] == "not replicated"
        assert rows[claim]["standing"] == "falsifier of our construction"  # SP: not this paper's contrast
    rows = _verdicts(smoke, sweeps(smoke, lambda s, seed: MID + rng.normal(0, 0.03)))
    assert rows["DT-3"]["falsifier"]["verdict"] == "replicated"
    assert rows["DT-3"]["standing"] == "cannot discriminate"
