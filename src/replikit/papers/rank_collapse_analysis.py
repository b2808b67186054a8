"""Aggregation, figures and claims for "Signal propagation in transformers" (rank collapse)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from replikit.papers import rank_collapse as rc
from replikit.papers.interface import Figure, Paper
from replikit.papers.rank_collapse import RunSpec, base_d_k, training_model
from replikit.reporting import plotting
from replikit.reporting.plotting import SEED_CI, sns
from replikit.scoring.aggregate import by_seed, endpoint_change, of_run, run_rows, seed_diff
from replikit.scoring.claims import Claim, Falsifier, Part, Source
from replikit.scoring.fidelity import Departure

SOURCE = "arXiv 2206.03126 (NeurIPS 2022)"
QUAL = "qualitative; the paper's numbers were not verified offline"
WHERE = "Noci et al., NeurIPS 2022 (arXiv 2206.03126), abstract"
COLLAPSE = Source(
    quote="Nevertheless, it has been recently shown that stacking self-attention layers - the distinctive "
    "architectural component of Transformers - can result in rank collapse of the tokens' representations "
    "at initialization.",
    where=WHERE,
    background="the sentence reports earlier work ('it has been recently shown', Dong et al., 2021); it is "
    "not a finding of this paper",
)
VANISH = Source(
    quote="First, we show that rank collapse of the tokens' representations hinders training by causing the "
    "gradients of the queries and keys to vanish at initialization.",
    where=WHERE,
)
PREVENT = Source(
    quote="Furthermore, we provide a thorough description of the origin of rank collapse and discuss how to "
    "prevent it via an appropriate depth-dependent scaling of the residual branches.",
    where=WHERE,
)
DISPROPORTIONATE = Source(
    quote="Finally, our analysis unveils that specific architectural hyperparameters affect the gradients of "
    "queries and values differently, leading to disproportionate gradient norms.",
    where=WHERE,
)
LEARNED = 0.5  # an arm learned the task when its final accuracy is at least halfway from the baseline to 1


def load_results(paths: list[str | Path]) -> pd.DataFrame:
    """One row per (run, seed, depth) of an init run and per (run, seed, evaluation) of a training
    run, with the run's kind, layer norm, scaling and d_k; log10 Q/V and K/V gradient ratios."""
    def rows(m: dict) -> list[dict]:
        spec = RunSpec.parse(m["run"])
        base = {"kind": spec.kind, "norm": spec.norm, "alpha": spec.alpha, "architecture": spec.label}
        if spec.kind == "init":
            return [{**base, "d_k": spec.d_k, **{k: v for k, v in it.items() if not isinstance(v, list)}}
                    for it in m["items"]]
        return [{**base, "depth": spec.depth, **h} for h in m["history"]]

    df = run_rows(paths, rows)
    if "grad_q" in df:
        df["log_ratio_q"] = np.log10(df["grad_q"] / df["grad_v"])
        df["log_ratio_k"] = np.log10(df["grad_k"] / df["grad_v"])
    return df


def at_largest(df: pd.DataFrame, run: str, column: str) -> dict[int, float]:
    return {s: v[max(v)] for s, v in by_seed(df, run, "depth", column, int).items()}


def dk_slopes(df: pd.DataFrame, runs: list[RunSpec], column: str = "log_ratio_q") -> pd.DataFrame:
    """Per seed and depth: the least-squares slope of `column` against log10 d_k over the runs."""
    d = pd.concat([of_run(df, r.name) for r in runs])
    d = d.assign(log_dk=np.log10(d["d_k"].astype(float)))
    return (d.groupby(["seed", "depth"])
            .apply(lambda g: float(np.polyfit(g["log_dk"], g[column], 1)[0]), include_groups=False)
            .rename("slope").reset_index())


def mean_dk_slope(df: pd.DataFrame, runs: list[RunSpec]) -> dict[int, float]:
    """Per seed: the d_k slope of log10(|grad W_Q| / |grad W_V|), averaged over the depths."""
    s = dk_slopes(df, runs)
    return {int(k): float(v) for k, v in s.groupby("seed")["slope"].mean().items()}


def curve_summary(df: pd.DataFrame, run: str, column: str = "eval_loss",
                  how: str = "mean") -> dict[int, float]:
    """Per seed, over a training run's evaluations after step 0: the mean (area under the curve
    divided by its length) or the last value of `column`."""
    d = of_run(df, run)
    d = d[d["step"] > 0].sort_values("step")
    agg = d.groupby("seed")[column].mean() if how == "mean" else d.groupby("seed")[column].last()
    return {int(k): float(v) for k, v in agg.items()}


