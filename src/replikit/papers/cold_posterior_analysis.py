"""Aggregation, figures and claims for the cold-posterior replication (CPE-1..CPE-9)."""

from __future__ import annotations

import math
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from replikit.papers import cold_posterior as cp
from replikit.papers.cold_posterior import RunSpec
from replikit.papers.interface import Figure, Paper
from replikit.reporting import plotting
from replikit.reporting.plotting import SEED_CI, sns
from replikit.scoring.aggregate import cross_fit_choice, run_rows
from replikit.scoring.aggregate import seed_diff as diff
from replikit.scoring.claims import Claim, Falsifier, Part, Source, cross_fitted
from replikit.scoring.fidelity import Departure

NOCI = "Noci et al., NeurIPS 2021 (arXiv 2106.06596)"
BACHMANN = "Bachmann et al., ICML 2022 (arXiv 2205.13900)"
WENZEL = "Wenzel et al., ICML 2020 (arXiv 2002.02405), Fig. 1 and committed logs"
QUAL = "qualitative; exact value not verified offline"
METRICS = ("accuracy", "nll", "brier", "ece")
NOCI_ABSTRACT = "Noci et al., NeurIPS 2021 (arXiv 2106.06596), abstract"
BACHMANN_ABSTRACT = "Bachmann et al., ICML 2022 (arXiv 2205.13900), abstract"
CPE_DEFINED = Source(
    quote='The "cold posterior effect" (CPE) in Bayesian deep learning describes the uncomforting '
    "observation that the predictive performance of Bayesian neural networks can be significantly "
    "improved if the Bayes posterior is artificially sharpened using a temperature parameter T<1.",
    where=NOCI_ABSTRACT,
    background="the sentence defines the effect the paper studies (first reported by Wenzel et al., 2020); "
    "it is not a finding of this paper",
)
AUGMENTATION_DRIVES = Source(
    quote="While data augmentation has been empirically recognized as one of the main drivers of this "
    "effect, a theoretical account of its role, on the other hand, is largely missing.",
    where=BACHMANN_ABSTRACT,
    background="the sentence reports what earlier work recognized empirically; it is not a finding of "
    "this paper",
)
CURATION = Source(
    quote="1. The dataset curation hypothesis of Aitchison (2020): we show empirically that the CPE does "
    "not arise "
    "in a real curated data set but can be produced in a controlled experiment with varying curation "
    "strength.",
    where=NOCI_ABSTRACT,
)
NOT_NECESSARY = Source(
    quote="2. The data augmentation hypothesis of Izmailov et al. (2021) and Fortuin et al. (2021): we show "
    "empirically that data augmentation is sufficient but not necessary for the CPE to be present.",
    where=NOCI_ABSTRACT,
)
PRIOR = Source(
    quote="3. The bad prior hypothesis of Wenzel et al. (2020): we use a simple experiment evaluating the "
    "relative importance of the prior and the likelihood, strongly linking the CPE to the prior.",
    where=NOCI_ABSTRACT,
)
SAMPLE_SIZE = Source(
    quote="The temperature mimics the role of the effective sample size, reflecting the gain in information "
    "provided by the augmentations.",
    where=BACHMANN_ABSTRACT,
)
INVARIANCE = Source(
    quote="By relying on the framework of group convolutions, we experiment with models of varying inherent "
    "degree of invariance, confirming its hypothesized relationship with the optimal temperature.",
    where=BACHMANN_ABSTRACT,
)


def load_results(paths: list[str | Path]) -> pd.DataFrame:
    """One row per (run, seed, temperature) with the ensemble and last-sample metrics."""
    df = run_rows(paths, lambda m: [{"T": float(t), **r["metrics"]} for t, r in m["temperatures"].items()])
    if df.empty:
        raise ValueError("no cold-posterior results to aggregate")
    return df


def select(df: pd.DataFrame, spec: RunSpec, sampled: bool = True) -> pd.DataFrame:
    """Rows of one condition; `sampled` drops the T = 0 (SGD) baseline."""
    mine = df["run"] == spec.name
    if not mine.any():
        raise KeyError(spec.name)
    return df[mine & (df["T"] > 0)] if sampled else df[mine]


def selected_t(df: pd.DataFrame, spec: RunSpec) -> dict[int, float]:
    """Per seed: the sampled T with the lowest NLL on the validation half of its own held-out images
    (the figures' and CPE-5's optimal T; CPE sizes use `chosen_t`)."""
    sel = select(df, spec)
    idx = sel.groupby("seed")["val_nll"].idxmin()
    return {int(s): float(sel.loc[i, "T"]) for s, i in idx.items()}


def chosen_t(df: pd.DataFrame, spec: RunSpec, cold_only: bool = False) -> dict[int, float]:
    """Per seed: the sampled T (`cold_only`: T < 1) with the lowest validation-half NLL averaged over
    the *other* seeds (a single seed: its own validation half). A T chosen on the same seed's
    images, even on another half of them, shares that chain's own noise and makes the CPE size >= 0
    on average under no effect (aggregate.cross_fit_choice)."""
    sel = select(df, spec)
    if cold_only:
        sel = sel[sel["T"] < 1]
        if sel.empty:
            raise KeyError(f"{spec.name}: no T < 1")
    val: dict[int, dict[float, float]] = {}
    for seed, t, nll in zip(sel["seed"].tolist(), sel["T"].tolist(), sel["val_nll"].tolist(), strict=True):
        val.setdefault(int(seed), {})[float(t)] = float(nll)
    # One seed has no other seeds to choose on: its own validation half (figures only; with one seed no
    # claim can reach a verdict).
    return cross_fit_choice(val, best=min) or {s: min(v, key=v.get) for s, v in val.items()}


