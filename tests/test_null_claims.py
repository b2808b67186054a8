"""Every claim's real `measure` function, selections included, fed simulated results with no effect.

Each draw builds the results tables of one paper's smoke configuration in which every condition
(run, temperature, gamma0, stage, width, method, depth, d_k ...) has the same distribution: a shared
per-(run, seed) "network" noise plus independent per-row noise, so a value chosen as the best of
several is lucky on both halves of its own seed, as a trained network would be. Metrics a claim
compares with a fixed threshold are centred on that threshold; metrics with a floor rule (exact
match at 0, accuracy below the "learned" bar) lie well above it, so the claim is judged. The claims
job's own path (`evaluate` with the production level and 5 seeds, `combine`, the floor rule) must
then call a claim, and each of its parts on its own, "replicated" at most at the nominal one-sided
level, plus three Monte-Carlo standard errors (`bound(draws)`). Draws are reproducible: the noise
follows the tables' row order, not a set's (string hashes change between processes).

Equivalence claims (CL-2, CL-5: "stays within a tolerance") are replicated by pure noise on purpose;
their null is an effect at the tolerance (test_cl2_null_is_the_tolerance, test_cl5_null_is_the_margin).
test_discrete_nulls feeds the rule itself per-seed statistics with few values and ties.

Sizes: the simulations through `evaluate` run at SIM_DRAWS = 1000 (bound 7.1 %, 2.1 points above the
nominal 5 %), marked `slow`: about 4.5 minutes for the file on one quiet core (at 2,000 draws, 2026-11-25,
they took 525 s of CI's 64 minutes, the largest item after the end-to-end runs; the highest rates they
measured then were 5.5 % and below, under both bounds). Each also runs unmarked at FAST_DRAWS = 200
(bound 9.6 %, about a minute for the file), so the fast suite (`pytest -m "not slow"`) still puts every
paper's claims through a null. The tests of the rule alone (test_discrete_nulls) are cheap and always
run at DRAWS = 2000 (bound 6.5 %).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from replikit.core.config import load_config
from replikit.data.tasks import planning as pl
from replikit.papers import benign_memorization as bm
from replikit.papers import benign_memorization_analysis as bma
from replikit.papers import cold_posterior as cp
from replikit.papers import cold_posterior_analysis as cpa
from replikit.papers import continual_learning as cl
from replikit.papers import continual_learning_analysis as cla
from replikit.papers import induction_heads as ih
from replikit.papers import induction_heads_analysis as iha
from replikit.papers import latent_lookahead as ll
from replikit.papers import latent_lookahead_analysis as lla
from replikit.papers import rank_collapse as rc
from replikit.papers import rank_collapse_analysis as rca
from replikit.papers import shaped_transformer as st
from replikit.papers import shaped_transformer_analysis as sta
from replikit.papers import super_consistency as sc
from replikit.papers import super_consistency_analysis as sca
from replikit.scoring.aggregate import final_rows
from replikit.scoring.claims import Part, evaluate
from replikit.scoring.stats import min_seeds_for
from tests.conftest import ROOT

FAST_DRAWS, SIM_DRAWS, DRAWS = 200, 1000, 2000
LEVEL, MIN_SEEDS = 0.90, 5
NOMINAL = (1 - LEVEL) / 2
SEEDS = range(5)
EQUIVALENCE = {"CL-2", "CL-5", "ST-1", "SC-1"}  # judged at their margins by their own tests
# a fixed bound that the no-effect tables (centred on the inputs' correlation) lie far below: judged at
# the bound by its own test (test_st3_null_is_the_bound)
AT_THEIR_BOUND = {"ST-3"}
# equivalence parts of claims that also have an effect part (judged at their margins by their own tests)
EQUIVALENCE_PARTS = {"SC-3": {"part 2", "part 3"}, "IH-1": {"part 1", "part 2"}}
SIZES = [pytest.param(FAST_DRAWS, id="fast"), pytest.param(SIM_DRAWS, id="full", marks=pytest.mark.slow)]


def bound(draws: int) -> float:
    """The nominal one-sided level plus three Monte-Carlo standard errors at `draws` draws."""
    return NOMINAL + 3 * math.sqrt(NOMINAL * (1 - NOMINAL) / draws)


BOUND = bound(DRAWS)


@pytest.fixture(scope="module")
def smoke() -> dict:
    return load_config(ROOT / "config/smoke.yaml", ROOT / "workflow/schemas/config.schema.yaml")


def _noisy(rng: np.random.Generator, rows: list[dict], centres: dict[str, float],
           sd: float = 0.02) -> pd.DataFrame:
    """`rows` with every metric in `centres` = centre + network noise per (run, seed) + row noise."""
    df = pd.DataFrame(rows)
    net = {key: rng.normal(0, sd) for key in dict.fromkeys(zip(df["run"], df["seed"], strict=True))}
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


def _ll_null(cfg: dict, rng) -> dict:
    """latent_lookahead's `load_results`: every method, task, tau and mask alike. Exact match is 0 at
    epoch 0 (untrained) and at the last epoch lies on the grid of `eval_max` held-out puzzles, far above
    the floor of 0; tau is the resolved number of latent steps, as the run's metrics record it."""
    rows = [{"run": s.name, "seed": seed, "task": s.task, "method": s.method, "tau": s.tau, "mask": s.mask,
             "epoch": epoch, "step": 10 * epoch}
            for s in ll.all_runs(cfg) for seed in SEEDS
            for epoch in (0, cfg["training"][pl.settings_task(s.task)]["epochs"])]
    hist = _noisy(rng, rows, {"exact_match": 0.5, "train_loss": 1.0}, sd=0.05)
    hist["exact_match"] = np.round(hist["exact_match"] * cfg["eval_max"]) / cfg["eval_max"]
    hist.loc[hist["epoch"] == 0, "exact_match"] = 0.0
    examples = pd.DataFrame(columns=["run", "seed", "task", "method", "example", "prompt", "answer",
                                     "prediction", "correct"])
    return {"history": hist, "final": final_rows(hist), "examples": examples}