def baseline_accuracy(data: dict) -> float:
    """Token accuracy of always predicting the most frequent token: the plateau before any attention
    is learned (p(0) of the Zipf law)."""
    p = np.arange(1, data["vocab_size"] + 1, dtype=float) ** -float(data["zipf_exponent"])
    return float(p[0] / p.sum())


# ---------------------------------------------------------------- figures


def _init_rows(df: pd.DataFrame, specs: list[RunSpec]) -> pd.DataFrame:
    return df[df["run"].isin([s.name for s in specs])].copy()


# Every architecture the paper's runs can have, in an order fixed by what they are (rc.NORMS: post-LN,
# pre-LN, no LN; alpha=1 before alpha=1/sqrt(L)): each keeps its colour in every figure, whichever of
# them a figure (or a configuration) draws.
ARCHITECTURES = tuple(RunSpec("init", n, s, d_k=1).label for n in rc.NORMS for s in rc.SCALINGS)


def _arms(specs: list[RunSpec]) -> tuple[list[str], dict]:
    """The architectures drawn, in the order of ARCHITECTURES, and one colour each, the same in every
    figure (also in gradient_ratio_vs_dk, which draws one architecture)."""
    drawn = {s.label for s in specs}
    colours = plotting.colour_map([*ARCHITECTURES, *sorted(drawn - set(ARCHITECTURES))])
    return [a for a in colours if a in drawn], colours


def _log2_depth_axis(ax, depths) -> None:
    ax.set_xscale("log", base=2)
    ax.set_xticks(sorted(depths), [str(int(d)) for d in sorted(depths)])


def figure_similarity_vs_depth(df: pd.DataFrame, specs: list[RunSpec], out: Path, scale: str,
                               subset: bool = False) -> pd.DataFrame:
    d = _init_rows(df, specs)
    order, colours = _arms(specs)
    fig, axes = plotting.new_figure(2, width=4.8)
    for ax, col, lab in zip(axes[0], ("similarity", "stable_rank"),
                            ("mean cosine similarity between tokens", "stable rank ||X||_F^2 / ||X||_2^2"),
                            strict=True):
        sns.lineplot(d, x="depth", y=col, hue="architecture", hue_order=order, palette=colours,
                     errorbar=SEED_CI, marker="o", ax=ax, legend=col == "similarity")
        ax.set(xlabel="depth L", ylabel=lab)
        _log2_depth_axis(ax, d["depth"].unique())
    axes[0, 0].set_ylim(-0.05, 1.05)
    plotting.save(fig, out, f"Rank collapse at initialization: last-layer tokens (d_k={specs[0].d_k})",
                  scale, subset)
    return d


def figure_gradients_vs_depth(df: pd.DataFrame, specs: list[RunSpec], out: Path, scale: str,
                              subset: bool = False) -> pd.DataFrame:
    d = _init_rows(df, specs)
    order, colours = _arms(specs)
    fig, axes = plotting.new_figure(4, width=3.9)
    panels = (("grad_q", "|grad W_Q| (mean over layers)"), ("grad_k", "|grad W_K| (mean over layers)"),
              ("grad_v", "|grad W_V| (mean over layers)"), ("log_ratio_q", "log10 |grad W_Q| / |grad W_V|"))
    for ax, (col, lab) in zip(axes[0], panels, strict=True):
        sns.lineplot(d, x="depth", y=col, hue="architecture", hue_order=order, palette=colours,
                     errorbar=SEED_CI, marker="o", ax=ax, legend=col == "grad_q")
        ax.set(xlabel="depth L", ylabel=lab)
        if col != "log_ratio_q":
            ax.set_yscale("log")
        _log2_depth_axis(ax, d["depth"].unique())
    axes[0, 3].axhline(0, ls="--", c="black", lw=0.8)
    plotting.save(fig, out, "Gradients of queries, keys and values at initialization", scale, subset)
    return d