def heldout_at(df: pd.DataFrame, spec: RunSpec, ts: dict[int, float], column: str = "heldout_nll"
               ) -> dict[int, float]:
    """Per seed: `column` on the held-out half at that seed's temperature `ts[seed]`."""
    sel = select(df, spec)
    keys = zip(sel["seed"].tolist(), sel["T"].tolist(), strict=True)
    at = dict(zip(keys, sel[column].tolist(), strict=True))
    if len(at) != len(sel):
        raise ValueError(f"{spec.name}: more than one row for a (seed, T)")
    return {s: float(at[(s, t)]) for s, t in ts.items()}


def cpe(df: pd.DataFrame, spec: RunSpec) -> dict[int, float]:
    """Size of the CPE per seed: held-out-half NLL at T = 1 minus at the T chosen on the validation
    half of the other seeds (`chosen_t`). Under no effect it is centred at or below 0."""
    ts = chosen_t(df, spec)
    return diff(heldout_at(df, spec, {s: 1.0 for s in ts}), heldout_at(df, spec, ts))


def optimal_t(df: pd.DataFrame, spec: RunSpec) -> dict[int, float]:
    """log10 of the temperature selected on the validation half, per seed."""
    return {s: math.log10(t) for s, t in selected_t(df, spec).items()}


def _cpe_table(df: pd.DataFrame, specs: list[RunSpec], key) -> pd.DataFrame:
    rows = [{"run": s.name, "x": key(s), "seed": seed, "cpe": v}
            for s in specs for seed, v in cpe(df, s).items()]
    return pd.DataFrame(rows)


def _log_t_axis(ax) -> None:
    ax.set_xscale("log")
    ax.set_xlabel("temperature T")


# ---------------------------------------------------------------- figures


def figure_temperature_sweep(df: pd.DataFrame, specs: list[RunSpec], out: Path, scale: str,
                             subset: bool) -> pd.DataFrame:
    names = {s.name: ("no augmentation" if s.augmentation == "none" else f"{s.augmentation} aug")
             for s in specs}
    d = df[df["run"].isin(names)].assign(condition=lambda x: x["run"].map(names))
    fig, axes = plotting.new_figure(2)
    # one colour per condition for the chains and their SGD baseline alike (seaborn's own hue order
    # is the order in which runs appear, which the config does not fix)
    by_meaning = sorted(specs, key=lambda s: (s.augmentation != "none", s.augmentation))
    palette = plotting.colour_map(names[s.name] for s in by_meaning)
    for ax, metric in zip(axes[0], ("accuracy", "nll"), strict=True):
        sns.lineplot(d[d["T"] > 0], x="T", y=metric, hue="condition", hue_order=list(palette),
                     palette=palette, marker="o", errorbar=SEED_CI, ax=ax)
        for cond, sgd in d[d["T"] == 0].groupby("condition")[f"last_{metric}"].mean().items():
            ax.axhline(sgd, ls="--", c=palette[cond], label=f"SGD (MAP), {cond}")
        _log_t_axis(ax)
        ax.set(ylabel=f"test {metric} (posterior ensemble)")
        ax.legend(fontsize=7)
    plotting.save(fig, out, "Cold posterior: temperature sweep with and without augmentation", scale, subset)
    return d


def figure_curation(df: pd.DataFrame, specs: list[RunSpec], out: Path, scale: str,
                    subset: bool) -> pd.DataFrame:
    names = {s.name: s.curation for s in specs}
    d = df[df["run"].isin(names) & (df["T"] > 0)].assign(annotators=lambda x: x["run"].map(names))
    fig, axes = plotting.new_figure(2)
    sns.lineplot(d, x="T", y="nll", hue="annotators", marker="o", errorbar=SEED_CI, ax=axes[0, 0],
                 **plotting.hue_args(d["annotators"], ordered=True))
    _log_t_axis(axes[0, 0])
    axes[0, 0].set(ylabel="test NLL", title="NLL against T")
    table = _cpe_table(df, specs, lambda s: s.curation)
    sns.pointplot(table, x="x", y="cpe", errorbar=SEED_CI, ax=axes[0, 1])
    axes[0, 1].axhline(0, c="grey", lw=0.8)
    axes[0, 1].set(xlabel="curation strength (annotators who must agree)", ylabel="CPE: NLL(T=1) - best NLL",
                   title="size of the cold posterior effect")
    plotting.save(fig, out, "Cold posterior: synthetic curation (no augmentation)", scale, subset)
    return table


TEMPERING = ("temper posterior", "temper likelihood", "temper prior")  # the prior figure's arms, in order


