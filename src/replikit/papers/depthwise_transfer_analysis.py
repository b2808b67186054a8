"""Depthwise transfer (Bordelon, Noci, Li, Hanin, Pehlevan, ICLR 2024): the results side. The figure
and claims jobs import this module (`registry.get` finds `SPEC` here); the runs and the training job
are in `depthwise_transfer.py`."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

from replikit.data import datasets
from replikit.papers.dataset_setting import foreign_margin
from replikit.papers.depthwise_transfer import (
    BRANCHES,
    DATASET,
    PAPER,
    PARAMS,
    RUNS,
    Sweep,
    chance_loss,
    cost,
    grid_steps,
    sweep,
)
from replikit.papers.interface import Figure, Paper
from replikit.scoring.claims import Claim, Falsifier, Part, Source
from replikit.scoring.fidelity import Departure

if TYPE_CHECKING:
    import pandas as pd


# The equivalence margins of DT-1, DT-3 and DT-4 (config key `margins`), each from its own pilot by one
# rule, stated 2026-11-26 before the pilot's numbers were seen (`python -m replikit.plan.pilot`).
MARGIN_RULE = (
    "A learning rate that misses the optimum by `margin` decades costs MARGIN_LOSS_COST (2 %) of the optimal "
    "final training loss, at the curvature of the loss-vs-log10(eta0) curve measured in the pilot (the "
    "parabola through the best grid point and its two neighbours, the fit that locates the optimum): "
    "margin = sqrt(cost / k), k the median, over the pilot's seeds and the claim's two networks, of the "
    "parabola's curvature over its minimum, rounded down to 0.01 decades. Why that size matters for the "
    "claims: a learning rate tuned on the shallow (narrow) network and used on the deep (wide) one is as "
    "good as re-tuned when it costs at most 2 % of the tuned loss; a larger shift is a failure to "
    "transfer that a user would pay for.")
MARGIN_LOSS_COST = 0.02


def equivalence_networks(cfg: dict) -> dict[str, tuple[Sweep, Sweep]]:
    """The two sweeps whose optima each equivalence claim compares (reference first)."""
    depths, widths = sorted(cfg["depths"]), sorted(cfg["width_sweep"]["widths"])
    wd, base = cfg["width_sweep"]["depth"], cfg["base_width"]
    return {"DT-1": (sweep("sqrtl", depths[0], base), sweep("sqrtl", depths[-1], base)),
            "DT-3": (sweep("sqrtl", wd, widths[0]), sweep("sqrtl", wd, widths[-1])),
            "DT-4": (sweep("one", wd, widths[0]), sweep("one", wd, widths[-1]))}


def margins_from_curves(curves_by_run: dict[str, dict[int, dict[float, float]]], cfg: dict,
                        cost: float = MARGIN_LOSS_COST) -> dict[str, dict]:
    """Each equivalence claim's margin by MARGIN_RULE from pilot curves {run: {seed: {eta0: loss}}}."""
    from replikit.scoring.aggregate import margin_from_curvature, relative_curvature

    out = {}
    for claim, (a, b) in equivalence_networks(cfg).items():
        ks = {f"{run.name} seed {seed}": relative_curvature(curve, minimize=True)
              for run in (a, b) for seed, curve in curves_by_run[run.name].items()}
        out[claim] = {**margin_from_curvature(ks, cost), "networks": [a.name, b.name]}
    return out


def pilot_curves(paths: list[str | Path], cfg: dict) -> dict[str, dict[int, dict[float, float]]]:
    """The pilot's curves {run: {seed: {eta0: final training loss}}} from its metrics files."""
    df = load_sweeps(paths)
    return {run: curves(df, run) for run in sorted(df["run"].unique())}


# ---------------------------------------------------------------- results (figure and claims jobs)


def load_sweeps(paths: list[str | Path]) -> pd.DataFrame:
    """One row per (run, seed, learning rate): the final training loss, capped at the chance loss (a
    diverged run, or one that ends above it, learned nothing), and the test metrics."""
    from replikit.scoring.aggregate import run_rows

    def rows(m: dict) -> list[dict]:
        spec = Sweep.parse(m["run"])
        chance = chance_loss(spec.data)
        return [{"branch": spec.branch, "parameterization": BRANCHES[spec.branch], "param": spec.param,
                 "depth": spec.depth,
                 "width": spec.width, "lr": float(it["lr"]), "diverged": bool(it["diverged"]),
                 "train_loss": chance if it["train_loss"] is None else min(float(it["train_loss"]), chance),
                 "test_accuracy": it.get("test_accuracy")} for it in m["items"]]

    return run_rows(paths, rows)


def curves(df: pd.DataFrame, run: str) -> dict[int, dict[float, float]]:
    """{seed: {learning rate: final training loss}} of one run; KeyError when it is missing."""
    sel = df[df["run"] == run]
    if sel.empty:
        raise KeyError(run)
    out: dict[int, dict[float, float]] = {}
    for r in sel.itertuples():
        out.setdefault(int(r.seed), {})[float(r.lr)] = float(r.train_loss)
    return out


def optima(df: pd.DataFrame, run: str) -> dict[int, float | None]:
    """Per seed: log10 of the loss-optimal learning rate, the vertex of a parabola through the best grid
    point and its two neighbours (aggregate.interpolated_optimum); None at an end of the grid."""
    from replikit.scoring.aggregate import interpolated_optimum

    return {s: interpolated_optimum(c, minimize=True) for s, c in curves(df, run).items()}