def figure_gradient_ratio_vs_dk(df: pd.DataFrame, specs: list[RunSpec], out: Path, scale: str,
                                subset: bool = False) -> pd.DataFrame:
    """Left: one line per depth (an ordered hue); right: the slopes' mean in the architecture's colour of
    the sibling figures. Legends below their panels, where they hide no point."""
    d = _init_rows(df, specs)
    d["depth L"] = d["depth"].astype(int).astype(str)
    slopes = dk_slopes(df, specs)
    _, colours = _arms(specs)
    arm = specs[0].label
    fig, axes = plotting.new_figure(2, width=4.8, height=4.2)
    left, right = axes[0]
    sns.lineplot(d, x="d_k", y="log_ratio_q", hue="depth L", errorbar=SEED_CI, marker="o", ax=left,
                 **plotting.hue_args(d["depth L"], ordered=True))
    left.set(xscale="log", xlabel="d_k (query/key dimension per head)",
             ylabel="log10 |grad W_Q| / |grad W_V|")
    left.set_xticks(sorted(d["d_k"].unique()), [str(int(k)) for k in sorted(d["d_k"].unique())])
    sns.move_legend(left, "upper center", bbox_to_anchor=(0.5, -0.2), ncol=len(d["depth L"].unique()),
                    fontsize=7, title="depth L", title_fontsize=7, frameon=False)
    sns.pointplot(slopes, x="depth", y="slope", errorbar=SEED_CI, ax=right, native_scale=True,
                  log_scale=(2, False), color=colours[arm], label=f"mean and 90% t-interval ({arm})")
    sns.stripplot(slopes, x="depth", y="slope", ax=right, native_scale=True, color="grey", alpha=0.5,
                  label="seeds")
    right.axhline(0, ls="--", c="black", lw=0.8)
    right.set(xlabel="depth L", ylabel="slope of log10 ratio\nagainst log10 d_k (per seed)")
    _log2_depth_axis(right, slopes["depth"].unique())
    handles, labels = right.get_legend_handles_labels()
    keep = dict(zip(labels, handles, strict=True))  # stripplot keys each depth: one "seeds" key
    right.legend(keep.values(), keep.keys(), loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2,
                 fontsize=7, frameon=False)
    plotting.save(fig, out, f"Query/value gradient ratio against d_k ({arm})", scale, subset)
    return d.merge(slopes, on=["seed", "depth"])


def figure_training_loss(df: pd.DataFrame, specs: list[RunSpec], out: Path, scale: str,
                         subset: bool = False, cfg: dict | None = None) -> pd.DataFrame:
    """Loss and accuracy of each training pair: RC-5's depth (left two panels), then its falsifier's
    shallower one (right two), each architecture in its colour of the sibling figures."""
    d = df[df["run"].isin([s.name for s in specs])].copy()
    order, colours = _arms(specs)
    depths = sorted({s.depth for s in specs}, reverse=True)
    fig, axes = plotting.new_figure(2 * len(depths), width=4.2)
    bar = None
    if cfg is not None:  # RC-5's reference lines: the plateau and the "learned" bar
        base = baseline_accuracy(training_model(cfg)[1])
        bar = base + LEARNED * (1 - base)
    for i, depth in enumerate(depths):
        role = "RC-5" if i == 0 else "RC-5's falsifier"
        at = d[d["depth"] == depth]
        for ax, col, lab in zip(axes[0, 2 * i:2 * i + 2], ("eval_loss", "eval_accuracy"),
                                ("held-out cross-entropy", "held-out token accuracy"), strict=True):
            sns.lineplot(at, x="step", y=col, hue="architecture", hue_order=order, palette=colours,
                         errorbar=SEED_CI, ax=ax, legend=i == 0 and col == "eval_loss")
            ax.set(xlabel="optimizer step", ylabel=lab, title=f"L={depth} ({role})")
        if bar is not None:
            acc = axes[0, 2 * i + 1]
            acc.axhline(base, c="grey", ls=":", lw=1, label=f"most-frequent token ({base:.2f})")
            plotting.claim_line(acc, "RC-5", bar, f"'learned' bar ({bar:.2f})")
            acc.legend(fontsize=7)
    plotting.save(fig, out, "Training on sequence reversal: " + " and ".join(f"L={x}" for x in depths),
                  scale, subset)
    return d


