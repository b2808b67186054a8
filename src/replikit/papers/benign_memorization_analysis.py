"""Aggregation, figures and claims for the benign-memorization replication."""

from __future__ import annotations

import dataclasses
from functools import partial
from pathlib import Path
from typing import NamedTuple

import pandas as pd

from replikit.papers import benign_memorization as bm
from replikit.papers.benign_memorization import RunSpec
from replikit.papers.interface import Figure, Paper
from replikit.reporting import plotting
from replikit.reporting.plotting import SEED_CI, sns
from replikit.scoring.aggregate import cross_fit_choice, final_rows, per_seed, run_rows
from replikit.scoring.aggregate import seed_diff as diff
from replikit.scoring.claims import Claim, Falsifier, Part, Source, cross_fitted

MEMORIZED = 0.9  # training accuracy on random labels that counts as "memorized"
# BM-6: the largest relative probe drop at the best encoder stage that counts as "largely unaffected".
# Rule: "largely" read as "loses less than a tenth"; a reading of the word, from no data. Set on
# 2026-11-25 (issue 30), after earlier BM-6 numbers (a different statistic: output minus first stage)
# had been seen, so BM-6's row says so (its caveat) and its default headline comes from fresh seeds.
BM6_UNAFFECTED = 0.10
SOURCE = "arXiv 2210.14019 (ICLR 2023)"
QUAL = "qualitative; exact value not verified offline (paper body unavailable here)"
WHERE = "Anagnostidis et al., ICLR 2023 (arXiv 2210.14019), abstract"
BENIGN = Source(
    quote="While such a memorization capacity seems worrisome, in this work we show that under training "
    "protocols "
    "that include \\textit{data augmentation}, neural networks learn to memorize entirely random labels in a "
    "benign way, i.e. they learn embeddings that lead to highly non-trivial performance under nearest "
    "neighbour probing.",
    where=WHERE,
)
LAYERS = Source(
    quote="As a result, only the very last layers are used for memorization, while preceding layers encode "
    "performant features which remain largely unaffected by the label noise.",
    where=WHERE,
)
DIVERSITY = Source(
    quote="We explore the intricate role of the augmentations used for training and identify a "
    "memorization-generalization trade-off in terms of their diversity, marking a clear distinction to "
    "all previous works.",
    where=WHERE,
)
CAPACITY = Source(
    quote="Finally, we give a first explanation for the emergence of benign memorization by showing that "
    "\\textit{malign} memorization under data augmentation is infeasible due to the insufficient capacity "
    "of the model for the increased sample size.",
    where=WHERE,
)


def label(spec: RunSpec) -> str:
    """Human-readable condition name for legends."""
    noise = f"{round(spec.noise * 100)}% random labels"
    augm = "no aug" if spec.augmentation == "none" else f"{spec.augmentation} aug"
    return f"{noise}, {augm}"


def k_label(spec: RunSpec) -> str:
    return "unlimited" if spec.n_augs is None else str(spec.n_augs)


def load_histories(paths: list[str | Path]) -> pd.DataFrame:
    """One row per (run, seed, evaluation epoch)."""
    return run_rows(paths, lambda m: m["history"])


def load_layers(paths: list[str | Path]) -> pd.DataFrame:
    """One row per (run, seed, stage) with trained/untrained probe and random-label agreement."""
    return run_rows(paths, lambda m: ({"stage": stage, "depth": i, "probe_acc": m["probe_acc"][stage],
                                       "untrained_probe_acc": m["untrained_probe_acc"][stage],
                                       "random_label_knn": m["random_label_knn"][stage]}
                                      for i, stage in enumerate(m["stages"])))


# ---------------------------------------------------------------- figures

UNTRAINED = "untrained network"


def _meaning(spec: RunSpec) -> tuple:
    """The order of conditions by what they are (label noise, then no augmentation before any, then K),
    never by the order of runs or specs."""
    return (spec.noise, spec.augmentation != "none", spec.augmentation,
            float("inf") if spec.n_augs is None else spec.n_augs, spec.label_per_view)


def condition_colours(specs: list[RunSpec]) -> dict:
    """One colour per condition, bound by its meaning (`_meaning`); the untrained network in grey."""
    colours = plotting.colour_map(label(s) for s in sorted(specs, key=_meaning))
    return {**colours, UNTRAINED: (0.5, 0.5, 0.5)}


def paper_colours(specs: list[RunSpec], cfg: dict | None) -> dict:
    """`condition_colours` of the conditions probe_vs_epoch draws (from the paper's config block), then
    any further condition of `specs`: a figure of other runs (the K runs of augmentation_diversity and
    capacity) draws each condition in the colour it has in probe_vs_epoch and probe_per_layer."""
    key = sorted(bm.experiment_runs(cfg)["probe_vs_epoch"], key=_meaning) if cfg else []
    colours = plotting.colour_map([*(label(s) for s in key),
                                   *(label(s) for s in sorted(specs, key=_meaning))])
    return {**colours, UNTRAINED: (0.5, 0.5, 0.5)}