def figure_prior(df: pd.DataFrame, specs: list[RunSpec], out: Path, scale: str, subset: bool) -> pd.DataFrame:
    augs = list(dict.fromkeys(s.augmentation for s in specs if s.temper != "posterior"))
    main_aug = next((a for a in augs if a != "none"), "none")  # the claims'; "none": CPE-7's falsifier
    scales = sorted({s for s in specs if s.temper == "posterior" and s.augmentation == main_aug},
                    key=lambda s: s.prior)
    fig, axes = plotting.new_figure(1 + len(augs))
    # one colour and line style per tempering, bound by its meaning: the left panel tempers the whole
    # posterior, as the right panel's "temper posterior"
    colours = plotting.colour_map(TEMPERING)
    table = _cpe_table(df, scales, lambda s: s.prior)
    sns.pointplot(table, x="x", y="cpe", errorbar=SEED_CI, ax=axes[0, 0], color=colours["temper posterior"],
                  label="temper posterior")
    axes[0, 0].axhline(0, c="grey", lw=0.8)
    axes[0, 0].set(xlabel="prior std (Gaussian on all weights)", ylabel="CPE: NLL(T=1) - best NLL",
                   title="CPE against the prior scale")
    panels = [table.assign(panel="cpe_vs_prior_scale")]
    for ax, aug in zip(axes[0, 1:], [main_aug, *(a for a in augs if a != main_aug)], strict=True):
        ours = [s for s in specs if s.augmentation == aug]
        main = [s for s in ours if s.temper != "posterior"]
        ref = [s for s in ours if s.temper == "posterior" and main and s.prior == main[0].prior]
        names = {s.name: f"temper {s.temper}" for s in ref + main}
        d = df[df["run"].isin(names) & (df["T"] > 0)].assign(tempering=lambda x, n=names: x["run"].map(n))
        drawn = [t for t in TEMPERING if t in set(d["tempering"])]
        sns.lineplot(d, x="T", y="nll", hue="tempering", style="tempering", errorbar=SEED_CI, ax=ax,
                     hue_order=drawn, palette=colours, **plotting.style_args(TEMPERING), markersize=6)
        _log_t_axis(ax)
        role = "CPE-7" if aug == main_aug else "CPE-7's falsifier"
        ax.set(ylabel="test NLL", title=f"what T tempers: augmentation {aug} ({role})")
        panels.append(d.assign(panel=f"tempering_{aug}"))
    plotting.save(fig, out, "Cold posterior: the role of the prior", scale, subset)
    return pd.concat(panels, ignore_index=True)


def figure_invariance(df: pd.DataFrame, specs: list[RunSpec], out: Path, scale: str,
                      subset: bool) -> pd.DataFrame:
    model_label = {"inv": "invariant (D4)", "plain": "plain CNN"}
    rows = [{"run": s.name, "model": model_label[s.model], "K": s.n_augs,
             "seed": seed, "log10_T_opt": v} for s in specs for seed, v in optimal_t(df, s).items()]
    table = pd.DataFrame(rows)
    colours = plotting.hue_colours([model_label[m] for m in ("plain", "inv")])  # one colour per model
    fig, axes = plotting.new_figure(2, height=4.3)  # room for the left legend below its panel
    ax = axes[0, 0]
    sns.lineplot(table, x="K", y="log10_T_opt", hue="model", marker="o", errorbar=SEED_CI, ax=ax,
                 hue_order=list(colours), palette=colours)
    ks = np.array(sorted(table["K"].unique()), dtype=float)
    ax.plot(ks, -np.log10(ks), ls="--", c="grey", label="1/K")
    grid = np.log10(sorted(t for t in df["T"].unique() if t > 0))
    if len(table) and len(grid):
        ends = np.isclose(table["log10_T_opt"], grid[0]) | np.isclose(table["log10_T_opt"], grid[-1])
        plotting.mark_grid_ends(ax, table["K"], table["log10_T_opt"], ends)
    ax.set_xscale("log", base=2)
    ax.set(xlabel="fixed augmentations per image K (D4 views)", ylabel="log10 NLL-optimal T",
           title="optimal temperature")
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncols=2)  # inside, it covers bands
    # right: the model is the colour (as on the left), K the line style
    names = {s.name: (model_label[s.model], f"K={s.n_augs}") for s in specs}
    d = df[df["run"].isin(names) & (df["T"] > 0)].assign(
        model=lambda x: x["run"].map(lambda r: names[r][0]), K=lambda x: x["run"].map(lambda r: names[r][1]))
    # K by line style and marker both (solid dots, dashed squares ...), so that the keys differ at a glance
    sns.lineplot(d, x="T", y="nll", hue="model", style="K", errorbar=None, ax=axes[0, 1],
                 hue_order=list(colours), palette=colours, markersize=6,
                 **plotting.style_args(sorted(d["K"].unique(), key=lambda k: int(k[2:]))))
    _log_t_axis(axes[0, 1])
    axes[0, 1].set(ylabel="test NLL (seed mean)", title="NLL against T")
    axes[0, 1].legend(fontsize=6, handlelength=3.5, loc="lower right")
    plotting.save(fig, out, "Cold posterior: invariance and K augmentations (Bachmann et al.)", scale, subset)
    return table


# ---------------------------------------------------------------- claims


def _tempering_runs(*modes: str):
    """`not_measurable` for claims that need runs tempering only the given parts of the posterior."""
    def reason(cfg: dict) -> str:
        absent = [m for m in modes if m not in cfg["prior"]["tempering"]]
        return f"no run tempers the {' or the '.join(absent)} only (cold_posterior.prior.tempering)" \
            if absent else ""
    return reason


NO_INVARIANT = "no D4-invariant model is trained (cold_posterior.invariance.models)"


# What CPE-2's and CPE-5's falsifiers read at the CPU scales, as measured
INVARIANT_SAME = ("; as measured at the smoke and default scales, the invariant model's chain is the same "
                  "with and without the views, so every seed gives exactly 0: this falsifier carries no "
                  "evidence there, and cannot show that the row could fail")


HELDOUT = "held-out half"
CPE_SIZE = ("per-seed CPE size: held-out-half NLL at T=1 minus at the T with the lowest validation-half "
            "NLL averaged over the other seeds (so the choice is independent of this seed's noise)")
CPE2_INVARIANT_SETTING = (
    "D4-invariant model, K D4 views vs the image alone, instead of the plain model with "
    "crop-flip vs none")
CPE2_INVARIANT_WHY = (
    "Bachmann et al.: augmentation sharpens the posterior by the information its views add, "
    "and views of a group the model is already invariant to add none, so the CPE should not "
    "grow with them" + INVARIANT_SAME)