def grid_optima(df: pd.DataFrame, run: str) -> dict[int, float]:
    """Per seed: log10 of the best learning rate of the grid (no interpolation)."""
    from replikit.scoring.aggregate import best_on_grid

    return {s: best_on_grid(c, minimize=True) for s, c in curves(df, run).items()}


def shift(df: pd.DataFrame, a: Sweep, b: Sweep) -> tuple[dict[int, float], list[str]]:
    """Per seed: log10 optimum of run b minus that of run a, over the seeds where both are located, and
    the (run, seed) whose best learning rate sits at an end of the grid."""
    oa, ob = optima(df, a.name), optima(df, b.name)
    edges = [f"{r.name} seed {s}" for r, o in ((a, oa), (b, ob)) for s, v in o.items() if v is None]
    both = [s for s in sorted(set(oa) & set(ob)) if oa[s] is not None and ob[s] is not None]
    return {s: ob[s] - oa[s] for s in both}, edges


def bounded_shift(df: pd.DataFrame, a: Sweep, b: Sweep) -> tuple[dict[int, float], list[str], list[str]]:
    """Like `shift`, but where only b's best learning rate sits at an end of the grid (a's is located),
    b's optimum lies at or beyond that end, away from a's: the end's log10 value gives a shift no larger
    than the true one. Returns the shifts, the bounded (run, seed) and the (run, seed) not located."""
    oa, ob, gb = optima(df, a.name), optima(df, b.name), grid_optima(df, b.name)
    out, bounded, missing = {}, [], []
    for s in sorted(set(oa) & set(ob)):
        if oa[s] is None:
            missing.append(f"{a.name} seed {s}")
        elif ob[s] is None:
            out[s] = gb[s] - oa[s]
            bounded.append(f"{b.name} seed {s}")
        else:
            out[s] = ob[s] - oa[s]
    return out, bounded, missing


def settling(df: pd.DataFrame, runs: list[Sweep]) -> tuple[dict[int, float], list[float]]:
    """Per seed: the mean over learning rates of |loss(L2) - loss(L1)| minus the same of the two deepest
    networks (runs sorted by depth), over the learning rates at which every one of these runs trained in
    every seed (ended below the chance loss); and those learning rates."""
    import numpy as np

    c = [curves(df, r.name) for r in runs]
    chance = chance_loss(runs[0].data)
    seeds = sorted(set.intersection(*(set(x) for x in c)))
    lrs = sorted(set.intersection(*(set(x[s]) for x in c for s in seeds)))
    lrs = [lr for lr in lrs if all(x[s][lr] < chance for x in c for s in seeds)]
    if not lrs:
        return {}, []

    def gap(i: int, j: int, s: int) -> float:
        return float(np.mean([abs(c[j][s][lr] - c[i][s][lr]) for lr in lrs]))

    k = len(runs) - 1
    return {s: gap(0, 1, s) - gap(k - 1, k, s) for s in seeds}, lrs


# ---------------------------------------------------------------- figures


def _log2_axis(ax, values, label: str) -> None:
    ax.set_xscale("log", base=2)
    ax.set_xlabel(label)
    if len(values) <= 12:
        ax.set_xticks(sorted(values), [f"{v:g}" for v in sorted(values)])


def _mark_optima(ax, sel: pd.DataFrame, hue: str, colours: dict, margin: tuple[str, float] | None) -> None:
    """Each network's mean optimum (the parabola vertex, over the seeds where it is located) as a
    triangle at the foot of the panel in its colour, hollow where some seed's optimum sits at an end of
    the grid; and, for `margin` = (claim, decades), the claim's margin around the first (reference)
    network's mean optimum, shaded on the x axis."""
    import numpy as np

    from replikit.reporting import plotting

    ref = None
    for k, level in enumerate([lv for lv in colours if lv in set(sel[hue])]):
        runs = sel[sel[hue] == level]["run"].unique()
        opts = [v for run in runs for v in optima(sel, run).values()]
        located = [v for v in opts if v is not None]
        if not located:
            continue
        mean = float(np.mean(located))
        ref = mean if ref is None else ref
        full = len(located) == len(opts)
        # each later network's triangle smaller, so that one on top of another leaves it visible
        ax.plot([10 ** mean], [0.03], marker="^", ms=max(4.5, 12 - 2.5 * k), ls="none",
                transform=ax.get_xaxis_transform(),
                color=colours[level], mfc=colours[level] if full else "white", clip_on=False,
                label=None if full else f"{hue} {level}: optimum of {len(located)} of {len(opts)} seeds "
                "(the others at an end of the grid)")
    if margin is not None and ref is not None:
        claim, tol = margin
        plotting.claim_band(ax, claim, 10 ** (ref - tol), 10 ** (ref + tol),
                            f"margin ±{tol:g} decades around the narrowest optimum", axis="x")