def _rc_null(cfg: dict, rng) -> dict:
    """rank_collapse's `load_results`: init rows per depth alike in every run, d_k and depth, with the
    log10 gradient norms of W_Q, W_K and W_V sharing the network noise, so their log ratios are centred
    on the claims' threshold 0; training rows per evaluation, every arm far above the "learned" bar."""
    init, train, tc = [], [], cfg["training"]
    evals = sorted({0, *range(tc["eval_every"], tc["steps"] + 1, tc["eval_every"]), tc["steps"]})
    for s in rc.all_runs(cfg):
        base = {"kind": s.kind, "norm": s.norm, "alpha": s.alpha, "architecture": s.label}
        for seed in SEEDS:
            if s.kind == "init":
                init += [{"run": s.name, "seed": seed, **base, "d_k": s.d_k, "depth": int(d)}
                         for d in cfg["init"]["depths"]]
            else:
                train += [{"run": s.name, "seed": seed, **base, "depth": s.depth, "step": step}
                          for step in evals]
    init = _noisy(rng, init, {"similarity": 0.5, "stable_rank": 4.0, "log_q": -2.0, "log_k": -2.0,
                              "log_v": -2.0})
    for w in "qkv":
        init[f"grad_{w}"] = 10 ** init.pop(f"log_{w}")
    train = _noisy(rng, train, {"train_loss": 1.0, "eval_loss": 1.0, "eval_accuracy": 0.95})
    train.loc[train["step"] == 0, "train_loss"] = None
    df = pd.concat([init, train], ignore_index=True)
    df["log_ratio_q"] = np.log10(df["grad_q"] / df["grad_v"])
    df["log_ratio_k"] = np.log10(df["grad_k"] / df["grad_v"])
    return {"rows": df}