CPE4_READING = ("tempering the prior alone, and asking whether that alone gives a cold-temperature "
                "gain, is our operationalization: the abstract says only that an experiment on the relative "
                "importance of the prior and the likelihood links the CPE to the prior")
CPE5_WHY = ("Bachmann et al.: T mimics the effective sample size gained from the views, and D4 views "
            "give a D4-invariant model no information, so its optimal T should not fall with K "
            "(their contrast of models of varying invariance)" + INVARIANT_SAME)
CPE6_WHY = ("Noci et al. produce the CPE without augmentation by raising the curation strength in a "
            "controlled experiment (Aitchison's curation hypothesis), so at the weakest, a single "
            "annotator's uncurated labels, it should be absent")
CPE7_WHY = ("Noci et al. find that the CPE does not arise in a real curated data set (CIFAR-10) "
            "without augmentation (CPE-1's falsifier reads the same sweep), so neither tempering "
            "should give a cold gain there, and their difference should vanish")
CPE9_READING = (
    "the direction: the abstract confirms 'its hypothesized relationship with the optimal "
    "temperature' without stating it; a more invariant model needing less tempering is our reading")


def _aug_run(cfg: dict) -> RunSpec:
    """The plain model's run with the configured augmentation and prior scale."""
    return RunSpec("plain", cfg["augmentation"], None, float(cfg["prior_scale"]))


def _no_aug(cfg: dict) -> RunSpec:
    """The plain model's run without augmentation at the configured prior scale."""
    return RunSpec("plain", "none", None, float(cfg["prior_scale"]))


def _curation_runs(runs: dict[str, list[RunSpec]]) -> list[RunSpec]:
    """The curation runs, weakest curation first."""
    return sorted(runs["curation"], key=lambda s: s.curation)


def _prior_scales(runs: dict[str, list[RunSpec]], cfg: dict) -> list[RunSpec]:
    """The posterior-tempered runs with the configured augmentation, narrowest prior first."""
    main_aug = cfg["augmentation"]
    return sorted({s for s in runs["prior"] if s.temper == "posterior" and s.augmentation == main_aug},
                  key=lambda s: s.prior)


def _tempered(runs: dict[str, list[RunSpec]], aug: str) -> dict[str, RunSpec]:
    """The runs tempering only part of the posterior with augmentation `aug`, by what they temper."""
    return {s.temper: s for s in runs["prior"] if s.temper != "posterior" and s.augmentation == aug}


def _invariant_off(cfg: dict) -> str:
    """`not_measurable` of the falsifiers that read the D4-invariant model."""
    return "" if "inv" in cfg["invariance"]["models"] else NO_INVARIANT


def _untempered_pair_off(tempered_no_aug: dict[str, RunSpec], cfg: dict) -> str:
    """`not_measurable` of CPE-7's falsifier: un-augmented runs tempering the prior and the
    likelihood only."""
    return "" if {"prior", "likelihood"} <= set(tempered_no_aug) else (
        "no run tempers the prior or the likelihood only without augmentation "
        "(cold_posterior.prior.tempering, or cold_posterior.augmentation is none)")


def _tempering(tempered: dict[str, RunSpec], mode: str) -> RunSpec:
    """The run of `tempered` that tempers the `mode` only."""
    if mode not in tempered:
        raise KeyError(f"a run tempering the {mode} only (cold_posterior.prior.tempering)")
    return tempered[mode]


def _cold_gain(df: pd.DataFrame, spec: RunSpec, column: str, sign: float) -> dict[int, float]:
    """Per seed: sign * (column at the chosen cold T minus at T = 1), on the held-out half."""
    ts = chosen_t(df, spec, cold_only=True)
    return {s: sign * v for s, v in diff(heldout_at(df, spec, ts, column),
                                            heldout_at(df, spec, {s: 1.0 for s in ts}, column)).items()}


def _gain(r: dict, spec: RunSpec, paper: bool = True) -> list[Part]:
    """CPE-1's parts for condition `spec`; `paper`: with the paper's numbers (its own setting)."""
    df = r["results"]
    return [cross_fitted(Part(f"{spec.augmentation}: {HELDOUT} NLL at T=1 minus at the T<1 chosen "
                              "on the other seeds' validation halves",
                              _cold_gain(df, spec, "heldout_nll", -1.0), 0.0,
                              paper_value=0.36 - 0.22 if paper else None)),
            cross_fitted(Part(f"{spec.augmentation}: {HELDOUT} accuracy at that T minus at T=1",
                              _cold_gain(df, spec, "heldout_accuracy", 1.0), 0.0,
                              paper_value=0.93 - 0.882 if paper else None))]


def _aug_gap(r: dict, augmented: RunSpec, plain: RunSpec, label: str) -> list[Part]:
    """CPE size with augmentation (`augmented`) minus without (`plain`), per seed."""
    df = r["results"]
    return [cross_fitted(Part(label, diff(cpe(df, augmented), cpe(df, plain)), 0.0))]


def _invariant_k(inv: list[RunSpec], k: int) -> RunSpec:
    """The D4-invariant model's run with K fixed D4 views (K = 1: the image alone, no augmentation)."""
    runs_k = {s.n_augs: s for s in inv if s.model == "inv"}
    if k not in runs_k:
        raise KeyError(f"invariant-model invariance run at K={k}")
    return runs_k[k]


def _cpe2_invariant(r: dict, inv: list[RunSpec]) -> list[Part]:
    """CPE-2's falsifier: the D4-invariant model's CPE with the most D4 views minus with the fewest."""
    lo, hi = min(s.n_augs for s in inv), max(s.n_augs for s in inv)
    label = f"D4-invariant model: CPE with K={hi} D4 views minus with K={lo}"
    return _aug_gap(r, _invariant_k(inv, hi), _invariant_k(inv, lo), label)