SCORED_ON = ("training views", "clean images")  # augmentation_diversity: by line style and marker


def _keys(ax, colours: dict, conditions: list[str], styles: dict | None = None, **legend) -> None:
    """A legend of the conditions drawn (in their colours) and, where given, of what the line styles
    and markers encode (neutral grey keys)."""
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=colours[c], marker="o", label=c) for c in conditions]
    handles += [Line2D([], [], color="0.35", ls=st["ls"], marker=st["marker"], label=f"scored on {lv}")
                for lv, st in (styles or {}).items()]
    ax.legend(handles=[*handles, *ax.get_legend_handles_labels()[0]], fontsize=7, **legend)


def figure_probe_vs_epoch(hist: pd.DataFrame, specs: list[RunSpec], out: Path, scale: str,
                          subset: bool) -> pd.DataFrame:
    names = {s.name: label(s) for s in specs}
    df = hist[hist["run"].isin(names)].assign(condition=lambda d: d["run"].map(names))
    colours = condition_colours(specs)
    hue = {"hue_order": [c for c in colours if c in set(df["condition"])], "palette": colours}
    fig, axes = plotting.new_figure(2)
    untrained = df[df["epoch"] == 0]["probe_acc"].mean()
    sns.lineplot(df, x="epoch", y="probe_acc", hue="condition", errorbar=SEED_CI, marker="o",
                 ax=axes[0, 0], **hue)
    axes[0, 0].axhline(untrained, ls="--", c=colours[UNTRAINED], label=UNTRAINED)
    axes[0, 0].set(ylabel="k-NN probe test accuracy", title="probe")
    axes[0, 0].legend(fontsize=7)
    sns.lineplot(df, x="epoch", y="train_acc_clean", hue="condition", errorbar=SEED_CI,
                 marker="o", ax=axes[0, 1], legend=False, **hue)
    plotting.claim_line(axes[0, 1], "BM-1", MEMORIZED,
                        f"'memorized' bar ({MEMORIZED:.0%}, 100% random labels)", ls=":")
    axes[0, 1].set(ylabel="train accuracy on its labels", title="memorization", ylim=(0, 1.02))
    axes[0, 1].legend(fontsize=7, loc="lower right")
    noise = " and ".join(f"{round(n * 100)}%" for n in sorted({s.noise for s in specs}))
    plotting.save(fig, out, f"Benign memorization: probe and training accuracy over training ({noise} random "
                  "labels drawn)", scale, subset)
    return df


def figure_probe_per_layer(layers: pd.DataFrame, specs: list[RunSpec], out: Path, scale: str,
                           subset: bool) -> pd.DataFrame:
    names = {s.name: label(s) for s in specs}
    df = layers[layers["run"].isin(names)].assign(condition=lambda d: d["run"].map(names))
    untrained = (df.groupby(["stage", "depth", "seed"], as_index=False)["untrained_probe_acc"].mean()
                 .assign(condition=UNTRAINED, probe_acc=lambda d: d["untrained_probe_acc"]))
    both = pd.concat([df, untrained], ignore_index=True).sort_values("depth", kind="stable")
    order = list(dict.fromkeys(both["stage"]))
    colours = condition_colours(specs)
    drawn = [c for c in colours if c in set(both["condition"])]  # the dodge follows this order too
    fig, axes = plotting.new_figure(3, width=4.8)
    sns.pointplot(both, x="stage", y="probe_acc", hue="condition", order=order, hue_order=drawn,
                  palette=colours, errorbar=SEED_CI, dodge=0.3, ax=axes[0, 0])
    axes[0, 0].set(ylabel="k-NN probe test accuracy", title="features (true labels)")
    axes[0, 0].tick_params(axis="x", rotation=45)
    axes[0, 0].legend(fontsize=7)
    sns.pointplot(df, x="stage", y="random_label_knn", hue="condition", order=order, hue_order=drawn,
                  palette=colours, errorbar=SEED_CI, dodge=0.3, ax=axes[0, 1], legend=False)
    axes[0, 1].set(ylabel="LOO k-NN acc. (training labels)",
                   title="memorization (training labels)")
    axes[0, 1].tick_params(axis="x", rotation=45)
    _draw_bm6(axes[0, 2], layers, specs, order, colours)
    plotting.save(fig, out, "Benign memorization: k-NN probe per layer (final models)", scale, subset)
    return both