def _st_null(cfg: dict, rng, shift: dict[str, float] | None = None) -> dict:
    """shaped_transformer's `load_results`: every sample of the output correlation alike in every run,
    width and ratio (N(0.5, 0.2) around a per-(run, seed) network offset); `shift`: the widest width's
    mean moved by shift["mean"] and its spread widened by shift["spread"] (ST-1's null at its margin)."""
    shift = shift or {"mean": 0.0, "spread": 0.0}
    n, widest = cfg["networks"] * cfg["sequences"], max(cfg["widths"])
    keys = [(s, seed, float(r)) for s in st.all_runs(cfg) for seed in SEEDS for r in cfg["ratios"]]
    z = rng.standard_normal((len(keys), n))
    z = (z - z.mean(1, keepdims=True)) / z.std(1, ddof=1, keepdims=True)  # exact mean 0, sd 1 per group
    offsets = {(s.name, seed): rng.normal(0, 0.01) for s in st.all_runs(cfg) for seed in SEEDS}
    wide = np.array([s.width == widest and s.attention == "shaped" for s, _, _ in keys])[:, None]
    centre = 0.5 + np.array([offsets[(s.name, seed)] for s, seed, _ in keys])[:, None] + wide * shift["mean"]
    values = centre + (0.2 + wide * shift["spread"]) * z
    return {"samples": pd.DataFrame({
        "run": np.repeat([s.name for s, _, _ in keys], n), "seed": np.repeat([k[1] for k in keys], n),
        "attention": np.repeat([s.attention for s, _, _ in keys], n),
        "width": np.repeat([s.width for s, _, _ in keys], n), "ratio": np.repeat([k[2] for k in keys], n),
        "similarity": values.ravel()})}


def _sc_null(cfg: dict, rng, mup_spread: float = 0.0, mup_move: float = 0.0) -> dict:
    """super_consistency's `load_results`: both parameterizations alike at every width (log10 sharpness
    -1 and log10 feature movement -0.2, each plus a per-(run, seed) network offset and row noise);
    `mup_spread`: muP's widths' log10 sharpness spaced evenly over exactly that range at every step after
    0 (SC-1's null at its margin); `mup_move`: muP's widest width's log10 movement shifted by it (SC-3's
    muP part at its margin)."""
    widths = sorted(cfg["widths"])
    steps = list(range(0, cfg["steps"] + 1, cfg["measure_every"]))
    keys = [(p, seed, i, w, t) for p in sc.PARAMS for seed in SEEDS for i, w in enumerate(widths)
            for t in steps]
    net = {(p, seed): rng.normal(0, 0.02, 2) for p in sc.PARAMS for seed in SEEDS}
    base = np.array([net[(p, seed)] for p, seed, _, _, _ in keys])
    noise = rng.normal(0, 0.02, (len(keys), 2))
    mup = np.array([p == "mup" for p, *_ in keys])
    later = np.array([t > 0 for *_, t in keys])
    spaced = np.array([i / (len(widths) - 1) for _, _, i, _, _ in keys])
    widest = np.array([w == widths[-1] for _, _, _, w, _ in keys])
    log_sharp = -1 + base[:, 0] + noise[:, 0] + mup * later * mup_spread * spaced
    log_move = -0.2 + base[:, 1] + noise[:, 1] + mup * widest * mup_move
    return {"points": pd.DataFrame({
        "run": [f"train_param-{p}" for p, *_ in keys], "seed": [k[1] for k in keys],
        "param": [k[0] for k in keys], "width": [k[3] for k in keys], "step": [k[4] for k in keys],
        "sharpness": 10 ** log_sharp, "feature_movement": 10 ** log_move})}