def _cpe3(r: dict, cur: list[RunSpec]) -> list[Part]:
    """CPE-3's part: the CPE at the strongest curation minus at the weakest."""
    lo, hi = cur[0], cur[-1]
    return [cross_fitted(Part(f"CPE with {hi.curation} annotators minus with {lo.curation}",
                              diff(cpe(r["results"], hi), cpe(r["results"], lo)), 0.0))]


def _tempered_label(mode: str) -> str:
    """The label of CPE-4's part when T tempers only `mode`."""
    return (f"{mode}-only tempering: {HELDOUT} NLL at T=1 minus at the T<1 chosen on the other seeds' "
            "validation halves")


def _tempered_gain(r: dict, tempered: dict[str, RunSpec], mode: str) -> list[Part]:
    """CPE-4's part when T tempers only `mode` (the prior, or the likelihood for its falsifier)."""
    gains = _cold_gain(r["results"], _tempering(tempered, mode), "heldout_nll", -1.0)
    return [cross_fitted(Part(_tempered_label(mode), gains, 0.0))]


def _cpe8(r: dict, scales: list[RunSpec]) -> list[Part]:
    """CPE-8's part: the CPE at the broadest prior minus at the narrowest."""
    df = r["results"]
    lo, hi = scales[0], scales[-1]
    return [cross_fitted(Part(f"CPE at prior std {hi.prior:g} minus at {lo.prior:g}",
                              diff(cpe(df, hi), cpe(df, lo)), 0.0))]


def _t_opt_drop(r: dict, inv: list[RunSpec], model: str) -> list[Part]:
    """log10 T_opt at the smallest K minus at the largest, for `model` (plain or inv, CPE-5's
    falsifier)."""
    df = r["results"]
    ks = sorted({s.n_augs for s in inv})
    runs_k = {s.n_augs: s for s in inv if s.model == model}
    lo, hi = ks[0], ks[-1]
    label = f"{model}: log10 T_opt at K={lo} minus at K={hi}"
    if lo not in runs_k or hi not in runs_k:
        raise KeyError(f"{model} invariance runs at K={lo} and K={hi}")
    return [Part(label, diff(optimal_t(df, runs_k[lo]), optimal_t(df, runs_k[hi])), 0.0)]


def _cpe9(r: dict, inv: list[RunSpec]) -> list[Part]:
    """CPE-9's part: log10 T_opt of the invariant model minus the plain one's, at the largest K."""
    df = r["results"]
    hi = max(s.n_augs for s in inv)
    plain = {s.n_augs: s for s in inv if s.model == "plain"}
    invariant = {s.n_augs: s for s in inv if s.model == "inv"}
    if hi not in plain or hi not in invariant:
        raise KeyError(f"invariance runs of both models at K={hi}")
    return [Part(f"K={hi}: log10 T_opt invariant minus plain",
                 diff(optimal_t(df, invariant[hi]), optimal_t(df, plain[hi])), 0.0)]


def _curated_cpe(r: dict, spec: RunSpec) -> list[Part]:
    """CPE size without augmentation at the curation strength of `spec`."""
    return [cross_fitted(Part(f"CPE without augmentation, {spec.curation} agreeing annotators",
                              cpe(r["results"], spec), 0.0))]


def _prior_over_likelihood(r: dict, modes: dict[str, RunSpec], aug: str) -> list[Part]:
    """CPE-7's part: the CPE tempering the prior only minus tempering the likelihood only."""
    label = f"{aug}: CPE tempering the prior only minus tempering the likelihood only"
    df = r["results"]
    return [cross_fitted(Part(label, diff(cpe(df, modes["prior"]), cpe(df, modes["likelihood"])), 0.0))]


def _cpe7(r: dict, tempered: dict[str, RunSpec], aug: str) -> list[Part]:
    """CPE-7's part with augmentation `aug`: both temperings read from `tempered`."""
    return _prior_over_likelihood(r, {m: _tempering(tempered, m) for m in ("prior", "likelihood")}, aug)


def claim_cpe1(runs: dict[str, list[RunSpec]], cfg: dict) -> Claim:
    """CPE-1: with augmentation, a T < 1 beats T = 1 on test NLL and accuracy."""
    aug_run, no_aug = _aug_run(cfg), _no_aug(cfg)
    return Claim(
        id="CPE-1",
        statement="With augmentation, a T < 1 beats T = 1 on test NLL and accuracy.",
        paper_value="ResNet-20/CIFAR-10: acc. ~0.882 at T=1 vs ~0.93 at T<=0.1; NLL ~0.36 vs ~0.22",
        paper_source=WENZEL + "; " + NOCI + " Sec. 3",
        statistic="paired per-seed differences on the held-out half at the T < 1 with the lowest "
        "validation-half NLL averaged over the other seeds",
        rule="both CIs > 0",
        measure=lambda r: _gain(r, aug_run),
        source=CPE_DEFINED,
        uses=("temperature_sweep",),
        figures=("temperature_sweep",),
        falsifier=Falsifier(
            setting="no augmentation (the same sweep's un-augmented chains)",
            why="Noci et al. find that the CPE does not arise in a real curated data set (CIFAR-10) "
            "without augmentation, and name augmentation a main driver of it (CPE-2), so the cold "
            "gain should vanish there",
            measure=lambda r: _gain(r, no_aug, paper=False),
        ),
    )