def _loss_panels(df: pd.DataFrame, specs: list[Sweep], out: Path, scale: str, subset: bool, hue: str,
                 title: str, margins: dict[str, tuple[str, float]] | None = None,
                 levels: list | None = None) -> pd.DataFrame:
    """One panel per branch scale: the final training loss against eta0, one curve per `hue` level,
    each level in its colour among `levels` (all the levels a sibling figure draws, so that one width
    has one colour in both), or among those drawn here."""
    from replikit.data.datasets import class_count
    from replikit.reporting import plotting
    from replikit.reporting.plotting import SEED_CI, sns

    d = df[df["run"].isin([s.name for s in specs])].copy()
    chance = chance_loss(specs[0].data)
    param = "" if specs[0].param == "mup" else f"{PARAMS[specs[0].param]}, "
    fig, axes = plotting.new_figure(len(BRANCHES), width=4.8)
    top = d["train_loss"].max()
    # the same colour per depth (width) in both panels
    colours = plotting.hue_colours(d[hue] if levels is None else levels, ordered=True)
    drawn = set(d[hue])
    hue_args = {"hue_order": [k for k in colours if k in drawn],
                "palette": {k: v for k, v in colours.items() if k in drawn}}
    for ax, (branch, label) in zip(axes[0], BRANCHES.items(), strict=True):
        label = param + (label.removeprefix("muP + ").removeprefix("muP, ") if param else label)
        sel = d[d["branch"] == branch]
        sns.lineplot(sel, x="lr", y="train_loss", hue=hue, errorbar=SEED_CI, marker="o", ax=ax,
                     legend="full", **hue_args)
        ax.axhline(chance, ls=":", c="grey", lw=0.8)
        if margins is not None:
            _mark_optima(ax, sel, hue, hue_args["palette"], margins.get(branch))
            ax.legend(fontsize=7, title=hue, loc="upper center", bbox_to_anchor=(0.5, -0.27), ncol=2)
        ax.set(title=label, ylabel=f"final training loss\n(capped at ln {class_count(specs[0].data)})",
               ylim=(None, top + 0.05))
        _log2_axis(ax, sel["lr"].unique(), "base learning rate eta0")
    plotting.save(fig, out, title, scale, subset)
    return d


def figure_loss_vs_lr_depth(df: pd.DataFrame, specs: list[Sweep], out: Path, scale: str,
                            subset: bool = False) -> pd.DataFrame:
    width = specs[0].width
    return _loss_panels(df, specs, out, scale, subset, "depth",
                        f"Training loss against learning rate, one curve per depth (width {width})")


def figure_loss_vs_lr_width(df: pd.DataFrame, specs: list[Sweep], out: Path, scale: str,
                            subset: bool = False, cfg: dict | None = None) -> pd.DataFrame:
    depth = specs[0].depth
    margins = {"sqrtl": ("DT-3", cfg["margins"]["DT-3"]), "one": ("DT-4", cfg["margins"]["DT-4"])} \
        if cfg is not None else None
    return _loss_panels(df, specs, out, scale, subset, "width",
                        f"Training loss against learning rate, one curve per width (depth {depth})", margins)


def figure_loss_vs_lr_width_sp(df: pd.DataFrame, specs: list[Sweep], out: Path, scale: str,
                               subset: bool = False, cfg: dict | None = None) -> pd.DataFrame:
    """DT-3's and DT-4's falsifier: the narrowest and widest networks of the width sweep under SP."""
    margins = {"sqrtl": ("DT-3", cfg["margins"]["DT-3"]), "one": ("DT-4", cfg["margins"]["DT-4"])} \
        if cfg is not None else None
    levels = cfg["width_sweep"]["widths"] if cfg is not None else None
    return _loss_panels(df, specs, out, scale, subset, "width",
                        f"The falsifier of DT-3 and DT-4: SP, one curve per width (depth {specs[0].depth})",
                        margins, levels)