def _ih_null(cfg: dict, rng, exponent: float = 1.0) -> dict:
    """induction_heads' `load_results` (the runs table): emergence times 100 N^exponent times a per-seed
    factor and per-run noise (log-normal, 5 %), so each seed's fitted exponent is `exponent` plus noise;
    the window's top-3 share exactly a random walk's plus noise (the runs table's other columns)."""
    contexts = sorted(cfg["contexts"])
    keys = [(seed, n) for seed in SEEDS for n in contexts]
    net = {seed: rng.normal(0, 0.05) for seed in SEEDS}
    log_t = np.array([math.log(100) + exponent * math.log(n) + net[seed] for seed, n in keys])
    log_t += rng.normal(0, 0.05, len(keys))
    walk = 0.83
    return {"runs": pd.DataFrame({
        "run": "train", "seed": [k[0] for k in keys], "context": [k[1] for k in keys],
        "emergence_step": np.exp(log_t), "censored": False,
        "top_share": walk + rng.normal(0, 0.02, len(keys)) + np.repeat([net[s] / 5 for s in SEEDS],
                                                                         len(contexts)),
        "walk_share": walk, "cap": 10 ** 9})}


# induction_heads is not here: at the smoke scale its one judged claim, IH-1, is not measurable (the
# contexts span less than MIN_SPAN); its nulls are at its margins (test_ih_exponent_nulls_are_the_margins).
PAPERS = {
    "shaped_transformer": (_st_null, lambda cfg: sta.claims(st.experiment_runs(cfg), cfg)),
    "super_consistency": (_sc_null, lambda cfg: sca.claims(sc.experiment_runs(cfg), cfg)),
    "cold_posterior": (_cp_null, lambda cfg: cpa.claims(cp.experiment_runs(cfg), cfg)),
    "continual_learning": (_cl_null, lambda cfg: cla.claims(cl.experiment_runs(cfg), cfg)),
    "benign_memorization": (_bm_null, lambda cfg: bma.claims(bm.experiment_runs(cfg), cfg["augmentation"])),
    "latent_lookahead": (_ll_null, lambda cfg: lla.claims(ll.experiment_runs(cfg), cfg)),
    "rank_collapse": (_rc_null, lambda cfg: rca.claims(rc.experiment_runs(cfg), cfg)),
}


@pytest.mark.parametrize("draws", SIZES)
@pytest.mark.parametrize("statistic", ["mean", "spread"])
@pytest.mark.parametrize("sign", [+1, -1])
def test_st1_null_is_the_margin(smoke, statistic, sign, draws):
    """ST-1 at its boundary: the widest width differs by exactly the margin, above (sign +1) or below
    (-1), in one statistic (the samples standardized, so the spread's shift is exact), the other
    equal; the one-sided part facing that boundary may call it "within the margin" no more often than
    the level. Parts: mean > -m, mean < +m, spread > -m, spread < +m."""
    cfg = smoke["shaped_transformer"]
    shift = {"mean": 0.0, "spread": 0.0, statistic: sign * cfg["margins"][statistic]}
    part = 2 * list(sta.STATISTICS).index(statistic) + (2 if sign > 0 else 1)
    rates = _rates(cfg, lambda c, rng: _st_null(c, rng, shift), _st1_only, draws)
    assert rates["ST-1"][f"part {part}"] <= bound(draws), rates


def _st1_only(cfg: dict) -> list:
    return [x for x in sta.claims(st.experiment_runs(cfg), cfg) if x.id == "ST-1"]


@pytest.mark.parametrize("difference, verdict", [(0.0, "replicated"), (2.0, "not replicated")])
def test_st1_can_pass_and_can_fail(smoke, difference, verdict):
    """ST-1's statistic (the widest minus the smallest width, within seed) can read either way: with the
    widths alike it calls them the same, and with the widest width's mean `difference` margins away it
    calls them different, each in most draws at the smoke scale's sizes (measured: 67 % and 86 % of
    100 draws; a range over the widths, ST-1's old statistic, could not pass at equality)."""
    cfg = smoke["shaped_transformer"]
    shift = {"mean": difference * cfg["margins"]["mean"], "spread": 0.0}
    rates = _rates(cfg, lambda c, rng: _st_null(c, rng, shift), _st1_only, 100)
    assert rates["ST-1"][verdict] > 0.5, rates