def claim_cpe2(runs: dict[str, list[RunSpec]], cfg: dict) -> Claim:
    """CPE-2: augmentation drives the cold posterior effect."""
    aug_run, no_aug, inv = _aug_run(cfg), _no_aug(cfg), runs["invariance"]
    return Claim(
        id="CPE-2",
        statement="Augmentation drives the cold posterior effect: without it the effect is smaller.",
        paper_value="CPE much weaker without augmentation (" + QUAL + ")",
        paper_source=NOCI + " Sec. 5; " + BACHMANN,
        statistic=CPE_SIZE + ", with minus without augmentation",
        rule="CI > 0",
        measure=lambda r: _aug_gap(r, aug_run, no_aug, "CPE with augmentation minus without"),
        source=AUGMENTATION_DRIVES,
        uses=("temperature_sweep",),
        figures=("temperature_sweep",),
        falsifier=Falsifier(
            origin="outcome known before",  # seen before the verdict runs: the caveat or `why` says how
            setting=CPE2_INVARIANT_SETTING,
            why=CPE2_INVARIANT_WHY,
            measure=lambda r: _cpe2_invariant(r, inv), not_measurable=_invariant_off,
        ),
    )


def claim_cpe3(runs: dict[str, list[RunSpec]], cfg: dict) -> Claim:
    """CPE-3: synthetic curation produces a CPE that grows with curation strength."""
    cur = _curation_runs(runs)
    return Claim(
        id="CPE-3",
        statement="Synthetic curation produces a CPE that grows with curation strength.",
        paper_value="CPE grows with the number of agreeing annotators (" + QUAL + ")",
        paper_source=NOCI + " Sec. 4",
        statistic=CPE_SIZE + ", strongest minus weakest curation (no augmentation)",
        rule="CI > 0",
        measure=lambda r: _cpe3(r, cur),
        source=CURATION,
        kind="hypothesis",
        reading="that the CPE grows with curation strength: the abstract says a CPE 'can be "
        "produced' with varying curation strength, not that it grows with it (that a CPE appears "
        "at all is CPE-6)",
        uses=("curation", "annotator_noise", "curated_size"),
        figures=("curation",),
    )


def claim_cpe4(runs: dict[str, list[RunSpec]], cfg: dict) -> Claim:
    """CPE-4: tempering the prior alone gives a cold-temperature gain."""
    tempered = _tempered(runs, cfg["augmentation"])
    return Claim(
        id="CPE-4",
        statement="The CPE is linked to the prior: tempering the prior alone gives a cold-temperature "
        "gain.",
        paper_value="prior-only tempering changes the NLL (" + QUAL + ")",
        paper_source=NOCI + " Sec. 6",
        statistic="per seed, prior-only tempering: held-out-half NLL at T=1 minus at the T < 1 with the "
        "lowest validation-half NLL averaged over the other seeds",
        rule="CI > 0",
        measure=lambda r: _tempered_gain(r, tempered, "prior"),
        source=PRIOR,
        uses=("prior",),
        not_measurable=_tempering_runs("prior"),
        reading=CPE4_READING,
        figures=("prior",),
        falsifier=Falsifier(
            setting="tempering the likelihood only instead of the prior only",
            why="Noci et al. link the CPE to the prior rather than the likelihood (their own contrast, "
            "CPE-7), so tempering the likelihood alone should give no cold-temperature gain",
            measure=lambda r: _tempered_gain(r, tempered, "likelihood"),
            not_measurable=_tempering_runs("likelihood"),
        ),
    )


def claim_cpe5(runs: dict[str, list[RunSpec]], cfg: dict) -> Claim:
    """CPE-5: the non-invariant model's optimal T falls as the number of augmentations K grows."""
    inv = runs["invariance"]
    return Claim(
        id="CPE-5",
        statement="The optimal T of the non-invariant model falls as the number of augmentations K "
        "grows.",
        paper_value="T_opt ~ 1/K for the plain model (" + QUAL + ")",
        paper_source=BACHMANN + " Sec. 4-5",
        statistic="per-seed log10 of the T with the lowest validation-half NLL on the temperature grid, "
        "smallest minus largest K; K distinct D4 views per image (K <= 8)",
        rule="CI > 0",
        measure=lambda r: _t_opt_drop(r, inv, "plain"),
        source=SAMPLE_SIZE,
        uses=("invariance",),
        figures=("invariance",),
        falsifier=Falsifier(
            origin="outcome known before",  # seen before the verdict runs: the caveat or `why` says how
            setting="D4-invariant model instead of the plain one",
            why=CPE5_WHY,
            measure=lambda r: _t_opt_drop(r, inv, "inv"), not_measurable=_invariant_off,
        ),
    )


def claim_cpe6(runs: dict[str, list[RunSpec]], cfg: dict) -> Claim:
    """CPE-6: curated data without augmentation shows a CPE."""
    cur = _curation_runs(runs)
    return Claim(
        id="CPE-6",
        statement="Augmentation is sufficient but not necessary for a CPE: curated data without "
        "augmentation shows one.",
        paper_value="'sufficient but not necessary' (" + QUAL + ")",
        paper_source=NOCI + " Sec. 4-5",
        statistic=CPE_SIZE + ", strongest curation, no augmentation",
        rule="CI > 0",
        measure=lambda r: _curated_cpe(r, cur[-1]),
        source=NOT_NECESSARY,
        uses=("curation", "annotator_noise", "curated_size"),
        figures=("curation",),
        falsifier=Falsifier(
            origin="our construction",  # a setting we chose: the paper draws no such contrast
            setting="no curation (a single annotator's labels), no augmentation",
            why=CPE6_WHY,
            measure=lambda r: _curated_cpe(r, cur[0]),
        ),
    )