def _draw_bm6(ax, layers: pd.DataFrame, specs: list[RunSpec], order: list[str], colours: dict) -> None:
    """BM-6's statistic per stage: the probe's relative drop from the 0% to the 100% random-label run
    (same augmentation; per seed, then its mean and t-interval), in the 100% run's colour, with BM-6's
    bound; BM-6 reads it at the encoder stage best under 100% noise on the other seeds (not projector or
    output). Without 0%-noise runs the panel says it is not measured."""
    pairs = [(s, c) for s in sorted(specs, key=_meaning) if s.noise == 1.0
             for c in [dataclasses.replace(s, noise=0.0)]]
    rows = []
    for noisy, clean in pairs:
        acc = {run: layers[layers["run"] == run].set_index(["seed", "stage"])["probe_acc"]
               for run in (noisy.name, clean.name)}
        both = acc[clean.name].index.intersection(acc[noisy.name].index)
        rows += [{"condition": label(noisy), "seed": seed, "stage": stage,
                  "relative drop": 1 - acc[noisy.name][seed, stage] / acc[clean.name][seed, stage]}
                 for seed, stage in both]
    rel = pd.DataFrame(rows, columns=["condition", "seed", "stage", "relative drop"])
    if len(rel):
        drawn = [c for c in colours if c in set(rel["condition"])]
        sns.pointplot(rel, x="stage", y="relative drop", hue="condition", order=order, hue_order=drawn,
                      palette=colours, errorbar=SEED_CI, dodge=0.3, ax=ax, legend=False)
    else:
        ax.set_xticks(range(len(order)), order)
        ax.set(xlim=(-0.5, len(order) - 0.5), ylim=(-0.1, 0.5))
        plotting.say_on_panel(ax, "not measured at this scale:\nno 0% random-label run to compare with")
    plotting.claim_line(ax, "BM-6", BM6_UNAFFECTED, f"bound ({BM6_UNAFFECTED:.0%} of the 0%-noise probe "
                        "accuracy)", ls=":")
    ax.set(xlabel="stage", ylabel="probe drop, 0% to 100% random labels\n(relative to 0%)",
           title="damage from label noise")
    ax.tick_params(axis="x", rotation=45)
    ax.legend(fontsize=7, loc="upper left")


def _by_k(final: pd.DataFrame, specs: list[RunSpec]) -> tuple[pd.DataFrame, list[str]]:
    names = {s.name: k_label(s) for s in specs}
    df = final[final["run"].isin(names)].assign(K=lambda d: d["run"].map(names))
    return df, [k_label(s) for s in sorted(specs, key=_meaning)]  # K in its numeric order


def figure_augmentation_diversity(final: pd.DataFrame, specs: list[RunSpec], out: Path, scale: str,
                                  subset: bool, cfg: dict | None = None) -> pd.DataFrame:
    """Each run in its condition's colour (as in probe_vs_epoch); what the memorization is scored on
    (training views, clean images) by line style and marker."""
    df, order = _by_k(final, specs)
    colours = paper_colours(specs, cfg)
    conditions = [c for c in colours if c in {label(s) for s in specs}]
    fig, axes = plotting.new_figure(2)
    df = df.assign(condition=df["run"].map({s.name: label(s) for s in specs}))
    sns.pointplot(df, x="K", y="probe_acc", order=order, hue="condition", hue_order=conditions,
                  palette=colours, errorbar=SEED_CI, ax=axes[0, 0], legend=False)
    axes[0, 0].set(xlabel="augmentations per image (K)", ylabel="k-NN probe test accuracy",
                   title="probe")
    _keys(axes[0, 0], colours, conditions)
    mem = df.melt(id_vars=["run", "seed", "K", "condition"],
                  value_vars=["train_acc_views", "train_acc_clean"], var_name="scored on",
                  value_name="train accuracy on random labels")
    mem["scored on"] = mem["scored on"].map(dict(zip(("train_acc_views", "train_acc_clean"), SCORED_ON,
                                                     strict=True)))
    styles = plotting.style_map(SCORED_ON)
    for i, cond in enumerate(conditions):
        sub = mem[mem["condition"] == cond]
        sns.pointplot(sub, x="K", y="train accuracy on random labels", hue="scored on", order=order,
                      hue_order=list(SCORED_ON), palette=dict.fromkeys(SCORED_ON, colours[cond]),
                      markers=[styles[lv]["marker"] for lv in SCORED_ON],
                      linestyles=[styles[lv]["ls"] for lv in SCORED_ON],
                      errorbar=SEED_CI, dodge=0.2 + 0.1 * i, ax=axes[0, 1], legend=False)
    axes[0, 1].set(xlabel="augmentations per image (K)", title="memorization", ylim=(0, 1.02))
    _keys(axes[0, 1], colours, conditions, styles, loc="lower right")
    plotting.save(fig, out, "Benign memorization: augmentation diversity (100% random labels)",
                  scale, subset)
    return df.drop(columns="condition")


