"""Every claim's real `measure` function, selections included, fed simulated results with no effect.

Each draw builds the results tables of one paper's smoke configuration in which every condition
(run, temperature, gamma0, stage, width ...) has the same distribution: a shared per-(run, seed)
"network" noise plus independent per-row noise, so a value chosen as the best of several is lucky
on both halves of its own seed, as a trained network would be. Metrics a claim compares with a fixed
threshold are centred on that threshold. The claims job's own path (`evaluate` with the production
level and 5 seeds, `combine`, the floor rule) must then call a claim "replicated" at most at the
nominal one-sided level, plus three Monte-Carlo standard errors.

Equivalence claims (CL-2, CL-5: "stays within a tolerance") are replicated by pure noise on purpose;
their null is an effect at the tolerance, simulated in test_cl5_null_is_the_margin.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from replikit.aggregate import final_rows
from replikit.claims import evaluate
from replikit.config import load_config
from replikit.papers import benign_memorization as bm
from replikit.papers import benign_memorization_analysis as bma
from replikit.papers import cold_posterior as cp
from replikit.papers import cold_posterior_analysis as cpa
from replikit.papers import continual_learning as cl
from replikit.papers import continual_learning_analysis as cla
from tests.conftest import ROOT

DRAWS = 200
LEVEL, MIN_SEEDS = 0.90, 5
NOMINAL = (1 - LEVEL) / 2
BOUND = NOMINAL + 3 * math.sqrt(NOMINAL * (1 - NOMINAL) / DRAWS)
SEEDS = range(5)
EQUIVALENCE = {"CL-2", "CL-5"}


@pytest.fixture(scope="module")
def smoke() -> dict:
    return load_config(ROOT / "config/smoke.yaml", ROOT / "workflow/schemas/config.schema.yaml")


def _noisy(rng: np.random.Generator, rows: list[dict], centres: dict[str, float],
           sd: float = 0.02) -> pd.DataFrame:
    """`rows` with every metric in `centres` = centre + network noise per (run, seed) + row noise."""
    df = pd.DataFrame(rows)
    net = {key: rng.normal(0, sd) for key in set(zip(df["run"], df["seed"], strict=True))}
    shared = np.array([net[k] for k in zip(df["run"], df["seed"], strict=True)])
    for col, centre in centres.items():
        df[col] = centre + shared + rng.normal(0, sd, len(df))
    return df


def _cp_null(cfg: dict, rng) -> dict:
    rows = [{"run": s.name, "seed": seed, "T": t} for s in cp.all_runs(cfg) for seed in SEEDS
            for t in [0.0, *cfg["temperatures"]]]
    df = _noisy(rng, rows, {"val_nll": 1.0})
    df["heldout_nll"] = df["val_nll"] + rng.normal(0, 0.02, len(df))  # the chain's noise on both halves
    df["heldout_accuracy"] = 0.5 - (df["heldout_nll"] - 1.0)
    return {"results": df}


def _cl_null(cfg: dict, rng) -> dict:
    rows = []
    for spec in cl.all_runs(cfg):
        for seed in SEEDS:
            for it in spec.items(cl.run_config(cfg, spec.name)):
                rows.append({"run": spec.name, "seed": seed, "mode": it.mode, "width": it.width,
                             "gamma0": it.gamma0, "regime": spec.regime,
                             "permuted_fraction": spec.permuted_fraction})
    df = _noisy(rng, rows, {"AA": 0.8, "CF": 0.2, "CFr": 0.2, "LA": 0.9})
    df["error"] = 1 - df["AA"]
    return {"items": df}


def _bm_null(cfg: dict, rng) -> dict:
    runs = {s.name for specs in bm.experiment_runs(cfg).values() for s in specs}
    hist = _noisy(rng, [{"run": r, "seed": s, "epoch": e} for r in runs for s in SEEDS for e in (0, 10)],
                  {"probe_acc": 0.5, "train_acc_clean": bma.MEMORIZED, "train_acc_views": bma.MEMORIZED})
    stages = ["stage1", "stage2", "stage3", "pooled", "projector", "output"]
    layers = _noisy(rng, [{"run": r, "seed": s, "stage": st, "depth": i} for r in runs for s in SEEDS
                          for i, st in enumerate(stages)], {"probe_acc": 0.5, "random_label_knn": 0.5})
    return {"history": hist, "final": final_rows(hist), "layers": layers}


PAPERS = {
    "cold_posterior": (_cp_null, lambda cfg: cpa.claims(cp.experiment_runs(cfg), cfg)),
    "continual_learning": (_cl_null, lambda cfg: cla.claims(cl.experiment_runs(cfg), cfg)),
    "benign_memorization": (_bm_null, lambda cfg: bma.claims(bm.experiment_runs(cfg), cfg["augmentation"])),
}


def _rates(cfg: dict, null, claims, draws: int = DRAWS) -> dict[str, dict[str, float]]:
    counts: dict[str, dict[str, int]] = {}
    rng = np.random.default_rng(0)
    for _ in range(draws):
        for row in evaluate(claims(cfg), null(cfg, rng), LEVEL, MIN_SEEDS, cfg):
            c = counts.setdefault(row["id"], {"replicated": 0, "not replicated": 0, "inconclusive": 0})
            c[row["verdict"]] += 1
    return {cid: {v: n / draws for v, n in c.items()} for cid, c in counts.items()}


@pytest.mark.parametrize("paper", sorted(PAPERS))
def test_no_effect_through_each_claims_real_measure_is_rarely_replicated(smoke, paper):
    null, claims = PAPERS[paper]
    cfg = smoke[paper]
    rates = _rates(cfg, null, claims)
    over = {cid: r["replicated"] for cid, r in rates.items()
            if cid not in EQUIVALENCE and r["replicated"] > BOUND}
    assert not over, f"{paper}: false 'replicated' above {BOUND:.3f}: {over}"


def test_the_old_same_seed_selection_would_fail_this_check(smoke):
    """The check has teeth: BM-3's old statistic (best encoder stage of the *same* seed minus the output
    layer) is called replicated far more often than the nominal level under the same null."""
    cfg, rng, hits = smoke["benign_memorization"], np.random.default_rng(1), 0
    from replikit.claims import Part

    for _ in range(DRAWS):
        lay = _bm_null(cfg, rng)["layers"]
        lay = lay[lay["run"] == lay["run"].iloc[0]]
        acc = lay.pivot(index="seed", columns="stage", values="probe_acc")
        enc = acc[["stage1", "stage2", "stage3", "pooled"]].max(axis=1)
        part = Part("old", {int(s): float(enc[s] - acc.loc[s, "output"]) for s in acc.index}, 0.0)
        hits += part.decide(LEVEL, MIN_SEEDS).verdict == "replicated"
    assert hits / DRAWS > 3 * BOUND


def test_cl5_null_is_the_margin(smoke):
    """CL-5 (the optimum transfers) is an equivalence claim: its null is an optimum that moves by its
    margin. Curves whose peaks lie exactly cl5_tolerance apart are called "replicated" rarely."""
    cfg = {**smoke["continual_learning"]}
    tol = cfg["cl5_tolerance"]
    gammas = cfg["gamma_sweep"]["gammas"]
    lo_w, hi_w = min(cfg["gamma_sweep"]["widths"]), max(cfg["gamma_sweep"]["widths"])
    peak = float(np.mean(np.log10(gammas)))
    rng, hits = np.random.default_rng(2), 0
    claim = next(c for c in cla.claims(cl.experiment_runs(cfg), cfg) if c.id == "CL-5")
    for _ in range(DRAWS):
        items = _cl_null(cfg, rng)["items"]
        for width, centre in ((lo_w, peak), (hi_w, peak + tol)):
            run = items["run"] == f"seq_stream-{cfg_stream(cfg)}_mode-mup_width-{width}_gamma0-none"
            lg = np.log10(items.loc[run, "gamma0"].astype(float))
            items.loc[run, "AA"] = 0.9 - 0.1 * (lg - centre) ** 2 + rng.normal(0, 0.005, int(run.sum()))
        row = evaluate([claim], {"items": items}, LEVEL, MIN_SEEDS, cfg)[0]
        hits += row["verdict"] == "replicated"
    assert hits / DRAWS <= BOUND


def cfg_stream(cfg: dict) -> str:
    spec = cl.experiment_runs(cfg)["forgetting_vs_gamma"][0]
    return spec.stream