def claim_cpe7(runs: dict[str, list[RunSpec]], cfg: dict) -> Claim:
    """CPE-7: tempering the prior alone gives a larger cold gain than tempering the likelihood alone."""
    main_aug = cfg["augmentation"]
    tempered, tempered_no_aug = _tempered(runs, main_aug), _tempered(runs, "none")
    return Claim(
        id="CPE-7",
        statement="The CPE is linked to the prior rather than the likelihood: tempering the prior alone "
        "gives a larger cold-temperature gain than tempering the likelihood alone.",
        paper_value="prior and likelihood tempered separately; the CPE linked to the prior ("
        + QUAL
        + ")",
        paper_source=NOCI + " Sec. 6",
        statistic=CPE_SIZE + ", prior-only minus likelihood-only tempering (same seed)",
        rule="CI > 0",
        measure=lambda r: _cpe7(r, tempered, main_aug),
        source=PRIOR,
        uses=("prior",),
        not_measurable=_tempering_runs("likelihood", "prior"),
        figures=("prior",),
        falsifier=Falsifier(
            origin="our construction",  # a setting we chose: the paper draws no such contrast
            setting="no augmentation (the same two temperings of un-augmented chains)",
            why=CPE7_WHY,
            measure=lambda r: _prior_over_likelihood(r, tempered_no_aug, "none"),
            not_measurable=partial(_untempered_pair_off, tempered_no_aug),
        ),
    )


def claim_cpe8(runs: dict[str, list[RunSpec]], cfg: dict) -> Claim:
    """CPE-8: a broader prior gives a larger CPE."""
    scales = _prior_scales(runs, cfg)
    return Claim(
        id="CPE-8",
        statement="The CPE changes with the prior scale: a broader prior gives a larger CPE.",
        paper_value="the CPE varies with the prior (" + QUAL + ")",
        paper_source=NOCI + " Sec. 6",
        statistic=CPE_SIZE + ", broadest minus narrowest prior",
        rule="CI > 0",
        measure=lambda r: _cpe8(r, scales),
        source=PRIOR,
        kind="hypothesis",
        reading="the direction and the prior scale: the abstract links the CPE to the prior, not to "
        "its scale in either direction",
        uses=("prior",),
        figures=("prior",),
    )


def claim_cpe9(runs: dict[str, list[RunSpec]], cfg: dict) -> Claim:
    """CPE-9: at the largest K, the D4-invariant model's optimal T is closer to 1 than the plain one's."""
    inv = runs["invariance"]
    return Claim(
        id="CPE-9",
        statement="At the largest K, the D4-invariant model's optimal T is closer to 1 than the plain "
        "model's.",
        paper_value="T_opt ~1 for the invariant model (" + QUAL + ")",
        paper_source=BACHMANN + " Sec. 4-5",
        statistic="per-seed log10 T_opt (lowest validation-half NLL), invariant minus plain, at the "
        "largest K",
        rule="CI > 0",
        measure=lambda r: _cpe9(r, inv),
        source=INVARIANCE,
        kind="hypothesis",
        reading=CPE9_READING,
        uses=("invariance",),
        figures=("invariance",),
    )


CLAIMS = (claim_cpe1, claim_cpe2, claim_cpe3, claim_cpe4, claim_cpe5, claim_cpe6, claim_cpe7, claim_cpe8,
          claim_cpe9)


def claims(runs: dict[str, list[RunSpec]], cfg: dict) -> list[Claim]:
    """CPE-1..CPE-9 for the conditions of this configuration."""
    return [make(runs, cfg) for make in CLAIMS]


# ---------------------------------------------------------------- the paper's declaration


FIGURES = (
    Figure("temperature_sweep", "Test accuracy (left) and NLL (right) of the SG-MCMC posterior ensemble "
           "against the temperature T (posterior tempering), with and without augmentation; dashed: SGD "
           "(MAP, the T=0 chain's last iterate). Bands: 90% t-interval over seeds.",
           figure_temperature_sweep, "results"),
    Figure("curation", "Synthetic curation without augmentation: training labels kept only where S simulated "
           "annotators agree. Left: test NLL against T per S; right: the CPE size (held-out-half NLL at T=1 "
           "minus at the T chosen on the other seeds' validation halves) against S. Bands/bars: 90% "
           "t-interval over seeds.", figure_curation, "results"),
    Figure("prior", "Left: CPE size (held-out-half NLL at T=1 minus at the T chosen on the other seeds) "
           "against the std of the Gaussian prior (augmented data). Right: test NLL against T when T tempers "
           "the whole posterior, the likelihood only, or the prior only (main prior std). Bands/bars: 90% "
           "t-interval over seeds, as the scorecard.", figure_prior, "results"),
    Figure("invariance", "K fixed D4 views per image (view 0 = the image): left, log10 of the NLL-optimal T "
           "against K for the plain CNN and the D4-invariant one, with 1/K dashed, per-seed optima at an end "
           "of the temperature grid ringed (bounds, not located optima); right, the seed-mean NLL curves, "
           "the model as colour and K as line style, as on the left. Bands: 90% t-interval over seeds (the "
           "temperature grid is discrete).", figure_invariance,
           "results"),
)

# ---------------------------------------------------------------- cost (the plan)