def figure_capacity(final: pd.DataFrame, specs: list[RunSpec], out: Path, scale: str, subset: bool,
                    num_classes: int = 10, cfg: dict | None = None) -> pd.DataFrame:
    """Each run in its condition's colour (as in probe_vs_epoch)."""
    df, order = _by_k(final, specs)
    colours = paper_colours(specs, cfg)
    conditions = [c for c in colours if c in {label(s) for s in specs}]
    fig, axes = plotting.new_figure(1)
    sns.pointplot(df.assign(condition=df["run"].map({s.name: label(s) for s in specs})), x="K",
                  y="train_acc_views", order=order, hue="condition", hue_order=conditions, palette=colours,
                  errorbar=SEED_CI, ax=axes[0, 0], legend=False)
    axes[0, 0].axhline(1 / num_classes, ls="--", c="grey", label="chance")
    plotting.claim_line(axes[0, 0], "BM-5", MEMORIZED, f"'memorized' bar ({MEMORIZED:.0%})", ls=":")
    axes[0, 0].set(xlabel="augmentations per image, each with its own random label (K)",
                   ylabel="train accuracy on (view, label) pairs", ylim=(0, 1.02))
    _keys(axes[0, 0], colours, conditions)
    plotting.save(fig, out, "Benign memorization: capacity (a label per augmentation)", scale, subset)
    return df


# ---------------------------------------------------------------- claims


def _no_clean_runs(cfg: dict) -> str:
    if 0.0 in [float(x) for x in cfg["probe_vs_epoch"]["label_noise"]]:
        return ""
    return "no 0% label-noise runs at this scale (probe_vs_epoch.label_noise has no 0.0)"


def _memorized(r: dict, run: str, metric: str, label: str) -> list[Part]:
    """BM-1's statistic: one run's final training accuracy on its own (random) labels."""
    return [Part(label, per_seed(r["final"], run, metric), MEMORIZED)]


def _probe_gains(r: dict, run: str, no_aug: str, labels: tuple[str, str]) -> list[Part]:
    """BM-2's statistic for `run`: its probe minus its untrained probe, and minus the no-aug run's."""
    h, f = r["history"], r["final"]
    trained = per_seed(f, run, "probe_acc")
    init = per_seed(h[h["epoch"] == 0], run, "probe_acc")
    return [Part(labels[0], diff(trained, init), 0.0),
            Part(labels[1], diff(trained, per_seed(f, no_aug, "probe_acc")), 0.0)]


def _layer_split(r: dict, run: str, tail: str = "") -> list[Part]:
    """BM-3's statistic for `run`: probe gap (best encoder stage, chosen on the other seeds, minus
    output) and random-label agreement gap (output minus pooled); `tail` ends both labels."""
    lay = r["layers"][r["layers"]["run"] == run]
    if lay.empty:
        raise KeyError(f"{run} layer probes")
    head = {"projector", "output"}
    acc = lay.pivot(index="seed", columns="stage", values="probe_acc")
    enc = {int(s): {st: float(acc.loc[s, st]) for st in acc.columns if st not in head} for s in acc.index}
    best = cross_fit_choice(enc)  # the encoder stage that is best on the *other* seeds
    mem = lay.pivot(index="seed", columns="stage", values="random_label_knn")
    gap = {s: enc[s][st] - float(acc.loc[s, "output"]) for s, st in best.items()}
    agree = {int(s): float(mem.loc[s, "output"] - mem.loc[s, "pooled"]) for s in mem.index}
    return [cross_fitted(Part("probe: best encoder stage (chosen on the other seeds) minus output layer"
                              + tail, gap, 0.0)),
            Part("random-label k-NN agreement: output layer minus pooled features" + tail, agree, 0.0)]


def _capacity_drop(r: dict, lo: RunSpec, hi: RunSpec, labels: tuple[str, str]) -> list[Part]:
    """BM-5's statistic: training accuracy on the training views at K=lo minus at K=hi, and at K=hi."""
    f = r["final"]
    acc_hi = per_seed(f, hi.name, "train_acc_views")
    return [Part(labels[0], diff(per_seed(f, lo.name, "train_acc_views"), acc_hi), 0.0),
            Part(labels[1], acc_hi, MEMORIZED, direction="below")]


def _noise_damage(r: dict, clean: str, main: str, tail: str = "") -> list[Part]:
    """BM-6's statistic for a 0% (`clean`) and 100% (`main`) random-label pair of runs: the probe drop at
    the output minus at the encoder stage best under 100% noise (chosen on the other seeds), and that
    stage's drop relative to its 0%-noise accuracy; `tail` ends both labels."""
    lay = r["layers"]
    head = {"projector", "output"}
    for run in (clean, main):
        if not (lay["run"] == run).any():
            raise KeyError(f"{run} layer probes")
    acc = {run: lay[lay["run"] == run].pivot(index="seed", columns="stage", values="probe_acc")
           for run in (clean, main)}
    seeds = sorted(set(acc[clean].index) & set(acc[main].index))
    enc = {int(s): {st: float(acc[main].loc[s, st]) for st in acc[main].columns if st not in head}
           for s in seeds}
    best = cross_fit_choice(enc)  # the encoder stage best under 100% label noise on the *other* seeds
    drop = {s: float(acc[clean].loc[s, st] - acc[main].loc[s, st]) for s, st in best.items()}
    out = {int(s): float(acc[clean].loc[s, "output"] - acc[main].loc[s, "output"]) for s in seeds}
    relative = {s: drop[s] / float(acc[clean].loc[s, st]) for s, st in best.items()}
    return [cross_fitted(Part("probe drop from 0% to 100% random labels: output layer minus the best "
                              "encoder stage (chosen on the other seeds)" + tail,
                              {s: out[s] - drop[s] for s in best}, 0.0)),
            cross_fitted(Part(f"relative probe drop at the best encoder stage < {BM6_UNAFFECTED:g}{tail}",
                              relative, BM6_UNAFFECTED, direction="below"))]