def figure_optimum_vs_depth(df: pd.DataFrame, specs: list[Sweep], out: Path, scale: str,
                            subset: bool = False, cfg: dict | None = None) -> pd.DataFrame:
    import pandas as pd

    from replikit.reporting import plotting
    from replikit.reporting.plotting import sns
    from replikit.scoring.stats import t_interval

    rows = []
    for spec in specs:
        for seed, v in optima(df, spec.name).items():
            rows.append({"run": spec.name, "seed": seed, "parameterization": BRANCHES[spec.branch],
                         "depth": spec.depth, "log10_optimal_lr": v,
                         "located": v is not None})
    d = pd.DataFrame(rows)
    summary = []
    for (param, depth), g in d[d["located"]].groupby(["parameterization", "depth"]):
        mean, lo, hi = t_interval(g["log10_optimal_lr"].astype(float).tolist(), 0.90)
        summary.append({"parameterization": param, "depth": depth, "mean": mean, "ci_low": lo, "ci_high": hi})
    # no optimum located at all (e.g. a preflight's two steps): the figure says so, with empty axes
    s = pd.DataFrame(summary, columns=["parameterization", "depth", "mean", "ci_low", "ci_high"])
    fig, axes = plotting.new_figure(1, width=5.6, height=4.8)  # room for the legend below
    ax = axes[0, 0]
    # one colour (and one side of the depth tick) per parameterization, bound by its meaning (BRANCHES'
    # order), for the seeds' dots, the means and the legend alike; never by the order of runs or specs
    colours = plotting.colour_map(BRANCHES.values())
    side = dict(zip(colours, (0.96, 1.04), strict=True))
    if d["located"].any():
        sns.stripplot(d[d["located"]], x="depth", y="log10_optimal_lr", hue="parameterization", ax=ax,
                      hue_order=list(colours), palette=colours, native_scale=True, log_scale=(2, False),
                      dodge=False, alpha=0.45, legend=False)
    else:
        ax.text(0.5, 0.5, "no optimum located: every best learning rate at an end of the grid",
                ha="center", va="center", transform=ax.transAxes, fontsize=8)
    for param in [p for p in colours if p in set(s["parameterization"])]:
        g = s[s["parameterization"] == param].sort_values("depth")
        err = [g["mean"] - g["ci_low"].fillna(g["mean"]), g["ci_high"].fillna(g["mean"]) - g["mean"]]
        ax.errorbar(g["depth"] * side[param], g["mean"], yerr=err, marker="o", capsize=3, label=param,
                    color=colours[param])
    # a seed whose best eta0 sits at an end of the grid has no located optimum (left out of the mean):
    # drawn at that end, hollow, in its parameterization's colour, and keyed
    for param in [p for p in colours if p in set(d["parameterization"])]:
        g = d[d["parameterization"] == param]
        if g["located"].all():
            continue
        grid = {run: grid_optima(df, run) for run in g["run"].unique()}
        ends = [v if ok else grid[run][seed]
                for run, seed, v, ok in zip(g["run"], g["seed"], g["log10_optimal_lr"], g["located"],
                                            strict=True)]
        plotting.mark_grid_ends(ax, g["depth"] * side[param], ends, ~g["located"], colour=colours[param],
                                label=f"of {param}: best eta0 at an end of the grid, drawn there "
                                "(hollow; a bound, left out of the mean)")
    lgs = sorted(math.log10(x) for x in df["lr"].unique())
    for y in lgs:
        ax.axhline(y, c="grey", lw=0.4, ls=":")
    ref = s[(s["parameterization"] == BRANCHES["sqrtl"]) & (s["depth"] == s["depth"].min())] if len(s) else s
    if cfg is not None and len(ref):  # DT-1's margin around the shallowest depth's mean optimum
        y0, tol = float(ref["mean"].iloc[0]), cfg["margins"]["DT-1"]
        plotting.claim_band(ax, "DT-1", y0 - tol, y0 + tol,
                            f"margin ±{tol} decades around L={int(ref['depth'].iloc[0])}", alpha=0.12)
    if ax.get_legend_handles_labels()[0]:  # below the panel: it hides no seed
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=1)
    ax.set(ylabel="log10 optimal eta0 (parabola vertex)", ylim=(lgs[0] - 0.1, lgs[-1] + 0.1))
    _log2_axis(ax, d["depth"].unique(), "depth L (residual blocks)")
    plotting.save(fig, out, "Loss-optimal learning rate against depth (mean, 90% t-interval over seeds)",
                  scale, subset)
    return d.merge(s, on=["parameterization", "depth"], how="left")


FIGURES = (
    Figure("loss_vs_lr_depth", "Final training loss against the base learning rate eta0 (SGD), one curve per "
           "depth, at the base width: muP with residual branches scaled by 1/sqrt(L) (left, the paper's "
           "parameterization) and plain muP residuals (right). Diverged runs count as the chance loss, ln of "
           "the class count (dotted). Bands: 90% t-interval over seeds.", figure_loss_vs_lr_depth, "sweeps"),
    Figure("loss_vs_lr_width", "The same across widths at a fixed depth. Triangles (smaller for each wider "
           "network, so that coinciding ones stay visible): each width's mean loss-optimal eta0 (the "
           "parabola vertex; hollow where some seed's best eta0 sits at an end of the grid); grey: DT-3's "
           "(left) and DT-4's (right) margin (`margins`) around the narrowest width's mean optimum. Whether "
           "the optimum transfers across width is those claims' verdict, which this figure illustrates but "
           "does not decide. Bands: 90% t-interval over seeds.",
           figure_loss_vs_lr_width, "sweeps", takes_config=True),
    Figure("loss_vs_lr_width_sp", "DT-3's and DT-4's falsifier: the narrowest and the widest network of the "
           "width sweep under the standard parameterization (SP: one SGD rate eta0 / N0 for weights "
           "N(0, 1/fan-in), the readout without muP's 1/gamma), from the same initial weights and batches. "
           "Under SP the optimal learning rate is expected to move with width, so the optimum should leave "
           "the margin (grey, as in the muP figure) that muP's must stay in. Triangles and colours as in the "
           "muP width figure. Bands: 90% t-interval over seeds.",
           figure_loss_vs_lr_width_sp, "sweeps", takes_config=True),
    Figure("optimum_vs_depth", "log10 of the loss-optimal eta0 per seed (dots; the vertex of a parabola "
           "through the best grid point and its two neighbours, dotted lines: the grid) and its mean with a "
           "90% Student-t interval over seeds, against depth, for both parameterizations. A seed whose best "
           "eta0 is at an end of the grid has no located optimum: it is drawn at that end as a hollow ring "
           "(a bound, keyed in the legend) and left out of the mean. Grey band: DT-1's margin (`margins`) "
           "around the mean optimum of muP + 1/sqrt(L) at the shallowest depth.", figure_optimum_vs_depth,
           "sweeps", takes_config=True),
)


# ---------------------------------------------------------------- claims