FIGURES = (
    Figure("similarity_vs_depth", "Token representations at initialization against depth: mean cosine "
           "similarity between the tokens of a sequence (left) and stable rank of the sequence's "
           "representation (right) after the last block, for standard residuals (alpha=1) and the paper's "
           "depth scaling (alpha=1/sqrt(L)). One fresh network per depth, synthetic Zipf-distributed token "
           "sequences. Bands: 90% t-interval over seeds.", figure_similarity_vs_depth, "rows"),
    Figure("gradients_vs_depth", "Frobenius norms of the loss gradients of the queries, keys and values "
           "weights at initialization (mean over layers) and the log10 query/value ratio, against depth; "
           "loss: cross-entropy of the sequence-reversal task. Bands: 90% t-interval over seeds.",
           figure_gradients_vs_depth, "rows"),
    Figure("gradient_ratio_vs_dk", "log10 of the query/value gradient-norm ratio at initialization against "
           "the per-head query/key dimension d_k (values keep width/heads dimensions), one line per depth "
           "(left), and per seed the least-squares slope against log10 d_k at each depth (right; grey: "
           "seeds, point and bar: mean and 90% t-interval).", figure_gradient_ratio_vs_dk, "rows"),
    Figure("training_loss", "Held-out cross-entropy and token accuracy while training the same network with "
           "standard and depth-scaled residuals on sequence reversal (Adam, linear warm-up): at RC-5's depth "
           "(left two panels) and at its falsifier's shallower depth (right two). Bands: 90% t-interval over "
           "seeds. Accuracy panels: the most-frequent-token accuracy (the plateau before any attention is "
           "learned) and RC-5's 'learned' bar, halfway from it to 1.", figure_training_loss,
           "rows", takes_config=True),
)


# ---------------------------------------------------------------- claims


# RC-3 holds by construction (issue 63): why no setting could flip it.
SMALLER_BRANCHES_STAY_APART = (
    "holds by construction at initialization, at every depth above 1 (at L = 1 the arms are one "
    "network): scaling each residual branch by 1/sqrt(L) < 1 keeps every token nearer its own embedding "
    "than alpha = 1 does, so wherever alpha = 1's attention has averaged the tokens the similarity "
    "difference is negative; the gradient half follows from it through RC-2's caveat (the value gradient "
    "carries the tokens' mean), an empirical link at these settings rather than a theorem. The one "
    "setting tried to flip it, the shallowest depth, has already collapsed at alpha = 1 (the smoke run's "
    "similarity_vs_depth table). What the sentence adds, that the scaling prevents collapse and keeps the "
    "query/key gradients from vanishing, is measured by RC-1's falsifier (a background row) and RC-2's "
    "falsifier (a paper row): their statistics under alpha = 1/sqrt(L)")


SCALING = "alpha=1/sqrt(L) instead of alpha=1"  # the same init runs' depth-scaled arm
NO_COLLAPSE_WHY = (
    "the paper prevents rank collapse by 'an appropriate depth-dependent scaling of the "
    "residual branches' (abstract; its Fig. 1: unless adequate residual scaling is used, increasing "
    "depth leads to an increase in the tokens' alignment at initialization)")
RC2_READING = ("'far below' is tested as a log ratio below 0, only its sign: no margin for 'far' was "
               "fixed before the runs")
RC2_CAVEAT = (
    "Q/V < 1 holds at any depth once tokens are correlated (the value gradient carries the "
    "tokens' mean, which grows with n times their correlation), so the depth change is the part "
    "that speaks to collapse")
RC4_READING = ("that d_k is such a hyperparameter, and the direction (larger d_k, relatively smaller "
               "query gradients): the abstract names neither")
RC4_CAVEAT = (
    "at the 1/sqrt(fan-in) initialization used here a leading-order (uniform-attention) "
    "calculation predicts no d_k dependence: the d_k key coordinates that add up in the query "
    "gradient cancel the 1/d_k of the squared 1/sqrt(d_k) temperature; d_v is held fixed")


def _init_arms(runs: dict[str, list[RunSpec]], cfg: dict) -> tuple[RunSpec, RunSpec]:
    """The init runs of the configured layer norm: alpha=1 (plain) and alpha=1/sqrt(L) (scaled)."""
    by_alpha = {s.alpha: s for s in runs["similarity_vs_depth"] if s.norm == cfg["norm"]}
    return by_alpha["1"], by_alpha["1/sqrt(L)"]


def _training_pairs(runs: dict[str, list[RunSpec]],
                    cfg: dict) -> tuple[dict[str, RunSpec], dict[str, RunSpec]]:
    """RC-5's training pair by alpha, and its falsifier's (at training.falsifier_depth)."""
    tc = cfg["training"]
    train, shallow = ({s.alpha: s for s in runs["training_loss"] if s.depth == tc[key]}
                      for key in ("depth", "falsifier_depth"))
    return train, shallow