class _Names(NamedTuple):
    """The runs BM-1..BM-6 read, for one configuration's runs and main augmentation."""

    div: list[RunSpec]
    cap: list[RunSpec]
    ds: str | None  # None: the paper's CIFAR-10
    main: str
    clean: str
    no_aug: str
    one_view: RunSpec  # K=1: also the first run of diversity and capacity


def _names(runs: dict[str, list[RunSpec]], augmentation: str) -> _Names:
    """The run names every claim shares, from the configuration's runs and its main augmentation."""
    div, cap = runs["augmentation_diversity"], runs["capacity"]
    ds = cap[0].dataset  # None: the paper's CIFAR-10
    main = RunSpec(1.0, augmentation, dataset=ds).name
    clean = RunSpec(0.0, augmentation, dataset=ds).name
    no_aug = RunSpec(1.0, "none", dataset=ds).name
    one_view = RunSpec(1.0, augmentation, 1, dataset=ds)  # K=1: also the first run of diversity and capacity
    return _Names(div, cap, ds, main, clean, no_aug, one_view)


def _bm1(r: dict, main: str, augmentation: str) -> list[Part]:
    """BM-1's measure: the main run's training accuracy on its random labels, on clean images."""
    return _memorized(r, main, "train_acc_clean",
                      f"train acc. on 100% random labels ({augmentation} aug), clean images")


def _bm1_falsifier(r: dict, cap: list[RunSpec], augmentation: str) -> list[Part]:
    """BM-1's falsifier: the largest K with a label per view, on its (view, label) pairs."""
    return _memorized(r, cap[-1].name, "train_acc_views",
                      f"train acc. on 100% random labels ({augmentation} aug), a label per view "
                      f"(K={k_label(cap[-1])}), on its (view, label) pairs")


def _bm2(r: dict, main: str, no_aug: str) -> list[Part]:
    """BM-2's measure: the main run's probe gains over the untrained and the no-aug network."""
    return _probe_gains(r, main, no_aug, ("probe: trained on random labels + aug minus untrained",
                                          "probe: random labels with aug minus without aug"))


def _bm2_falsifier(r: dict, one_view: RunSpec, no_aug: str) -> list[Part]:
    """BM-2's falsifier: the same gains with one fixed view per image (K=1)."""
    return _probe_gains(r, one_view.name, no_aug,
                        ("probe: trained on random labels, one fixed view per image (K=1), minus "
                         "untrained", "probe: random labels, one fixed view per image (K=1), minus "
                         "without aug"))


def _bm4(r: dict, div: list[RunSpec]) -> list[Part]:
    """BM-4's measure: probe gain and memorization loss from the least to the most diverse K."""
    f = r["final"]
    lo, hi = div[0], div[-1]
    return [Part(f"probe: K={k_label(hi)} minus K={k_label(lo)}",
                 diff(per_seed(f, hi.name, "probe_acc"), per_seed(f, lo.name, "probe_acc")), 0.0),
            Part(f"memorization (train acc. on training views): K={k_label(lo)} minus "
                 f"K={k_label(hi)}", diff(per_seed(f, lo.name, "train_acc_views"),
                                         per_seed(f, hi.name, "train_acc_views")), 0.0)]


def _bm5(r: dict, cap: list[RunSpec]) -> list[Part]:
    """BM-5's measure: the capacity drop from the smallest to the largest K, a label per view."""
    lo, hi = cap[0], cap[-1]
    return _capacity_drop(r, lo, hi,
                          (f"train acc.: K={k_label(lo)} minus K={k_label(hi)} (a label per view)",
                           f"train acc. at K={k_label(hi)} stays below {MEMORIZED:.0%}"))


def _bm5_falsifier(r: dict, augmentation: str, ds: str | None, one_view: RunSpec) -> list[Part]:
    """BM-5's falsifier: the same drop with one label per image (K=1 vs unlimited)."""
    hi = RunSpec(1.0, augmentation, dataset=ds)  # K unlimited, one label per image
    return _capacity_drop(r, one_view, hi,
                          (f"train acc.: K=1 minus K={k_label(hi)} (one label per image)",
                           f"train acc. at K={k_label(hi)} stays below {MEMORIZED:.0%} (one label per "
                           "image)"))