@pytest.mark.parametrize("draws", SIZES)
def test_st3_null_is_the_bound(smoke, draws):
    """ST-3 with shaped attention's correlation at the widest width exactly at the collapse bound: its
    one part ("below the bound") may call that "replicated" no more often than the level."""
    cfg = smoke["shaped_transformer"]
    shift = {"mean": sta.collapse_bound(cfg) - 0.5, "spread": 0.0}  # the tables centre on 0.5
    rates = _rates(cfg, lambda c, rng: _st_null(c, rng, shift), _st3_only, draws)
    print("ST-3 at its bound", rates["ST-3"])
    assert rates["ST-3"]["judged"] == 1 and rates["ST-3"]["part 1"] <= bound(draws), rates


def _st3_only(cfg: dict) -> list:
    return [x for x in sta.claims(st.experiment_runs(cfg), cfg) if x.id == "ST-3"]


@pytest.mark.parametrize("above_bound, verdict", [(-0.25, "replicated"), (0.2, "not replicated")])
def test_st3_can_pass_and_can_fail(smoke, above_bound, verdict):
    """ST-3's statistic (shaped attention's mean correlation at the widest width and largest ratio
    against the collapse bound) reads either way: well below the bound (at the inputs' correlation) it
    stays away from collapse, well above it (near 1) it does not, in most draws at the smoke sizes."""
    cfg = smoke["shaped_transformer"]
    shift = {"mean": sta.collapse_bound(cfg) - 0.5 + above_bound, "spread": 0.0}
    rates = _rates(cfg, lambda c, rng: _st_null(c, rng, shift), _st3_only, 100)
    print(f"ST-3 at {above_bound:+g} from its bound", rates["ST-3"])
    assert rates["ST-3"][verdict] > 0.5, rates


@pytest.mark.parametrize("draws", SIZES)
@pytest.mark.parametrize("claim, part, null", [
    ("SC-1", 1, lambda c, rng: _sc_null(c, rng, mup_spread=c["margins"]["sharpness"])),
    ("SC-3", 2, lambda c, rng: _sc_null(c, rng, mup_move=c["margins"]["features"])),
    ("SC-3", 3, lambda c, rng: _sc_null(c, rng, mup_move=-c["margins"]["features"]))])
def test_sc_equivalences_null_is_the_margin(smoke, claim, part, null, draws):
    """SC-1 with muP's widths exactly the margin apart at every step (the noise only widens the range),
    and SC-3's muP movement exactly the margin above (part 2) or below (part 3): each part may call that
    "within the margin" no more often than the level."""
    cfg = smoke["super_consistency"]
    rates = _rates(cfg, null, lambda c: [x for x in sca.claims(sc.experiment_runs(c), c) if x.id == claim],
                   draws)
    assert rates[claim][f"part {part}"] <= bound(draws), rates


@pytest.mark.parametrize("draws", SIZES)
@pytest.mark.parametrize("claim, part, exponent", [("IH-1", 1, 1.5), ("IH-1", 2, 2.5)])
def test_ih_exponent_nulls_are_the_margins(claim, part, exponent, draws):
    """At the default contexts: each of IH-1's equivalence parts with the local exponent exactly at its
    margin (2 -+ 0.5): each part may call that "replicated" no more often than the level."""
    from replikit.plan.bill import load

    cfg = load([])["induction_heads"]
    assert cfg["margins"]["exponent"] == 0.5
    rates = _rates(cfg, lambda c, rng: _ih_null(c, rng, exponent),
                   lambda c: [x for x in iha.claims(ih.experiment_runs(c), c) if x.id == claim], draws)
    assert rates[claim]["judged"] == 1 and rates[claim][f"part {part}"] <= bound(draws), rates