def _sweep(runs: dict[str, list[RunSpec]]) -> list[RunSpec]:
    """RC-4's d_k sweep, by d_k."""
    return sorted(runs["gradient_ratio_vs_dk"], key=lambda s: s.d_k)


def _depth_range(cfg: dict) -> tuple[int, int]:
    """The shallowest and deepest of init.depths."""
    depths = sorted(int(x) for x in cfg["init"]["depths"])
    return depths[0], depths[-1]


def _arch(runs: dict[str, list[RunSpec]], cfg: dict) -> str:
    """The layer norm of the init runs, in words."""
    plain = _init_arms(runs, cfg)[0]
    return f"{plain.norm}-LN" if plain.norm != "none" else "no LN"


def _where(runs: dict[str, list[RunSpec]], cfg: dict) -> str:
    """The init runs' setting, appended to the statistics of RC-1 to RC-4."""
    lo, hi = _depth_range(cfg)
    return (f"; setting: {_arch(runs, cfg)}, width {cfg['model']['width']}, {cfg['model']['heads']} head(s), "
            f"d_k={base_d_k(cfg)}, depths {lo}..{hi}, synthetic Zipf token sequences")


def _learned_bar(cfg: dict) -> float:
    """RC-5's 'learned' bar: halfway (LEARNED) from the most-frequent-token accuracy to 1."""
    train_data = training_model(cfg)[1]  # the training run's own, if it has them
    return baseline_accuracy(train_data) + LEARNED * (1 - baseline_accuracy(train_data))


def _train_where(runs: dict[str, list[RunSpec]], cfg: dict) -> str:
    """The training run's setting, appended to RC-5's statistic."""
    train_model, train_data = training_model(cfg)  # the training run's own, if it has them
    return (f"; setting: {_arch(runs, cfg)}, width {train_model['width']}, {train_model['heads']} head(s), "
            f"d_k={base_d_k({'model': train_model})}, vocabulary {train_data['vocab_size']}, "
            f"{train_data['seq_len']} tokens, synthetic Zipf token sequences")


def _collapse(r: dict, arm: RunSpec, lo: int, hi: int) -> list[Part]:
    """RC-1's parts on one init run: alpha=1 for the claim, alpha=1/sqrt(L) for its falsifier."""
    df = r["rows"]
    return [Part(f"{arm.label}: token cosine similarity at L={hi} minus at L={lo}",
                 endpoint_change(df, arm.name, "depth", "similarity", int), 0.0),
            Part(f"{arm.label}: stable rank at L={lo} minus at L={hi}",
                 {s: -v for s, v in endpoint_change(df, arm.name, "depth", "stable_rank",
                                                    int).items()}, 0.0)]


def _vanishing(r: dict, arm: RunSpec, lo: int, hi: int) -> list[Part]:
    """RC-2's parts on one init run: alpha=1 for the claim, alpha=1/sqrt(L) for its falsifier."""
    df = r["rows"]
    return [Part(f"{arm.label}, L={hi}: log10 |grad W_Q| / |grad W_V|",
                 at_largest(df, arm.name, "log_ratio_q"), 0.0, "below"),
            Part(f"{arm.label}, L={hi}: log10 |grad W_K| / |grad W_V|",
                 at_largest(df, arm.name, "log_ratio_k"), 0.0, "below"),
            Part(f"{arm.label}: log10 |grad W_Q| / |grad W_V| at L={hi} minus at L={lo}",
                 endpoint_change(df, arm.name, "depth", "log_ratio_q", int), 0.0, "below")]


def _scaling_helps(r: dict, plain: RunSpec, scaled: RunSpec, hi: int) -> list[Part]:
    """RC-3's parts: at the deepest init run, alpha=1/sqrt(L) minus alpha=1."""
    df = r["rows"]
    return [Part(f"L={hi}: token cosine similarity, alpha=1/sqrt(L) minus alpha=1",
                 seed_diff(at_largest(df, scaled.name, "similarity"),
                           at_largest(df, plain.name, "similarity")),
                 0.0, "below"),
            Part(f"L={hi}: log10 |grad W_Q| / |grad W_V|, alpha=1/sqrt(L) minus alpha=1",
                 seed_diff(at_largest(df, scaled.name, "log_ratio_q"),
                           at_largest(df, plain.name, "log_ratio_q")), 0.0)]