def _bm6_falsifier(r: dict, ds: str | None, no_aug: str) -> list[Part]:
    """BM-6's falsifier: the noise damage without augmentation (0% vs 100% random labels)."""
    return _noise_damage(r, RunSpec(0.0, "none", dataset=ds).name, no_aug, " (no aug)")



def claim_bm1(runs: dict[str, list[RunSpec]], augmentation: str) -> Claim:
    """BM-1: with 100% random labels and augmentation the network memorizes its training labels."""
    n = _names(runs, augmentation)
    return Claim(
        id="BM-1",
        statement="With 100% random labels and augmentation the network memorizes the training labels.",
        paper_value="~100% train accuracy (" + QUAL + ")",
        paper_source=SOURCE + ", abstract and Sec. 2",
        statistic="final training accuracy on the random labels of the un-augmented training images",
        rule=f"lower CI bound > {MEMORIZED}",
        measure=partial(_bm1, main=n.main, augmentation=augmentation),
        source=BENIGN,
        uses=("probe_vs_epoch",),
        figures=("probe_vs_epoch",),
        drawn=(("probe_vs_epoch", "y"),),
        falsifier=Falsifier(
            setting=f"a random label per augmentation (K={k_label(n.cap[-1])}), read on its (view, label) "
            f"pairs",
            why="the paper's own contrast: with an independent label per view the sample size grows "
            "K-fold "
            "and 'malign memorization under data augmentation is infeasible due to the insufficient "
            "capacity of the model', so the training labels should not be memorized there",
            measure=partial(_bm1_falsifier, cap=n.cap, augmentation=augmentation),
        ),
    )


def claim_bm2(runs: dict[str, list[RunSpec]], augmentation: str) -> Claim:
    """BM-2: the probe of that network is far above the untrained one and the no-aug one."""
    n = _names(runs, augmentation)
    return Claim(
        id="BM-2",
        statement="Its k-NN probe accuracy is far above the untrained network and above the same "
        "network trained on random labels without augmentation.",
        paper_value="'highly non-trivial performance under nearest neighbour probing' (" + QUAL + ")",
        paper_source=SOURCE + ", abstract and Sec. 2",
        statistic="paired (per seed) differences in k-NN probe test accuracy",
        rule="both CIs > 0",
        measure=partial(_bm2, main=n.main, no_aug=n.no_aug),
        source=BENIGN,
        uses=("probe_vs_epoch",),
        reading="'far above' is tested as a difference above 0, only its sign: no margin for 'far' "
        "was fixed before the runs",
        figures=("probe_vs_epoch",),
        falsifier=Falsifier(
            origin="our construction",  # a setting we chose: the paper draws no such contrast
            setting="one fixed augmentation per image (K=1) instead of fresh ones",
            why="with one view per image the sample size stays n, so malign memorization is feasible and "
            "the paper's explanation (its infeasibility 'forces' the network to learn meaningful "
            "features) gives no reason for features: no gain over the untrained or no-aug network",
            measure=partial(_bm2_falsifier, one_view=n.one_view, no_aug=n.no_aug),
        ),
    )


def claim_bm3(runs: dict[str, list[RunSpec]], augmentation: str) -> Claim:
    """BM-3: the probe peaks before the last layers, which carry the memorization."""
    n = _names(runs, augmentation)
    return Claim(
        id="BM-3",
        statement="Probe accuracy peaks before the last layers; the final layers carry the memorization.",
        paper_value="'only the very last layers are used for memorization' (" + QUAL + ")",
        paper_source=SOURCE + ", abstract and Sec. 3",
        statistic="per-seed probe gap (encoder stage with the best mean probe accuracy over the other "
        "seeds, so the choice is independent of this seed's noise, minus output) and random-label "
        "agreement gap (output - pooled)",
        rule="both CIs > 0",
        measure=partial(_layer_split, run=n.main),
        source=LAYERS,
        uses=("probe_vs_epoch",),
        figures=("probe_per_layer",),
        falsifier=Falsifier(
            origin="our construction",  # a setting we chose: the paper draws no such contrast
            setting="no augmentation",
            why="the abstract splits memorization and features across layers only for benign "
            "memorization, "
            "which it finds 'under training protocols that include data augmentation'; without it "
            "memorization is the malign kind, which keeps no performant features below the last layers",
            measure=partial(_layer_split, run=n.no_aug, tail=" (no aug)"),
        ),
    )


def claim_bm4(runs: dict[str, list[RunSpec]], augmentation: str) -> Claim:
    """BM-4: the probe depends on augmentation diversity (a trade-off in K)."""
    n = _names(runs, augmentation)
    return Claim(
        id="BM-4",
        statement="Probe accuracy depends on augmentation diversity: a memorization-generalization "
        "trade-off in K.",
        paper_value="'a memorization-generalization trade-off in terms of their "
        "diversity' (" + QUAL + ")",
        paper_source=SOURCE + ", abstract and Sec. 4",
        statistic="paired differences between the most and least diverse K: probe gain, and loss of "
        "training accuracy on the augmented views the network is trained on",
        rule="both CIs > 0",
        measure=partial(_bm4, div=n.div),
        source=DIVERSITY,
        kind="hypothesis",
        reading="the direction: the abstract names a memorization-generalization trade-off in "
        "diversity, not which way it goes; more diverse augmentations generalizing better and "
        "memorizing less is our reading",
        uses=("diversity",),
        figures=("augmentation_diversity",),
    )