SOURCE = "arXiv 2309.16620 (ICLR 2024)"
WHERE = "Bordelon, Noci, Li, Hanin, Pehlevan, ICLR 2024 (arXiv 2309.16620), abstract"
QUAL = "qualitative; the paper's figures were not available offline"
MUP_WIDTH = Source(
    quote="One such proposal uses $\u03bc$P parameterized networks, where the optimal "
    "hyperparameters for small width networks transfer to networks with arbitrarily large "
    "width.",
    where=WHERE,
    background="the sentence reports earlier work (muP's width transfer, Yang et al.) that "
    "the paper builds on; it is not a finding of this paper",
)
NO_DEPTH = Source(
    quote="However, in this scheme, hyperparameters do not transfer across depths.", where=WHERE
)
TRANSFER = Source(
    quote="We provide experiments demonstrating that residual architectures including convolutional ResNets "
    "and Vision Transformers trained with this parameterization exhibit transfer of optimal hyperparameters "
    "across width and depth on CIFAR-10 and ImageNet.",
    where=WHERE,
)
LIMIT = Source(
    quote="Using recent developments in the dynamical mean field theory (DMFT) description of neural network "
    "learning dynamics, we show that this parameterization of ResNets admits a well-defined feature learning "
    "joint infinite-width and infinite-depth limit and show convergence of finite-size network dynamics "
    "towards this limit.",
    where=WHERE,
)


def _equivalence(label: str, d: dict[int, float], tol: float, edges: list[str], foreign: str) -> list[Part]:
    """The two one-sided parts of an equivalence within +-tol decades; no evidence when an optimum is
    not located (`edges`) or the margin's pilot ran on other data (`foreign`, dataset_setting)."""
    parts = [Part(f"{label} < +{tol} decades", d, tol, direction="below", no_evidence=foreign),
             Part(f"{label} > -{tol} decades", d, -tol, direction="above", no_evidence=foreign)]
    if edges:
        for part in parts:
            part.no_evidence = ("a best learning rate sits at an end of the grid, so its optimum is not "
                                "located: " + ", ".join(edges))
    return parts


SQ = "muP + 1/sqrt(L)"  # the paper's parameterization, as the labels and statistics name it


def _depths(cfg: dict) -> list[int]:
    """The configured depths, shallowest first."""
    return sorted(cfg["depths"])


def _widths(cfg: dict) -> list[int]:
    """The width sweep's widths, narrowest first."""
    return sorted(cfg["width_sweep"]["widths"])


def _by_depth(runs: dict[str, list[Sweep]]) -> dict[tuple[str, int], Sweep]:
    """The depth sweep's runs by (branch, depth)."""
    return {(s.branch, s.depth): s for s in runs["loss_vs_lr_depth"]}


def _by_width(runs: dict[str, list[Sweep]]) -> dict[tuple[str, int], Sweep]:
    """The muP width sweep's runs by (branch, width)."""
    return {(s.branch, s.width): s for s in runs["loss_vs_lr_width"]}


def _by_sp(runs: dict[str, list[Sweep]]) -> dict[tuple[str, int], Sweep]:
    """The SP width sweep's runs by (branch, width)."""
    return {(s.branch, s.width): s for s in runs["loss_vs_lr_width_sp"]}


def _step(cfg: dict) -> float:
    """The eta0 grid's smallest step, in decades."""
    return min(grid_steps(cfg["lrs"]))


def _foreign(cfg: dict) -> str:
    """Why DT-1/3/4's margins carry no evidence on this configuration's data ("" when they do)."""
    data = cfg.get("dataset") or DATASET
    return foreign_margin(PAPER, data, cfg.get("pilot_dataset") or DATASET, "DT-1/3/4's margins")


def _setting(cfg: dict) -> str:
    """The setting that ends every claim's statistic."""
    model = {"mlp": "residual MLP", "rescnn": "residual CNN"}[cfg["model"]]
    data = cfg.get("dataset") or DATASET
    return (f"; setting: {model} on {datasets.get(data).title} ({cfg['n_train']} training images), SGD "
            f"for {cfg['steps']} steps at batch {cfg['batch_size']}, muP with base width "
            f"{cfg['base_width']}, eta0 grid {min(cfg['lrs']):g}..{max(cfg['lrs']):g} in steps of "
            f"{_step(cfg):.2f} decades")


def _equiv_rule(cfg: dict, claim: str) -> str:
    """The rule of an equivalence claim (DT-1, DT-3, DT-4) within its margin."""
    margins, step = cfg["margins"], _step(cfg)
    return (f"equivalence: both one-sided parts within +-{margins[claim]} decades (`margins`: the shift "
            f"that costs {MARGIN_LOSS_COST:.0%} of the optimal loss at the curvature measured in a pilot "
            f"on seeds the verdicts do not use, below the grid step {step:.2f}), every optimum inside "
            "the grid")


def _transfer(r: dict, a: Sweep, b: Sweep, label: str, tol: float, foreign: str) -> list[Part]:
    """The equivalence parts of b's optimum minus a's, within +-tol decades."""
    d, edges = shift(r["sweeps"], a, b)
    return _equivalence(label, d, tol, edges, foreign)