def cost(cfg: dict, run: str):
    """The plan's cost model of one sampling job (`replikit.plan.bill`): floor(n / batch) * ramp_start steps
    of the shared burn-in (one network), then floor(n / batch) * (epochs - ramp_start) steps of the
    chain stack, which advances all T chains at once (T = the temperatures, + 1 with sgd_baseline);
    curation runs train on curated_size images."""
    import torch
    import torch.nn.functional as F

    from replikit.data import augment as aug
    from replikit.data.datasets import class_count, image_shape
    from replikit.data.datasets import sizes as full_sizes
    from replikit.methods.posterior import gaussian_prior_energy, prior_parameters
    from replikit.methods.samplers import SGMCMC, Schedule
    from replikit.methods.step_cost import (
        Builder,
        JobPlan,
        Piece,
        Setup,
        batches_per_epoch,
        fake_module,
    )
    from replikit.models.chains import ChainStack
    from replikit.models.invariant import GROUP_SIZE, d4_batch
    from replikit.papers.cold_posterior import (
        RunSpec,
        branch_temperatures,
        build_network,
        channel_stats,
    )

    spec = RunSpec.parse(run)
    full_train, full_test = full_sizes(spec.data)
    channels, classes = image_shape(spec.data)[0], class_count(spec.data)
    n = cfg["n_train"] or full_train
    n = (cfg["curated_size"] or n) if spec.curation else n
    n_test, size, b = cfg["n_test"] or full_test, cfg["image_size"], min(cfg["batch_size"], n)
    num_data = n * (spec.n_augs if cfg["n_convention"] == "nK" and spec.n_augs else 1)
    spe = batches_per_epoch(n, b)
    s = cfg["sampler"]

    temps = branch_temperatures(cfg)

    def setup(chains: int | None) -> Builder:
        """cold_posterior.Run.make_loss and make_sampler (chains None: the burn-in's one network) or
        make_chain_loss and chain_stack (a stack of `chains` networks): the run's views of a float
        batch, mean NLL plus the Gaussian prior energy / n, one SG-MCMC step past the ramp (the noise
        is drawn), on the sampler's GPU path."""
        def build() -> Setup:
            def network() -> torch.nn.Module:
                return build_network(cfg, classes, spec.model == "inv", channels)

            if chains is None:
                model = fake_module(network)
                params = prior_parameters(model)
            else:
                model = fake_module(lambda: ChainStack([network() for _ in range(chains)]))
                template = network()
                names = {id(p): n for n, p in template.named_parameters()}
                params = [model.stacked(names[id(p)]) for p in prior_parameters(template)]
            sampler = SGMCMC(model.parameters(), lr=s["lr"], num_data=num_data, method=s["method"],
                             momentum=s["momentum"], precondition=s["precondition"],
                             temperature=1.0 if chains is None else [1.0] * chains,
                             schedule=Schedule(spe, cfg["cycle_epochs"], cfg["ramp_start"],
                                               cfg["sample_start"]))
            sampler.step_count = spe * cfg["sample_start"]  # past the ramp: the noise is drawn
            sampler.fused = True  # the path it takes on a GPU (one noise draw, foreach norms)
            x, y = torch.empty(n, channels, size, size), torch.zeros(n, dtype=torch.long)
            x_test = torch.empty(n_test, channels, size, size)
            mean, std = channel_stats(spec.data, x)
            crop = aug.AugmentSpec(crop="pad", pad=max(1, size // 8), flip=True)

            def loss() -> torch.Tensor:
                idx = torch.randint(0, n, (b,))
                xb = x[idx]
                if spec.augmentation == "d4":
                    xb = d4_batch(xb, torch.randint(0, GROUP_SIZE, (b,)))
                elif spec.augmentation != "none":
                    xb = aug.augment(xb, torch.rand(b, aug.N_UNIFORMS), crop)
                xb = (xb - mean) / std
                if chains is None:
                    nll = F.cross_entropy(model(xb), y[idx])
                    return nll + gaussian_prior_energy(params, spec.prior) / num_data
                logits = model(xb)
                nll = F.cross_entropy(logits.flatten(0, 1), y[idx].repeat(chains), reduction="none")
                energy = gaussian_prior_energy(params, spec.prior, chains=True)
                return (nll.view(chains, -1).mean(1) + energy / num_data).sum()

            if chains is None:
                return Setup(model, loss, sampler, [x, y, x_test])
            return Setup(model, loss, sampler, [x, y, x_test], chains=chains, one_chain=setup(None))

        return build

    key = ("cp", str(cfg["model"]), spec.model, spec.augmentation, n, n_test, size, b)
    formula = (f"floor({n}/{b}) x ramp_start {cfg['ramp_start']} (burn-in) + floor({n}/{b}) x "
               f"(epochs {cfg['epochs']} - {cfg['ramp_start']}) steps of {len(temps)} chains at once")
    chain_steps = spe * (cfg["epochs"] - cfg["ramp_start"])
    return JobPlan([Piece(key + ("burn-in",), setup(None), spe * cfg["ramp_start"]),
                    Piece(key + (len(temps), "chains"), setup(len(temps)), chain_steps)],
                   formula, "cold_posterior.batch_size")


SPEC = Paper(
    cp.RUNS, cost=cost, prefix="cp", arxiv="2106.06596, 2205.13900", figures=FIGURES,
    load_results=lambda files: {"results": load_results(files["metrics"])},
    title="The cold posterior effect: curation, augmentation, prior, invariance (Noci et al., NeurIPS "
    "2021; Bachmann et al., ICML 2022)", claims=claims, dataset=lambda cfg, figure: cfg["dataset"],
    departures=(Departure(
        "curation", "S simulated annotators, each giving the true label or a logistic-regression "
        "labeller's, an image kept only when all agree",
        "the paper's controlled curation experiment (its details are not available offline)",
        "the paper body is not available offline; the simulation follows the abstract's 'controlled "
        "experiment with varying curation strength'"),),
    unverified=("curation", "annotator_noise", "curated_size", "invariance"),
    retrain_free_edit=("curation", {"annotators": [1, 2]}))