def claim_bm5(runs: dict[str, list[RunSpec]], augmentation: str) -> Claim:
    """BM-5: with a label per augmentation the network cannot memorize at large K."""
    n = _names(runs, augmentation)
    return Claim(
        id="BM-5",
        statement="With an independent label per augmentation the network can no longer memorize "
        "at large K (malign memorization is infeasible).",
        paper_value="'malign memorization under data "
        "augmentation is infeasible due to the insufficient capacity' (" + QUAL + ")",
        paper_source=SOURCE + ", abstract and Sec. 5",
        statistic="training accuracy on (view, label) pairs at the smallest and largest K, same number "
        "of epochs",
        rule=f"accuracy drop CI > 0 and largest-K accuracy CI < {MEMORIZED}",
        measure=partial(_bm5, cap=n.cap),
        source=CAPACITY,
        uses=("capacity",),
        caveat="exposure confound: every K trains the same number of epochs, so each (view, "
        "label) pair is seen about epochs/K times; a drop at large K can come from less exposure "
        "alone, not only from insufficient capacity",
        figures=("capacity",),
        drawn=(("capacity", "y"),),
        falsifier=Falsifier(
            setting="one random label per image, shared by its views (K=1 vs unlimited)",
            why="the capacity argument rests on the K-fold sample size of independent (view, label) "
            "pairs; with one label per image it stays n, which the network memorizes under augmentation "
            "(BM-1), so accuracy should neither drop with K nor stay below the bar",
            measure=partial(_bm5_falsifier, augmentation=augmentation, ds=n.ds, one_view=n.one_view),
        ),
    )


def claim_bm6(runs: dict[str, list[RunSpec]], augmentation: str) -> Claim:
    """BM-6: the encoder stages are largely unaffected by label noise; the last layers are not."""
    n = _names(runs, augmentation)
    return Claim(
        id="BM-6",
        statement="Preceding layers' features are largely unaffected by label noise; the damage is in "
        "the last layers.",
        paper_value="'preceding layers encode performant features which remain largely "
        "unaffected by the label noise' (abstract; qualitative, no number)",
        paper_source=WHERE,
        statistic="per seed, at the encoder stage (not projector or output) with the best probe accuracy "
        "under 100% random labels on the mean over the other seeds: the probe drop from the 0% to "
        "the 100% random-label run (both with augmentation) at the output layer minus at that "
        "stage; and that stage's drop relative to its 0%-noise accuracy",
        rule=f"first CI > 0; relative drop CI < {BM6_UNAFFECTED:g}",
        measure=partial(_noise_damage, clean=n.clean, main=n.main),
        source=LAYERS,
        uses=("probe_vs_epoch",),
        not_measurable=_no_clean_runs,
        reading=f"'largely unaffected' read as keeping at least {1 - BM6_UNAFFECTED:.0%} of the "
        "clean-label run's probe accuracy: the bound is ours, the abstract gives no number",
        caveat="the bound and the statistic were set on 2026-11-25, after earlier BM-6 numbers had been "
        "seen; its headline comes from fresh seeds where the scale has them (fresh_seeds), else it "
        "counts as seen seeds only",
        figures=("probe_per_layer",),
        drawn=(("probe_per_layer", "y"),),
        falsifier=Falsifier(
            origin="our construction",  # a setting we chose: the paper draws no such contrast
            setting="no augmentation (0% vs 100% random labels, both without)",
            why="the abstract finds features 'largely unaffected by the label noise' as a result of "
            "benign "
            "memorization under augmentation; without augmentation memorization is malign, and the "
            "noise should damage the encoder stages too",
            measure=partial(_bm6_falsifier, ds=n.ds, no_aug=n.no_aug),
        ),
    )


CLAIMS = (claim_bm1, claim_bm2, claim_bm3, claim_bm4, claim_bm5, claim_bm6)


def claims(runs: dict[str, list[RunSpec]], augmentation: str) -> list[Claim]:
    """BM-1..BM-6 for the run names of this configuration, each paper claim with its falsifier."""
    return [make(runs, augmentation) for make in CLAIMS]


# ---------------------------------------------------------------- the paper's declaration


def load_results(files: dict[str, list[str]]) -> dict[str, pd.DataFrame]:
    """Training histories (and their last evaluations) from metrics files; layer probes."""
    out: dict[str, pd.DataFrame] = {}
    if "metrics" in files:
        hist = load_histories(files["metrics"])
        out.update(history=hist, final=final_rows(hist))
    if "layers" in files:
        out["layers"] = load_layers(files["layers"])
    return out