def _transfer_bounded(r: dict, a: Sweep, b: Sweep, label: str, tol: float, foreign: str) -> list[Part]:
    """`_transfer` where b's optimum may lie beyond the grid's end (as in DT-2): its end gives a shift
    no larger than the true one, so the bound can only push the verdict toward "replicated"."""
    d, bounded, missing = bounded_shift(r["sweeps"], a, b)
    note = f" [beyond the grid's end, its end used: {', '.join(bounded)}]" if bounded else ""
    return _equivalence(label + note, d, tol, missing, foreign)


def _contrast(r: dict, plain: tuple[Sweep, Sweep], scaled: tuple[Sweep, Sweep], span: str) -> list[Part]:
    """|shift of the optimum| of plain muP minus that of muP + 1/sqrt(L), between two networks each."""
    df = r["sweeps"]
    moved, bounded, missing = bounded_shift(df, *plain)
    scaled_shift, edges = shift(df, *scaled)
    seeds = sorted(set(moved) & set(scaled_shift))
    label = (f"|shift of log10 optimal eta0 from {span}|: plain muP minus muP + 1/sqrt(L)"
             + (f" [plain muP's optimum beyond the grid's end, its end used (a smaller shift): "
                f"{', '.join(bounded)}]" if bounded else ""))
    part = Part(label, {s: abs(moved[s]) - abs(scaled_shift[s]) for s in seeds}, 0.0)
    if missing or edges:
        part.no_evidence = ("an optimum that the contrast needs is not located (best learning rate "
                            "at an end of the grid): " + ", ".join(missing + edges))
    return [part]


def _dt5(r: dict, by_depth: dict[tuple[str, int], Sweep], lo: int, hi: int) -> list[Part]:
    """DT-5's part: plain muP's optimum at depth hi minus at depth lo, below 0."""
    plain, bounded, missing = bounded_shift(r["sweeps"], by_depth[("one", lo)], by_depth[("one", hi)])
    part = Part(f"plain muP: log10 optimal eta0 at L={hi} minus at L={lo}"
                + (f" [beyond the grid's end, its end used: {', '.join(bounded)}]" if bounded else ""),
                plain, 0.0, direction="below")
    if missing:
        part.no_evidence = "the shallow network's optimum is not located: " + ", ".join(missing)
    return [part]


def _dt6(r: dict, by_depth: dict[tuple[str, int], Sweep], depths: list[int]) -> list[Part]:
    """DT-6's part: how much the loss of muP + 1/sqrt(L) settles between the deepest depths."""
    lo, hi = depths[0], depths[-1]
    runs6 = [by_depth[("sqrtl", d)] for d in depths]
    d, lrs = settling(r["sweeps"], runs6)
    part = Part(f"muP + 1/sqrt(L): mean |loss(L={depths[1]}) - loss(L={lo})| minus mean "
                f"|loss(L={hi}) - loss(L={depths[-2]})| over the eta0 every run trained at "
                f"({', '.join(f'{x:g}' for x in lrs)})", d, 0.0)
    if not d:
        part.no_evidence = "no learning rate at which every depth trained in every seed"
    return [part]


def _sp_falsifier(runs: dict[str, list[Sweep]], cfg: dict, branch: str, claim: str) -> Falsifier:
    """DT-3's (branch sqrtl) or DT-4's (one) statistic under the standard parameterization."""
    by_sp, widths, margins, foreign = _by_sp(runs), _widths(cfg), cfg["margins"], _foreign(cfg)
    n_lo, n_hi = widths[0], widths[-1]
    a, b = by_sp[(branch, n_lo)], by_sp[(branch, n_hi)]
    label = (f"SP, {'1/sqrt(L)' if branch == 'sqrtl' else 'unscaled'} branches: "
             f"log10 optimal eta0, N={n_hi} minus N={n_lo}")
    return Falsifier(
        origin="our construction",  # a setting we chose: the paper draws no such contrast
        setting="the standard parameterization (SP) instead of muP",
        why="the sentence reports muP as the proposal under which the optimum transfers across width; "
        "the parameterization it was proposed against is SP, under which the optimal learning rate "
        "moves with width under one global rate (Yang et al. 2022, arXiv 2203.03466, Tensor Programs V), "
        "so the optimum should leave the margin; declared before any SP run",
        measure=lambda r: _transfer_bounded(r, a, b, label, margins[claim], foreign),
    )


def _too_few_depths(c: dict) -> str:
    """DT-6's `not_measurable`: its settling needs three depths or more."""
    return "" if len(c["depths"]) >= 3 else f"needs 3 or more depths (depths: {c['depths']})"