def _dk_slope(r: dict, sweep: list[RunSpec], lo: int, hi: int) -> list[Part]:
    """RC-4's part: the d_k slope of the query/value gradient ratio, mean over depths."""
    return [Part(f"{sweep[0].label}: slope of log10 |grad W_Q| / |grad W_V| against log10 d_k "
                 f"(d_k {sweep[0].d_k}..{sweep[-1].d_k}), mean over depths {lo}..{hi}",
                 mean_dk_slope(r["rows"], sweep), 0.0, "below")]


def _trains_worse(r: dict, pair: dict[str, RunSpec], bar: float) -> list[Part]:
    """RC-5's part on one training pair: the claim's depth, or its falsifier's shallower one."""
    df = r["rows"]
    a, b = pair["1"].name, pair["1/sqrt(L)"].name
    part = Part(f"L={pair['1'].depth}: mean held-out loss over training, alpha=1 minus alpha=1/sqrt(L)",
                seed_diff(curve_summary(df, a), curve_summary(df, b)), 0.0)
    acc = [curve_summary(df, n, "eval_accuracy", "last") for n in (a, b)]
    if all(max(acc[0][s], acc[1][s]) < bar for s in part.per_seed):
        part.no_evidence = (f"neither arm learned the task in any seed (final held-out accuracy below "
                            f"{bar:.2f}, halfway from the most-frequent-token baseline to 1): the "
                            "difference is between two plateaus, not between training speeds")
    return [part]


def claim_rc1(runs: dict[str, list[RunSpec]], cfg: dict) -> Claim:
    """RC-1: without depth-scaled residuals the tokens align with depth; falsifier: the scaled arm."""
    plain, scaled = _init_arms(runs, cfg)
    lo, hi = _depth_range(cfg)
    return Claim(
        id="RC-1",
        statement="Without depth-scaled residuals, the tokens' representations at initialization align "
        "(towards rank collapse) as depth grows.",
        paper_value="cosine similarity between tokens grows with depth at init unless residuals are "
        "scaled ("
        + QUAL
        + ")",
        paper_source=SOURCE + ", Sec. 1 (Fig. 1) and Sec. 4",
        statistic=f"per seed, alpha=1: last-layer token cosine similarity at L={hi} minus at L={lo}, "
        f"and stable rank at L={lo} minus at L={hi}" + _where(runs, cfg),
        rule="both CIs > 0",
        measure=lambda r: _collapse(r, plain, lo, hi),
        source=COLLAPSE,
        uses=("init",),
        figures=("similarity_vs_depth",),
        falsifier=Falsifier(  # no_collapse
            setting=SCALING,
            why=NO_COLLAPSE_WHY,
            measure=lambda r: _collapse(r, scaled, lo, hi),
        ),
    )


def claim_rc2(runs: dict[str, list[RunSpec]], cfg: dict) -> Claim:
    """RC-2: query/key gradients far below the values' and shrinking with depth; falsifier: scaled."""
    plain, scaled = _init_arms(runs, cfg)
    lo, hi = _depth_range(cfg)
    return Claim(
        id="RC-2",
        statement="In the collapsing architecture the gradients of queries and keys at initialization "
        "are far below those of the values, and shrink relative to them with depth.",
        paper_value="query/key gradients vanish under rank collapse (" + QUAL + ")",
        paper_source=SOURCE + ", Sec. 3",
        statistic="per seed, alpha=1: log10 ratio of the layer-averaged gradient norms of W_Q (and "
        f"W_K) to W_V at L={hi}, and its change from L={lo} to L={hi}" + _where(runs, cfg),
        rule="all three CIs < 0",
        measure=lambda r: _vanishing(r, plain, lo, hi),
        source=VANISH,
        uses=("init",),
        reading=RC2_READING,
        caveat=RC2_CAVEAT,
        figures=("gradients_vs_depth",),
        falsifier=Falsifier(  # no_vanishing
            setting=SCALING,
            why="the paper ties the vanishing query/key gradients to rank collapse, which the 1/sqrt(L) "
            "scaling prevents, so their ratio to the values' should not fall with depth; the first two parts "
            f"(Q/V, K/V < 1 at L={hi}) hold at any depth (the row's caveat): only the depth change can flip",
            measure=lambda r: _vanishing(r, scaled, lo, hi),
        ),
    )