def _judged(row: dict) -> bool:
    """The claim was measured and every part judged on enough seeds (no floor, edge or seed excuse)."""
    needed = max(MIN_SEEDS, min_seeds_for(LEVEL))
    return (row["measurable"] and bool(row["parts"]) and row["n_seeds"] >= needed
            and not any(p["no_evidence"] for p in row["parts"]))


def _rates(cfg: dict, null, claims, draws: int) -> dict[str, dict[str, float]]:
    """Per claim: the fraction of draws with each verdict, `judged` (see _judged), and "part i" for
    each part's own "replicated" (a claim needing all its parts would hide a part's excess)."""
    counts: dict[str, dict[str, int]] = {}
    rng = np.random.default_rng(0)
    for _ in range(draws):
        for row in evaluate(claims(cfg), null(cfg, rng), LEVEL, MIN_SEEDS, cfg, with_falsifiers=False):
            c = counts.setdefault(row["id"], {"replicated": 0, "not replicated": 0, "inconclusive": 0,
                                              "judged": 0})
            c[row["verdict"]] += 1
            c["judged"] += _judged(row)
            for i, part in enumerate(row["parts"], 1):
                c[f"part {i}"] = c.get(f"part {i}", 0) + (part["verdict"] == "replicated")
    return {cid: {v: n / draws for v, n in c.items()} for cid, c in counts.items()}


@pytest.mark.parametrize("draws", SIZES)
@pytest.mark.parametrize("paper", sorted(PAPERS))
def test_no_effect_through_each_claims_real_measure_is_rarely_replicated(smoke, paper, draws):
    null, claims = PAPERS[paper]
    cfg = smoke[paper]
    rates = _rates(cfg, null, claims, draws)
    print(paper, {cid: {k: v for k, v in r.items() if k.startswith(("replicated", "part"))}
                  for cid, r in sorted(rates.items())})
    always = {cid for cid, r in rates.items() if r["judged"] == 1}
    assert always, f"{paper}: no claim is judged in every draw: the null tests nothing ({rates})"
    over = {f"{cid} {what}": rate for cid, r in rates.items() if cid not in EQUIVALENCE | AT_THEIR_BOUND
            for what, rate in r.items() if what.startswith(("replicated", "part")) and rate > bound(draws)
            and what not in EQUIVALENCE_PARTS.get(cid, ())}
    assert not over, f"{paper}: false 'replicated' above {bound(draws):.3f}: {over}"


@pytest.mark.parametrize("paper, claim_ids", [
    ("latent_lookahead", {"LL-1", "LL-2", "LL-3", "LL-4", "LL-5", "LL-6"}),
    ("rank_collapse", {"RC-1", "RC-2", "RC-3", "RC-4", "RC-5"}),
])
def test_the_new_nulls_are_judged_not_excused(smoke, paper, claim_ids):
    """Every LL and RC claim is measurable at smoke scale, and the simulated values lie above their
    floors (exact match 0, the "learned" accuracy bar), so each is judged in every draw."""
    null, claims = PAPERS[paper]
    rates = _rates(smoke[paper], null, claims, 20)
    assert {cid for cid, r in rates.items() if r["judged"] == 1} == claim_ids


def test_the_old_same_seed_selection_would_fail_this_check(smoke):
    """The check has teeth: BM-3's old statistic (best encoder stage of the *same* seed minus the output
    layer) is called replicated far more often than the nominal level under the same null."""
    cfg, rng, hits = smoke["benign_memorization"], np.random.default_rng(1), 0
    for _ in range(FAST_DRAWS):
        lay = _bm_null(cfg, rng)["layers"]
        lay = lay[lay["run"] == lay["run"].iloc[0]]
        acc = lay.pivot(index="seed", columns="stage", values="probe_acc")
        enc = acc[["stage1", "stage2", "stage3", "pooled"]].max(axis=1)
        part = Part("old", {int(s): float(enc[s] - acc.loc[s, "output"]) for s in acc.index}, 0.0)
        hits += part.decide(LEVEL, MIN_SEEDS).verdict == "replicated"
    assert hits / FAST_DRAWS > 3 * bound(FAST_DRAWS)