def claim_dt1(runs: dict[str, list[Sweep]], cfg: dict) -> Claim:
    """DT-1: with the 1/sqrt(L) branches and muP, the optimum transfers across depth."""
    by_depth, depths, margins, foreign = _by_depth(runs), _depths(cfg), cfg["margins"], _foreign(cfg)
    lo, hi = depths[0], depths[-1]
    scaled = (by_depth[("sqrtl", lo)], by_depth[("sqrtl", hi)])
    plain = (by_depth[("one", lo)], by_depth[("one", hi)])
    label, plain_label = (f"{SQ}: log10 optimal eta0, L={hi} minus L={lo}",
                          f"plain muP: log10 optimal eta0, L={hi} minus L={lo}")
    return Claim(
        id="DT-1",
        statement="With residual branches scaled by 1/sqrt(L) and muP, the loss-optimal learning rate "
        "stays the same across depths.",
        paper_value="optimum transfers across depth (" + QUAL + ")",
        paper_source=SOURCE + ", abstract",
        statistic="per seed: log10 optimal eta0 (vertex of a parabola through the best grid point and "
        f"its neighbours) at L={hi} minus at L={lo}, {SQ}, width {cfg['base_width']}" + _setting(cfg),
        rule=_equiv_rule(cfg, "DT-1"),
        measure=lambda r: _transfer(r, *scaled, label, margins["DT-1"], foreign),
        source=TRANSFER,
        uses=("depths", "margins"),
        figures=("loss_vs_lr_depth", "optimum_vs_depth"),
        drawn=(("optimum_vs_depth", "y"),),
        falsifier=Falsifier(
            origin="outcome known before",  # seen before the verdict runs: the caveat or `why` says how
            setting="plain muP (no 1/sqrt(L) branch scale)",
            why="the paper's own contrast: without the depth scaling 'hyperparameters do not transfer "
            "across depths', so the optimum should move by more than the margin (DT-2); declared with "
            "its outcome known (DT-5 had measured this shift), so read it as declared after the fact",
            measure=lambda r: _transfer_bounded(r, *plain, plain_label, margins["DT-1"], foreign),
        ),
    )


def claim_dt2(runs: dict[str, list[Sweep]], cfg: dict) -> Claim:
    """DT-2: without the depth scaling, the optimum moves more with depth than with it."""
    by_depth, by_width, depths, widths = _by_depth(runs), _by_width(runs), _depths(cfg), _widths(cfg)
    lo, hi, n_lo, n_hi, wd = depths[0], depths[-1], widths[0], widths[-1], cfg["width_sweep"]["depth"]
    plain = (by_depth[("one", lo)], by_depth[("one", hi)])
    scaled = (by_depth[("sqrtl", lo)], by_depth[("sqrtl", hi)])
    w_plain = (by_width[("one", n_lo)], by_width[("one", n_hi)])
    w_scaled = (by_width[("sqrtl", n_lo)], by_width[("sqrtl", n_hi)])
    span, w_span = f"L={lo} to L={hi}", f"N={n_lo} to N={n_hi} at L={wd}"
    return Claim(
        id="DT-2",
        statement="Without the depth scaling (plain muP residuals), the optimal learning rate does not "
        "transfer across depths: it moves more with depth than with the 1/sqrt(L) branches.",
        paper_value="optimum shifts with depth under muP (" + QUAL + ")",
        paper_source=SOURCE + ", abstract",
        statistic="per seed, same initial weights and batches: |shift of log10 optimal eta0 from "
        f"L={lo} to "
        f"L={hi}| under plain muP minus the same under {SQ} (width {cfg['base_width']})" + _setting(cfg),
        rule="CI > 0 (a negative control: not replicated when the scaled optimum moves more)",
        measure=lambda r: _contrast(r, plain, scaled, span),
        source=NO_DEPTH,
        uses=("depths",),
        caveat="the contrast needs no direction of the shift; DT-5 tests the direction",
        figures=("loss_vs_lr_depth", "optimum_vs_depth"),
        falsifier=Falsifier(
            setting=f"across width (N={n_lo} to N={n_hi} at L={wd}) instead of depth",
            why="both branch scales are muP in width, whose optimum the paper says transfers across "
            "width (DT-3, DT-4), so the unscaled branches' optimum should move no more than the "
            "scaled ones'",
            measure=lambda r: _contrast(r, w_plain, w_scaled, w_span),
        ),
    )


def claim_dt3(runs: dict[str, list[Sweep]], cfg: dict) -> Claim:
    """DT-3: with the 1/sqrt(L) branches and muP, the optimum transfers across width."""
    by_width, widths, margins, foreign = _by_width(runs), _widths(cfg), cfg["margins"], _foreign(cfg)
    n_lo, n_hi, wd = widths[0], widths[-1], cfg["width_sweep"]["depth"]
    a, b = by_width[("sqrtl", n_lo)], by_width[("sqrtl", n_hi)]
    label = f"{SQ}: log10 optimal eta0, N={n_hi} minus N={n_lo}"
    return Claim(
        id="DT-3",
        statement="With residual branches scaled by 1/sqrt(L) and muP, the loss-optimal learning rate "
        "stays the same across widths.",
        paper_value="optimum transfers across width (" + QUAL + ")",
        paper_source=SOURCE + ", abstract",
        statistic=f"per seed: log10 optimal eta0 at width {n_hi} minus at width {n_lo}, {SQ}, depth {wd}"
        + _setting(cfg),
        rule=_equiv_rule(cfg, "DT-3"),
        measure=lambda r: _transfer(r, a, b, label, margins["DT-3"], foreign),
        source=TRANSFER,
        uses=("width_sweep", "margins"),
        figures=("loss_vs_lr_width", "loss_vs_lr_width_sp"),
        drawn=(("loss_vs_lr_width", "x"),),
        falsifier=_sp_falsifier(runs, cfg, "sqrtl", "DT-3"),
    )