FIGURES = (
    Figure("probe_vs_epoch", "k-NN probe test accuracy (left) and training accuracy on the (random) training "
           "labels (right) over training, with and without augmentation, for each label-noise level the "
           "configuration runs (the title names them: 0% and 100% random labels at the default scale, 100% "
           "only at smoke); dashed: the untrained network; dotted: BM-1's 'memorized' bar. Bands: 90% "
           "t-interval over seeds.",
           figure_probe_vs_epoch, "history"),
    Figure("probe_per_layer", "k-NN probe test accuracy at each stage of the final networks (left; conv maps "
           "average-pooled to 2x2) and leave-one-out k-NN agreement with the training labels (right), which "
           "measures where the random labels are memorized, and (right) the probe's drop from the 0% to the "
           "100% random-label run at each stage, relative to the 0% run, with BM-6's bound (dotted; BM-6 "
           "reads it at the encoder stage best under 100% noise, chosen on the other seeds; not measured "
           "where the configuration runs no 0% label noise). Bars: 90% t-interval over seeds.",
           figure_probe_per_layer, "layers", reads="layers"),
    Figure("augmentation_diversity", "100% random labels, each image seen only through a fixed set of K "
           "augmentations: k-NN probe accuracy (left) and memorization of the random labels (right), scored "
           "on the training views the network saw (solid, dots) and on clean images (dashed, squares), "
           "against K; colour: the runs' condition, as in probe_vs_epoch. Bars: 90% t-interval over seeds.",
           figure_augmentation_diversity, "final", takes_config=True),
    Figure("capacity", "Each of the K augmentations of an image gets its own random label: training "
           "accuracy reached on the (view, label) pairs against K. The budget is fixed in epochs (as in the "
           "paper), so each pair is seen about epochs/K times; colour: the runs' condition, as in "
           "probe_vs_epoch. Bars: 90% t-interval over seeds.",
           figure_capacity, "final", takes_config=True),
)

def paper_claims(runs: dict[str, list[RunSpec]], cfg: dict) -> list[Claim]:
    """The claims as the paper contract calls them (runs, the paper's config block)."""
    return claims(runs, cfg["augmentation"])


# ---------------------------------------------------------------- cost (the plan)


def cost(cfg: dict, run: str):
    """The plan's cost model of one training job (`replikit.plan.bill`): epochs * floor(n / batch) steps
    (train_loop drops the last partial batch), each `Run.loss` on a uint8 batch of the real shape:
    the run's augmentation, MSE on one-hot labels, the configured optimizer."""
    import torch
    import torch.nn.functional as F

    from replikit.core.training import make_optimizer
    from replikit.data import augment as aug
    from replikit.data.datasets import class_count, image_shape
    from replikit.data.datasets import sizes as full_sizes
    from replikit.methods.probes import to_float
    from replikit.methods.step_cost import (
        JobPlan,
        Piece,
        Setup,
        batches_per_epoch,
        fake_module,
    )
    from replikit.models import build_model
    from replikit.papers.benign_memorization import RunSpec

    spec = RunSpec.parse(run)
    n = cfg["n_train"] or full_sizes(cfg["dataset"])[0]
    b = min(cfg["batch_size"], n)
    shape, n_classes = image_shape(cfg["dataset"]), class_count(cfg["dataset"])
    m, o = cfg["model"], cfg["optimizer"]

    def setup() -> Setup:
        model = fake_module(lambda: build_model(m["name"], n_classes, m["width"], m["projector_width"],
                                                in_channels=shape[0]))
        opt = make_optimizer(o["name"], model.parameters(), o["lr"], o["weight_decay"])
        x, y = torch.empty(n, *shape, dtype=torch.uint8), torch.zeros(n, dtype=torch.long)
        preset = aug.PRESETS[spec.augmentation]

        def loss() -> torch.Tensor:
            idx = torch.randint(0, n, (b,))
            xb = to_float(x[idx])
            if not preset.is_identity:
                xb = aug.augment(xb, torch.rand(b, aug.N_UNIFORMS), preset)
            return F.mse_loss(model(xb), F.one_hot(y[idx], n_classes).float())

        return Setup(model, loss, opt, [x, y])

    key = ("bm", str(m), str(o), n, b, spec.augmentation)
    steps = cfg["epochs"] * batches_per_epoch(n, b)
    return JobPlan([Piece(key, setup, steps)], f"epochs {cfg['epochs']} x floor({n}/{b})",
                   "benign_memorization.batch_size")


SPEC = Paper(
    bm.RUNS, cost=cost, prefix="bm",
    title="The Curious Case of Benign Memorization (Anagnostidis et al., ICLR 2023)",
    arxiv="2210.14019",
    figures=FIGURES,
    claims=paper_claims,
    load_results=load_results,
    claim_reads={"metrics": None, "layers": "probe_per_layer"},
    dataset=lambda cfg, figure: cfg["dataset"],
    retrain_free_edit=("capacity", {"n_augs": [1, 2]}),
)