def _claim(cfg: dict, cid: str):
    return next(c for c in cla.claims(cl.experiment_runs(cfg), cfg) if c.id == cid)


@pytest.mark.parametrize("draws", SIZES)
def test_cl5_null_is_the_margin(smoke, draws):
    """CL-5 (the optimum transfers) is an equivalence claim: its null is an optimum that moves by its
    margin. Curves whose peaks lie exactly cl5_tolerance apart are called "replicated" rarely."""
    cfg = {**smoke["continual_learning"]}
    tol = cfg["cl5_tolerance"]
    gammas = cfg["gamma_sweep"]["gammas"]
    lo_w, hi_w = min(cfg["gamma_sweep"]["widths"]), max(cfg["gamma_sweep"]["widths"])
    peak = float(np.mean(np.log10(gammas)))
    rng, hits = np.random.default_rng(2), 0
    claim = _claim(cfg, "CL-5")
    for _ in range(draws):
        items = _cl_null(cfg, rng)["items"]
        for width, centre in ((lo_w, peak), (hi_w, peak + tol)):
            run = items["run"] == f"seq_stream-{cfg_stream(cfg)}_mode-mup_width-{width}_gamma0-none"
            assert run.any(), f"no rows of the width-{width} gamma0 sweep: its run name changed"
            lg = np.log10(items.loc[run, "gamma0"].astype(float))
            items.loc[run, "AA"] = 0.9 - 0.1 * (lg - centre) ** 2 + rng.normal(0, 0.005, int(run.sum()))
        row = evaluate([claim], {"items": items}, LEVEL, MIN_SEEDS, cfg, with_falsifiers=False)[0]
        hits += row["verdict"] == "replicated"
    assert hits / draws <= bound(draws)


def cfg_stream(cfg: dict) -> str:
    spec = cl.experiment_runs(cfg)["forgetting_vs_gamma"][0]
    return spec.stream


CL2_PARTS = {+1: "CFr(largest N) - CFr(smallest N) <", -1: "CFr(smallest N) - CFr(largest N) <",
             0: "muP minus NTP"}  # the part facing each margin, and the superiority part


def _part(row: dict, label: str) -> dict:
    return next(p for p in row["parts"] if label in p["label"])


@pytest.mark.parametrize("draws", SIZES)
@pytest.mark.parametrize("sign", [+1, -1])
def test_cl2_null_is_the_tolerance(smoke, sign, draws):
    """CL-2 (muP's forgetting stays flat in width) is an equivalence claim in parts 1-2: its null is
    muP's CFr changing by exactly +-cl2_tolerance from the smallest to the largest width (linear in log
    width). The claim, and the equivalence part facing that margin, are called "replicated" rarely."""
    cfg = smoke["continual_learning"]
    tol, mup = cfg["cl2_tolerance"], cl.experiment_runs(cfg)["forgetting_vs_width"][1]
    rng, claim, hits, facing = np.random.default_rng(3), _claim(cfg, "CL-2"), 0, 0
    for _ in range(draws):
        items = _cl_null(cfg, rng)["items"]
        run = items["run"] == mup.name
        assert run.any(), f"no rows of muP's width sweep {mup.name}"
        logw = np.log(items.loc[run, "width"].astype(float))
        items.loc[run, "CFr"] += sign * tol * (logw - logw.min()) / (logw.max() - logw.min())
        row = evaluate([claim], {"items": items}, LEVEL, MIN_SEEDS, cfg, with_falsifiers=False)[0]
        hits += row["verdict"] == "replicated"
        facing += _part(row, CL2_PARTS[sign])["verdict"] == "replicated"
    assert hits / draws <= bound(draws) and facing / draws <= bound(draws), (hits, facing, draws)


