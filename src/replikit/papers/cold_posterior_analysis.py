"""Aggregation, figures and claims for the cold-posterior replication (CPE-1..CPE-5)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from .. import plotting
from ..aggregate import seed_diff as diff
from ..claims import Claim, Part
from ..io import read_json
from ..plotting import sns
from . import cold_posterior as cp
from .cold_posterior import RunSpec
from .interface import Paper

NOCI = "Noci et al., NeurIPS 2021 (arXiv 2106.06596)"
BACHMANN = "Bachmann et al., ICML 2022 (arXiv 2205.13900)"
WENZEL = "Wenzel et al., ICML 2020 (arXiv 2002.02405), Fig. 1 and committed logs"
QUAL = "qualitative; exact value not verified offline"
METRICS = ("accuracy", "nll", "brier", "ece")


def load_results(paths: list[str | Path]) -> pd.DataFrame:
    """One row per (run, seed, temperature) with the ensemble and last-sample metrics."""
    rows = []
    for p in paths:
        m = read_json(p)
        for t, r in m["temperatures"].items():
            rows.append({"run": m["run"], "seed": int(m["seed"]), "T": float(t), **r["metrics"]})
    if not rows:
        raise ValueError("no cold-posterior results to aggregate")
    return pd.DataFrame(rows)


def select(df: pd.DataFrame, spec: RunSpec, sampled: bool = True) -> pd.DataFrame:
    """Rows of one condition; `sampled` drops the T = 0 (SGD) baseline."""
    sel = df[df["run"] == spec.name]
    if sel.empty:
        raise KeyError(spec.name)
    return sel[sel["T"] > 0] if sampled else sel


def per_seed_at(df: pd.DataFrame, spec: RunSpec, t: float, column: str = "nll") -> dict[int, float]:
    sel = select(df, spec)
    sel = sel[np.isclose(sel["T"], t)]
    if sel.empty:
        raise KeyError(f"{spec.name} at T={t:g}")
    return dict(zip(sel["seed"].astype(int), sel[column].astype(float), strict=True))


def selected_t(df: pd.DataFrame, spec: RunSpec) -> dict[int, float]:
    """Per seed: the sampled T with the lowest NLL on the validation half of the held-out images."""
    sel = select(df, spec)
    idx = sel.groupby("seed")["val_nll"].idxmin()
    return {int(s): float(sel.loc[i, "T"]) for s, i in idx.items()}


def cpe(df: pd.DataFrame, spec: RunSpec) -> dict[int, float]:
    """Size of the CPE per seed: NLL at T = 1 minus NLL at the T selected on the validation half,
    both on the other (held-out) half. Unlike "minus the best NLL over T" it is not >= 0 by
    construction: under no effect it is centred at or below 0."""
    sel = select(df, spec)
    at = sel.set_index(["seed", "T"])["heldout_nll"]
    return {s: float(at[(s, 1.0)] - at[(s, t)]) for s, t in selected_t(df, spec).items()}


def best_cold_t(df: pd.DataFrame, spec: RunSpec) -> float:
    """The T < 1 with the lowest seed-mean NLL on the validation half (never on the judged half)."""
    sel = select(df, spec)
    cold = sel[sel["T"] < 1]
    if cold.empty:
        raise KeyError(f"{spec.name}: no T < 1")
    return float(cold.groupby("T")["val_nll"].mean().idxmin())


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
    for ax, metric in zip(axes[0], ("accuracy", "nll"), strict=True):
        sns.lineplot(d[d["T"] > 0], x="T", y=metric, hue="condition", marker="o", errorbar=("ci", 95), ax=ax)
        palette = dict(zip(names.values(), sns.color_palette(plotting.PALETTE), strict=False))
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
    sns.lineplot(d, x="T", y="nll", hue="annotators", marker="o", errorbar=("ci", 95), ax=axes[0, 0],
                 palette=plotting.PALETTE)
    _log_t_axis(axes[0, 0])
    axes[0, 0].set(ylabel="test NLL", title="NLL against T")
    table = _cpe_table(df, specs, lambda s: s.curation)
    sns.pointplot(table, x="x", y="cpe", errorbar=("ci", 95), ax=axes[0, 1])
    axes[0, 1].axhline(0, c="grey", lw=0.8)
    axes[0, 1].set(xlabel="curation strength (annotators who must agree)", ylabel="CPE: NLL(T=1) - best NLL",
                   title="size of the cold posterior effect")
    plotting.save(fig, out, "Cold posterior: synthetic curation (no augmentation)", scale, subset)
    return table


def figure_prior(df: pd.DataFrame, specs: list[RunSpec], out: Path, scale: str, subset: bool) -> pd.DataFrame:
    scales = sorted({s for s in specs if s.temper == "posterior"}, key=lambda s: s.prior)
    main = [s for s in specs if s.temper != "posterior"]
    fig, axes = plotting.new_figure(2)
    table = _cpe_table(df, scales, lambda s: s.prior)
    sns.pointplot(table, x="x", y="cpe", errorbar=("ci", 95), ax=axes[0, 0])
    axes[0, 0].axhline(0, c="grey", lw=0.8)
    axes[0, 0].set(xlabel="prior std (Gaussian on all weights)", ylabel="CPE: NLL(T=1) - best NLL",
                   title="CPE against the prior scale")
    ref = [s for s in scales if main and s.prior == main[0].prior]
    names = {s.name: f"temper {s.temper}" for s in ref + main}
    d = df[df["run"].isin(names) & (df["T"] > 0)].assign(tempering=lambda x: x["run"].map(names))
    sns.lineplot(d, x="T", y="nll", hue="tempering", marker="o", errorbar=("ci", 95), ax=axes[0, 1])
    _log_t_axis(axes[0, 1])
    axes[0, 1].set(ylabel="test NLL", title="what T tempers")
    plotting.save(fig, out, "Cold posterior: the role of the prior", scale, subset)
    return pd.concat([table.assign(panel="cpe_vs_prior_scale"),
                      d.assign(panel="tempering")], ignore_index=True)


def figure_invariance(df: pd.DataFrame, specs: list[RunSpec], out: Path, scale: str,
                      subset: bool) -> pd.DataFrame:
    rows = [{"run": s.name, "model": "invariant (D4)" if s.model == "inv" else "plain CNN", "K": s.n_augs,
             "seed": seed, "log10_T_opt": v} for s in specs for seed, v in optimal_t(df, s).items()]
    table = pd.DataFrame(rows)
    fig, axes = plotting.new_figure(2)
    ax = axes[0, 0]
    sns.lineplot(table, x="K", y="log10_T_opt", hue="model", marker="o", errorbar=("ci", 95), ax=ax)
    ks = np.array(sorted(table["K"].unique()), dtype=float)
    ax.plot(ks, -np.log10(ks), ls="--", c="grey", label="1/K")
    ax.set_xscale("log", base=2)
    ax.set(xlabel="fixed augmentations per image K (D4 views)", ylabel="log10 NLL-optimal T",
           title="optimal temperature")
    ax.legend(fontsize=7)
    names = {s.name: f"{'inv' if s.model == 'inv' else 'plain'} K={s.n_augs}" for s in specs}
    d = df[df["run"].isin(names) & (df["T"] > 0)].assign(condition=lambda x: x["run"].map(names))
    sns.lineplot(d, x="T", y="nll", hue="condition", errorbar=None, marker="o", ax=axes[0, 1])
    _log_t_axis(axes[0, 1])
    axes[0, 1].set(ylabel="test NLL (seed mean)", title="NLL against T")
    axes[0, 1].legend(fontsize=6)
    plotting.save(fig, out, "Cold posterior: invariance and K augmentations (Bachmann et al.)", scale, subset)
    return table


FIGURE_FUNCS = {"temperature_sweep": figure_temperature_sweep, "curation": figure_curation,
                "prior": figure_prior, "invariance": figure_invariance}


# ---------------------------------------------------------------- claims


def _tempering_runs(*modes: str):
    """`not_measurable` for claims that need runs tempering only the given parts of the posterior."""
    def reason(cfg: dict) -> str:
        absent = [m for m in modes if m not in cfg["prior"]["tempering"]]
        return f"no run tempers the {' or the '.join(absent)} only (cold_posterior.prior.tempering)" \
            if absent else ""
    return reason


def claims(runs: dict[str, list[RunSpec]], cfg: dict) -> list[Claim]:
    """CPE-1..CPE-7 for the conditions of this configuration."""
    prior = float(cfg["prior_scale"])
    aug_run = RunSpec("plain", cfg["augmentation"], None, prior)
    no_aug = RunSpec("plain", "none", None, prior)
    cur = sorted(runs["curation"], key=lambda s: s.curation)
    scales = sorted({s for s in runs["prior"] if s.temper == "posterior"}, key=lambda s: s.prior)
    tempered = {s.temper: s for s in runs["prior"] if s.temper != "posterior"}
    inv = runs["invariance"]
    heldout = "held-out half"

    def tempering(mode: str) -> RunSpec:
        if mode not in tempered:
            raise KeyError(f"a run tempering the {mode} only (cold_posterior.prior.tempering)")
        return tempered[mode]

    def gain(r: dict, spec: RunSpec) -> list[Part]:
        df = r["results"]
        t = best_cold_t(df, spec)
        return [Part(f"{spec.augmentation}: {heldout} NLL at T=1 minus at T={t:g} (T chosen on the "
                     "validation half)", diff(per_seed_at(df, spec, 1.0, "heldout_nll"),
                                              per_seed_at(df, spec, t, "heldout_nll")), 0.0,
                     paper_value=0.36 - 0.22),
                Part(f"{spec.augmentation}: {heldout} accuracy at T={t:g} minus at T=1",
                     diff(per_seed_at(df, spec, t, "heldout_accuracy"),
                          per_seed_at(df, spec, 1.0, "heldout_accuracy")), 0.0, paper_value=0.93 - 0.882)]

    def cpe2(r: dict) -> list[Part]:
        df = r["results"]
        return [Part("CPE with augmentation minus without", diff(cpe(df, aug_run), cpe(df, no_aug)), 0.0)]

    def cpe3(r: dict) -> list[Part]:
        lo, hi = cur[0], cur[-1]
        return [Part(f"CPE with {hi.curation} annotators minus with {lo.curation}",
                     diff(cpe(r["results"], hi), cpe(r["results"], lo)), 0.0)]

    def cpe4(r: dict) -> list[Part]:
        df = r["results"]
        lo, hi = scales[0], scales[-1]
        prior_only = tempering("prior")
        t = best_cold_t(df, prior_only)
        return [Part(f"CPE at prior std {hi.prior:g} minus at {lo.prior:g}",
                     diff(cpe(df, hi), cpe(df, lo)), 0.0),
                Part(f"prior-only tempering: {heldout} NLL at T=1 minus at T={t:g}",
                     diff(per_seed_at(df, prior_only, 1.0, "heldout_nll"),
                          per_seed_at(df, prior_only, t, "heldout_nll")), 0.0)]

    def cpe5(r: dict) -> list[Part]:
        df = r["results"]
        ks = sorted({s.n_augs for s in inv})
        plain = {s.n_augs: s for s in inv if s.model == "plain"}
        invariant = {s.n_augs: s for s in inv if s.model == "inv"}
        lo, hi = ks[0], ks[-1]
        if lo not in plain or hi not in plain or hi not in invariant:
            raise KeyError(f"invariance runs at K={lo} and K={hi}")
        return [Part(f"plain: log10 T_opt at K={lo} minus at K={hi}",
                     diff(optimal_t(df, plain[lo]), optimal_t(df, plain[hi])), 0.0),
                Part(f"K={hi}: log10 T_opt invariant minus plain",
                     diff(optimal_t(df, invariant[hi]), optimal_t(df, plain[hi])), 0.0)]

    def cpe6(r: dict) -> list[Part]:
        return [Part(f"CPE without augmentation, {cur[-1].curation} agreeing annotators",
                     cpe(r["results"], cur[-1]), 0.0)]

    def cpe7(r: dict) -> list[Part]:
        df = r["results"]
        return [Part("CPE tempering the likelihood only minus tempering the prior only",
                     diff(cpe(df, tempering("likelihood")), cpe(df, tempering("prior"))), 0.0)]

    cpe_size = ("per-seed CPE size: NLL at T=1 minus NLL at the T chosen on the validation half of the "
                "held-out images, both on the other half")
    return [
        Claim("CPE-1", "With augmentation, the best T < 1 beats T = 1 on test NLL and accuracy.",
              "ResNet-20/CIFAR-10: acc. ~0.882 at T=1 vs ~0.93 at T<=0.1; NLL ~0.36 vs ~0.22",
              WENZEL + "; " + NOCI + " Sec. 3",
              "paired per-seed differences on the held-out half at the T < 1 with the lowest seed-mean "
              "NLL on the validation half", "both CIs > 0", lambda r: gain(r, aug_run),
              uses=("temperature_sweep",)),
        Claim("CPE-2", "Without augmentation the cold posterior effect is smaller (or absent).",
              "CPE much weaker without augmentation (" + QUAL + ")", NOCI + " Sec. 5; " + BACHMANN,
              cpe_size + ", with minus without augmentation", "CI > 0", cpe2, uses=("temperature_sweep",)),
        Claim("CPE-3", "Synthetic curation produces a CPE that grows with curation strength.",
              "CPE grows with the number of agreeing annotators (" + QUAL + ")", NOCI + " Sec. 4",
              cpe_size + ", strongest minus weakest curation (no augmentation)", "CI > 0", cpe3,
              uses=("curation", "annotator_noise", "curated_size")),
        Claim("CPE-4", "The CPE depends on the prior: it changes with the prior scale, and tempering the "
              "prior alone matters.", "prior-only tempering changes the NLL; the CPE varies with the prior "
              "(" + QUAL + ")", NOCI + " Sec. 6",
              cpe_size + ", broadest minus narrowest prior (direction declared: broader prior, larger "
              "CPE); and the held-out NLL gain of prior-only tempering at its validation-chosen T < 1",
              "both CIs > 0", cpe4, uses=("prior",), not_measurable=_tempering_runs("prior")),
        Claim("CPE-5", "The optimal T of the non-invariant model falls as K grows; the invariant model's "
              "stays closer to 1.",
              "T_opt ~ 1/K for the plain model, ~1 for the invariant one (" + QUAL + ")",
              BACHMANN + " Sec. 4-5",
              "per-seed log10 of the T with the lowest validation-half NLL on the temperature grid; K "
              "distinct D4 views per image (K <= 8)", "both CIs > 0", cpe5, uses=("invariance",)),
        Claim("CPE-6", "Augmentation is sufficient but not necessary for a CPE: curated data without "
              "augmentation shows one.", "'sufficient but not necessary' (" + QUAL + ")", NOCI + " Sec. 4-5",
              cpe_size + ", strongest curation, no augmentation", "CI > 0", cpe6,
              uses=("curation", "annotator_noise", "curated_size")),
        Claim("CPE-7", "The CPE comes through the likelihood: tempering the likelihood alone gives a larger "
              "cold-temperature gain than tempering the prior alone.",
              "likelihood-only vs prior-only tempering compared (" + QUAL + ")", NOCI + " Sec. 6",
              cpe_size + ", likelihood-only minus prior-only tempering (same seed)", "CI > 0", cpe7,
              uses=("prior",), not_measurable=_tempering_runs("likelihood", "prior")),
    ]


# ---------------------------------------------------------------- the paper's declaration


CAPTIONS = {
    "temperature_sweep": "Test accuracy (left) and NLL (right) of the SG-MCMC posterior ensemble against "
    "the temperature T (posterior tempering), with and without augmentation; dashed: SGD (MAP, the T=0 "
    "chain's last iterate). Bands: 95% bootstrap CI over seeds.",
    "curation": "Synthetic curation without augmentation: training labels kept only where S simulated "
    "annotators agree. Left: test NLL against T per S; right: the CPE size, NLL at T=1 minus the best "
    "NLL over T, against S. Bands/bars: 95% CI over seeds.",
    "prior": "Left: CPE size (NLL at T=1 minus the best NLL over T) against the std of the Gaussian prior "
    "(augmented data). Right: test NLL against T when T tempers the whole posterior, the likelihood "
    "only, or the prior only (main prior std). Bands/bars: 95% CI over seeds.",
    "invariance": "K fixed D4 views per image (view 0 = the image): left, log10 of the NLL-optimal T "
    "against K for the plain CNN and the D4-invariant one, with 1/K dashed; right, the seed-mean NLL "
    "curves. Bands: 95% CI over seeds (the temperature grid is discrete).",
}

SPEC = Paper.one_table(
    cp, "results", load_results, CAPTIONS, FIGURE_FUNCS, prefix="cp", arxiv="2106.06596, 2205.13900",
    title="The cold posterior effect: curation, augmentation, prior, invariance (Noci et al., NeurIPS "
    "2021; Bachmann et al., ICML 2022)", claims=claims, dataset=lambda cfg, figure: cfg["dataset"])