def claim_dt4(runs: dict[str, list[Sweep]], cfg: dict) -> Claim:
    """DT-4: under plain muP the optimum transfers across width (muP's own transfer)."""
    by_width, widths, margins, foreign = _by_width(runs), _widths(cfg), cfg["margins"], _foreign(cfg)
    n_lo, n_hi, wd = widths[0], widths[-1], cfg["width_sweep"]["depth"]
    a, b = by_width[("one", n_lo)], by_width[("one", n_hi)]
    label = f"plain muP: log10 optimal eta0, N={n_hi} minus N={n_lo}"
    return Claim(
        id="DT-4",
        statement="Under plain muP (no depth scaling) the loss-optimal learning rate stays the same "
        "across widths.",
        paper_value="muP transfers across width (" + QUAL + ")",
        paper_source=SOURCE + ", abstract",
        statistic=f"per seed: log10 optimal eta0 at width {n_hi} minus at width {n_lo}, plain muP, "
        f"depth {wd}"
        + _setting(cfg),
        rule=_equiv_rule(cfg, "DT-4"),
        measure=lambda r: _transfer(r, a, b, label, margins["DT-4"], foreign),
        source=MUP_WIDTH,
        uses=("width_sweep", "margins"),
        figures=("loss_vs_lr_width", "loss_vs_lr_width_sp"),
        drawn=(("loss_vs_lr_width", "x"),),
        falsifier=_sp_falsifier(runs, cfg, "one", "DT-4"),
    )


def claim_dt5(runs: dict[str, list[Sweep]], cfg: dict) -> Claim:
    """DT-5: without the depth scaling, the optimum moves down as depth grows."""
    by_depth, depths = _by_depth(runs), _depths(cfg)
    lo, hi = depths[0], depths[-1]
    return Claim(
        id="DT-5",
        statement="Without the depth scaling, the optimal learning rate moves down as depth grows.",
        paper_value="direction of the shift (" + QUAL + ")",
        paper_source=SOURCE + ", abstract",
        statistic=f"per seed: log10 optimal eta0 at L={hi} minus at L={lo}, plain muP, width "
        f"{cfg['base_width']}"
        + _setting(cfg),
        rule="CI < 0",
        measure=lambda r: _dt5(r, by_depth, lo, hi),
        source=NO_DEPTH,
        kind="hypothesis",
        reading="the direction: the abstract says only that the optimum does not transfer; ours "
        "follows from the forward signal of unscaled residual branches growing with depth",
        uses=("depths",),
        figures=("optimum_vs_depth",),
    )


def claim_dt6(runs: dict[str, list[Sweep]], cfg: dict) -> Claim:
    """DT-6: with the 1/sqrt(L) branches, the loss at a fixed learning rate settles as depth grows."""
    by_depth, depths = _by_depth(runs), _depths(cfg)
    lo, hi = depths[0], depths[-1]
    return Claim(
        id="DT-6",
        statement="With the 1/sqrt(L) branches, the training loss at a fixed learning rate settles as "
        "depth grows: deeper networks differ less from each other.",
        paper_value="convergence of finite-size dynamics to the joint limit (" + QUAL + ")",
        paper_source=SOURCE + ", abstract",
        statistic=f"per seed, {SQ}: mean over eta0 of |loss(L={depths[1]}) - loss(L={lo})| minus mean "
        f"|loss(L={hi}) - loss(L={depths[-2] if len(depths) > 2 else lo})|, over the eta0 at which "
        "every depth trained in every seed" + _setting(cfg),
        rule="CI > 0",
        measure=lambda r: _dt6(r, by_depth, depths),
        source=LIMIT,
        kind="hypothesis",
        reading="the final training loss after a fixed budget as the observable of the dynamics, and "
        "depths doubling at a finite width as the approach to the limit: the abstract's convergence is "
        "of the DMFT dynamics",
        uses=("depths",),
        not_measurable=_too_few_depths,
        figures=("loss_vs_lr_depth",),
    )


CLAIMS = (claim_dt1, claim_dt2, claim_dt3, claim_dt4, claim_dt5, claim_dt6)


def claims(runs: dict[str, list[Sweep]], cfg: dict) -> list[Claim]:
    """DT-1..DT-6 for the runs of this configuration; results = {"sweeps": load_sweeps(...)}."""
    return [make(runs, cfg) for make in CLAIMS]


# ---------------------------------------------------------------- the declaration

SPEC = Paper(
    RUNS, prefix="dt", arxiv="2309.16620", figures=FIGURES,
    load_results=lambda files: {"sweeps": load_sweeps(files["metrics"])}, claims=claims, cost=cost,
    title="Depthwise Hyperparameter Transfer in Residual Networks: Dynamics and Scaling Limit (Bordelon, "
    "Noci, Li, Hanin, Pehlevan, ICLR 2024)",
    dataset=lambda cfg, figure: cfg.get("dataset") or DATASET,
    departures=(
        Departure("model", "a residual CNN with one 3x3 convolution per residual branch, no normalization "
                  "layers, average pooling after each third of the blocks (models/scaled.py)",
                  "convolutional ResNets and Vision Transformers (their blocks were not available offline)",
                  "the abstract names the architectures but not their blocks; no ViT and no ImageNet here"),
        Departure("data", "CIFAR-10 only", "CIFAR-10 and ImageNet",
                  "ImageNet is not available offline and beyond a CPU budget"),
    ),
    unverified=("base_width", "gamma0", "lrs", "steps", "batch_size", "momentum", "n_train", "n_eval",
                "n_test", "depths", "width_sweep"),
    figure_only=(),
    retrain_free_edit=("margins", {"DT-1": 0.123, "DT-3": 0.1, "DT-4": 0.1}))