@pytest.mark.parametrize("draws", SIZES)
def test_cl2_superiority_part_under_no_effect(smoke, draws):
    """CL-2's part 3 (muP's CFr change with width minus NTP's > 0) is a superiority test: with muP's and
    NTP's forgetting alike at every width it is called "replicated" rarely, on its own."""
    cfg = smoke["continual_learning"]
    rng, claim, hits = np.random.default_rng(4), _claim(cfg, "CL-2"), 0
    for _ in range(draws):
        row = evaluate([claim], _cl_null(cfg, rng), LEVEL, MIN_SEEDS, cfg, with_falsifiers=False)[0]
        part = _part(row, CL2_PARTS[0])
        assert not part["no_evidence"] and part["n_seeds"] == len(SEEDS)
        hits += part["verdict"] == "replicated"
    assert hits / draws <= bound(draws)


def _choice(values: tuple[float, ...], probs: tuple[float, ...]):
    return lambda rng: rng.choice(values, len(SEEDS), p=probs)


DISCRETE_NULLS = {  # per-seed statistic, mean at the threshold 0, and the claimed side
    "grid-step shift -1/0/+1 at 0.1/0.8/0.1": (_choice((-1.0, 0.0, 1.0), (0.1, 0.8, 0.1)), "above"),
    "ties at the threshold, half the seeds": (_choice((-1.0, 0.0, 1.0), (0.25, 0.5, 0.25)), "above"),
    "lopsided, rare large on the claimed side": (_choice((1.0, -0.25), (0.2, 0.8)), "above"),
    "two points, +-1": (_choice((1.0, -1.0), (0.5, 0.5)), "below"),
    "lopsided ties: 0 at 0.6, +1 at 0.1, -1/3 at 0.3": (_choice((0.0, 1.0, -1 / 3), (0.6, 0.1, 0.3)),
                                                        "below"),
}


def _decide_rate(draw, direction: str, threshold: float, step: float, draws: int, seed: int = 5) -> float:
    """How often `Part.decide` says "replicated" for per-seed values threshold + step * draw(rng)."""
    rng, hits = np.random.default_rng(seed), 0
    for _ in range(draws):
        values = threshold + step * draw(rng)
        part = Part("null", {s: float(v) for s, v in zip(SEEDS, values, strict=True)}, threshold, direction)
        hits += part.decide(LEVEL, MIN_SEEDS).verdict == "replicated"
    return hits / draws


@pytest.mark.parametrize("threshold, step", [(0.0, 1.0), (0.2, 0.1)])
@pytest.mark.parametrize("case", sorted(DISCRETE_NULLS))
def test_discrete_nulls(case, threshold, step):
    """Per-seed statistics with few values, many exact ties or a lopsided distribution, mean at the
    threshold, are rarely "replicated"; also on a threshold and grid step that are not binary
    fractions (0.2 + 0.1 - 0.2 != 0.1), so a value and its mirror differ by rounding."""
    draw, direction = DISCRETE_NULLS[case]
    assert _decide_rate(draw, direction, threshold, step, DRAWS) <= BOUND


@pytest.mark.xfail(strict=True, reason="the rule assumes a null symmetric about the threshold (the "
                   "sign-flip test's exchangeability): with the mean at the threshold but most seeds on "
                   "the claimed side (-0.25 at 0.8, +1 at 0.2, claimed 'below'), 5 of 5 seeds agree "
                   "0.8^5 = 33 % of the time and the rule says 'replicated' that often")
def test_lopsided_null_on_the_short_tail_side():
    """The mirror of the lopsided case above: the same distribution, the claim on its frequent side."""
    assert _decide_rate(_choice((1.0, -0.25), (0.2, 0.8)), "below", 0.0, 1.0, DRAWS) <= BOUND