def claim_rc3(runs: dict[str, list[RunSpec]], cfg: dict) -> Claim:
    """RC-3: 1/sqrt(L) residual scaling prevents collapse and vanishing; holds by construction."""
    plain, scaled = _init_arms(runs, cfg)
    hi = _depth_range(cfg)[1]
    return Claim(
        id="RC-3",
        statement="Scaling the residual branches by 1/sqrt(L) prevents rank collapse and keeps the "
        "query/key gradients from vanishing.",
        paper_value="no collapse and no vanishing query/key gradients with alpha=1/sqrt(L) ("
        + QUAL
        + ")",
        paper_source=SOURCE + ", Sec. 4",
        statistic=f"per seed at L={hi}, same initial weights and data: token similarity with "
        f"alpha=1/sqrt(L) "
        "minus with alpha=1, and the same difference of log10 |grad W_Q| / |grad W_V|" + _where(runs, cfg),
        rule="similarity difference CI < 0 and gradient-ratio difference CI > 0",
        measure=lambda r: _scaling_helps(r, plain, scaled, hi),
        source=PREVENT,
        uses=("init",),
        figures=("similarity_vs_depth", "gradients_vs_depth"),
        check=SMALLER_BRANCHES_STAY_APART,
    )


def claim_rc4(runs: dict[str, list[RunSpec]], cfg: dict) -> Claim:
    """RC-4 (a hypothesis): with larger d_k the queries get relatively smaller gradients than the values."""
    sweep = _sweep(runs)
    lo, hi = _depth_range(cfg)
    return Claim(
        id="RC-4",
        statement="The query/value gradient ratio depends on the key dimension d_k: with larger d_k the "
        "queries get relatively smaller gradients than the values.",
        paper_value="architectural hyperparameters such as d_k affect query and value gradients "
        "disproportionately (" + QUAL + "; the direction tested here is our reading, not checked "
        "against the theorem)",
        paper_source=SOURCE + ", Sec. 3 (abstract: 'disproportionate gradient norms')",
        statistic="per seed: least-squares slope of log10 |grad W_Q| / |grad W_V| against log10 d_k "
        f"over d_k in "
        f"{[s.d_k for s in sweep]}, averaged over depths {lo}..{hi}, {sweep[0].label}" + _where(runs, cfg),
        rule="CI < 0",
        measure=lambda r: _dk_slope(r, sweep, lo, hi),
        source=DISPROPORTIONATE,
        kind="hypothesis",
        reading=RC4_READING,
        uses=("init", "dk_sweep"),
        caveat=RC4_CAVEAT,
        figures=("gradient_ratio_vs_dk",),
    )


def claim_rc5(runs: dict[str, list[RunSpec]], cfg: dict) -> Claim:
    """RC-5: the collapsing architecture trains worse; falsifier: the same pair at a shallower depth."""
    tc = cfg["training"]
    train, shallow = _training_pairs(runs, cfg)  # RC-5's pair, and its falsifier's
    bar = _learned_bar(cfg)
    shallow_depth = shallow["1"].depth
    return Claim(
        id="RC-5",
        statement="In a short training run, the collapsing architecture trains worse than the same "
        "network with depth-scaled residuals.",
        paper_value="rank collapse at init hinders training; scaled residuals train (" + QUAL + ")",
        paper_source=SOURCE + ", Sec. 1 (Fig. 1) and Sec. 4",
        statistic=f"per seed: mean held-out cross-entropy over the evaluations of {tc['steps']} steps "
        f"({tc['optimizer']}, lr {tc['lr']}), alpha=1 minus alpha=1/sqrt(L), "
        f"L={train['1'].depth}, same initial weights and data; task: sequence reversal"
        + _train_where(runs, cfg),
        rule=f"CI > 0; no evidence when neither arm reaches {bar:.2f} held-out accuracy in any seed",
        measure=lambda r: _trains_worse(r, train, bar),
        source=VANISH,
        uses=("training",),
        figures=("training_loss",),
        drawn=(("training_loss", "y"),),
        falsifier=Falsifier(  # no_collapse_yet
            origin="our construction",  # a setting we chose: the paper draws no such contrast
            setting=f"the same training pair at depth L={shallow_depth} instead of L={train['1'].depth}",
            why="the paper blames the slower training on rank collapse at initialization, which grows with "
            "depth (its Fig. 1: unless the residuals are scaled, the tokens' alignment increases with depth; "
            f"RC-1's init runs measure it); at L={shallow_depth} alpha=1 has barely collapsed, so it should "
            "train no worse than alpha=1/sqrt(L)",
            measure=lambda r: _trains_worse(r, shallow, bar),
        ),
    )


CLAIMS = (claim_rc1, claim_rc2, claim_rc3, claim_rc4, claim_rc5)


def claims(runs: dict[str, list[RunSpec]], cfg: dict) -> list[Claim]:
    """RC-1..RC-5 for the run names of this configuration; results = {"rows": load_results(...)}."""
    return [make(runs, cfg) for make in CLAIMS]


# ---------------------------------------------------------------- the paper's declaration

# ---------------------------------------------------------------- cost (the plan)


def cost(cfg: dict, run: str):
    """The plan's cost model of one job (`replikit.plan.bill`): an init run is one forward and backward (no
    optimizer) per batch, n_batches per depth of init.depths; a training run `training.steps` steps."""
    import torch
    import torch.nn.functional as F

    from replikit.core.training import make_optimizer
    from replikit.methods.step_cost import Builder, JobPlan, Piece, Setup, fake_module
    from replikit.papers.rank_collapse import RunSpec, base_d_k, build_model, run_config, task_loss

    spec = RunSpec.parse(run)
    cfg = run_config(cfg, spec)  # the run's own model and data (a training run may override them)
    T = cfg["data"]["seq_len"]

    def model_of(depth: int, d_k: int):
        return fake_module(lambda: build_model(cfg, spec, depth, d_k, 0, "plan", torch.device("cpu")))

    if spec.kind == "init":
        ic = cfg["init"]

        def init_setup(depth: int) -> Builder:
            def setup() -> Setup:
                """rank_collapse.measure_at_init: hidden states, head, cross-entropy, backward."""
                model = model_of(depth, spec.d_k)
                batches = torch.zeros(ic["n_batches"], ic["batch_size"], T, dtype=torch.long)

                def loss() -> torch.Tensor:
                    x = batches[0]
                    hs = model.hidden_states(x)
                    logits = model.head(model.ln_f(hs[-1]))
                    return F.cross_entropy(logits.flatten(0, 1), x.flip(1).flatten())

                return Setup(model, loss, None, [batches])
            return setup

        pieces = [Piece(("rc-init", str(cfg["model"]), str(cfg["data"]), spec.norm, spec.d_k, int(d),
                         ic["batch_size"], ic["n_batches"]), init_setup(int(d)), ic["n_batches"])
                  for d in sorted(ic["depths"])]
        return JobPlan(pieces, f"{len(pieces)} depths x n_batches {ic['n_batches']} (no optimizer)",
                       "rank_collapse.init.batch_size")
    tc = cfg["training"]
    d_k = base_d_k(cfg)

    def train_setup() -> Setup:
        """rank_collapse.run_train: task_loss on a fresh batch, the configured optimizer."""
        model = model_of(spec.depth, d_k)
        opt = make_optimizer(tc["optimizer"], model.parameters(), tc["lr"])
        train_x = torch.zeros(tc["steps"], tc["batch_size"], T, dtype=torch.long)
        eval_x = torch.zeros(tc["eval_batches"] * tc["batch_size"], T, dtype=torch.long)
        return Setup(model, lambda: task_loss(model, train_x[0])[0], opt, [train_x, eval_x])

    key = ("rc-train", str(cfg["model"]), str(cfg["data"]), spec.norm, spec.depth, tc["batch_size"],
           tc["steps"], tc["optimizer"])
    return JobPlan([Piece(key, train_setup, tc["steps"])], f"training.steps {tc['steps']}",
                   "rank_collapse.training.batch_size")


SPEC = Paper(
    rc.RUNS, cost=cost, prefix="rc", arxiv="2206.03126", figures=FIGURES, claims=claims,
    load_results=lambda files: {"rows": load_results(files["metrics"])},
    title="Signal propagation in transformers: theoretical perspectives and the role of rank collapse "
    "(Noci, Anagnostidis, Biggio et al., NeurIPS 2022)",
    departures=(Departure(
        "data", "synthetic Zipf-distributed token sequences generated from the seed; sequence reversal for "
        "the training run", "IWSLT'14 German-English translation (as we believe)",
        "no dataset download offline; the paper's data and task were not checked against its text"),),
    unverified=("model", "init", "dk_sweep", "training"),
    figure_only=("extra_norms",),
    retrain_free_edit=("dk_sweep", {"d_ks": [8, 64]}))
