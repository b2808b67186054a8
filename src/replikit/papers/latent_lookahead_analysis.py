"""Aggregation, figures and claims for the latent-lookahead replication."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from replikit.papers import latent_lookahead as ll
from replikit.papers.interface import Figure, Paper
from replikit.papers.latent_lookahead import RunSpec
from replikit.reporting import plotting
from replikit.reporting.plotting import SEED_CI, sns
from replikit.scoring.aggregate import final_rows, per_seed, run_rows
from replikit.scoring.claims import Claim, Falsifier, Part, Source, difference
from replikit.scoring.fidelity import Departure

pl = ll.pl  # the planning tasks: tokens, parsers, verifiers

SOURCE = "arXiv 2603.20219 (OpenReview version), Table 1"
WHERE = "Noci et al., 2026 (arXiv 2603.20219), abstract"
# LL-1..LL-3's reading of "substantially outperforms" (issue 63: a sentence's strength is a margin or is said)
SUBSTANTIALLY = ("'substantially outperforms' is tested as a difference above 0, only its sign: no margin "
                 "for 'substantially' was fixed before the runs")
OUTPERFORMS = Source(
    quote="We show that latent lookahead substantially outperforms both autoregressive and "
    "non-autoregressive "
    "baselines on planning tasks such as maze solving, Sudoku, and ProsQA, where foresight is essential.",
    where=WHERE,
)
COMPUTE = Source(
    quote="Furthermore, the compute allocation across tokens is uniform; every token is formed based on a "
    "single "
    "forward-pass, potentially limiting the model's expressiveness in cases where difficult tokens require "
    "inherently more compute.",
    where=WHERE,
)
LOOKAHEAD = Source(
    quote="Towards addressing these limitations, we introduce latent lookahead, a training strategy that "
    "enables "
    'models to "think" before generating: at selected positions in the sequence, before committing to the '
    "next token, the model performs a multi-step lookahead in latent space.",
    where=WHERE,
)
# LL-1, LL-2, LL-3 and LL-6's falsifier (config key `singles`): the contrast where foresight is not needed
SINGLES_SETTING = ("4x4 Sudoku answered cell by cell in the order naked singles fill it, instead of the "
                   "grid row by row (for LL-3 and LL-6 too: one falsifier task for every task)")
SINGLES_WHY = ("the sentence places the gain 'on planning tasks ... where foresight is essential'; in "
               "naked-single order every answer token follows from the prompt and the tokens before it (the "
               "same puzzles and settings; where tau is the answer length, the task's own, up to 2 x "
               "max_empty + 1 tokens against 19), so lookahead should gain nothing from foresight there (our "
               "construction: the paper draws no such contrast). Against pause tokens (LL-2, LL-6) the "
               "extra compute is matched; against NTP (LL-1, LL-3) lookahead also brings more compute per "
               "answer token, which finding the next single may use, so a gain there says the gain is not "
               "specific to foresight. The falsifier reads 'not replicated' only where lookahead is worse; "
               "equal accuracy, both arms at the ceiling included, reads inconclusive")
# Exact match at or below this in every seed of both arms = neither learned the task: no evidence.
FLOOR = 0.0
# Exact match (%) in the paper's Table 1: lookahead / pause / NTP.
PAPER_TABLE = {
    "sudoku4": {"lookahead": 93.5, "pause": 86.0, "ntp": 78.0},
    "sudoku9": {"lookahead": 35.5, "pause": 12.5, "ntp": 12.5},
    "prosqa": {"lookahead": 91.8, "pause": 82.5, "ntp": 80.5},
    "maze": {"lookahead": 21.5, "pause": 19.5, "ntp": 18.5},
}
METHOD_ORDER = ("ntp", "pause", "lookahead")


def method_colours() -> dict:
    """One colour per method, bound by METHOD_ORDER, in every figure of the paper (a function: seaborn,
    which it reads, is imported only when a figure is drawn)."""
    return plotting.colour_map(METHOD_ORDER)
TASK_LABELS = {"sudoku4": "4x4 Sudoku", "sudoku9": "9x9 Sudoku", "prosqa": "ProsQA (regen.)",
               "maze": "Maze", "sudoku4_singles": "4x4 Sudoku, naked-single order (falsifier)"}


def load_histories(paths: list[str | Path]) -> pd.DataFrame:
    """One row per (run, seed, evaluation), with the run's task, method, tau and mask."""
    def rows(m: dict) -> list[dict]:
        spec = RunSpec.parse(m["run"])
        return [{"task": spec.task, "method": spec.method, "tau": m["tau"], "mask": spec.mask, **h}
                for h in m["history"]]

    hist = run_rows(paths, rows)
    return hist if len(hist) else pd.DataFrame(columns=["run", "seed", "task", "method", "tau", "mask"])


def load_examples(paths: list[str | Path]) -> pd.DataFrame:
    """One row per recorded held-out example (prompt, true answer, generated answer) of each run."""
    def rows(m: dict) -> list[dict]:
        spec = RunSpec.parse(m["run"])
        return [{"task": spec.task, "method": spec.method, "example": i, **e}
                for i, e in enumerate(m.get("examples", []))]

    return run_rows(paths, rows, columns=["run", "seed", "task", "method", "example", "prompt", "answer",
                                          "prediction", "correct"])


def exact_match(final: pd.DataFrame, run: str) -> dict[int, float]:
    return per_seed(final, run, "exact_match")


# ---------------------------------------------------------------- figures


def _selected(frame: pd.DataFrame, specs: list[RunSpec]) -> pd.DataFrame:
    """The rows of a figure's runs, with exact match in percent."""
    df = frame[frame["run"].isin({s.name for s in specs})].copy()
    df["exact_match_pct"] = 100 * df["exact_match"]
    return df


def figure_accuracy_table(final: pd.DataFrame, specs: list[RunSpec], out: Path, scale: str) -> pd.DataFrame:
    """Every task of the paper's Table 1, and LL-1/2/3/6's falsifier task (no paper number): ours where
    it ran at this scale, "not run at this scale" where it did not."""
    df = _selected(final, specs)
    ran = set(df["task"]) if len(df) else set()
    table = (df.groupby(["task", "method"])["exact_match_pct"].agg(["mean", "std", "count"]).reset_index()
             .rename(columns={"mean": "ours_mean", "std": "ours_std", "count": "n_seeds"})
             if len(df) else pd.DataFrame(columns=["task", "method", "ours_mean", "ours_std", "n_seeds"]))
    table["tau"] = [df[(df.task == t) & (df.method == m)]["tau"].iloc[0]
                    for t, m in zip(table["task"], table["method"], strict=True)]
    missing = pd.DataFrame([{"task": t, "method": m, "n_seeds": 0} for t in pl.TASKS if t not in ran
                            for m in METHOD_ORDER])
    table = pd.concat([table, missing], ignore_index=True) if len(missing) else table
    table["paper"] = [PAPER_TABLE.get(t, {}).get(m, np.nan)  # the falsifier's task is not the paper's
                      for t, m in zip(table["task"], table["method"], strict=True)]
    table["status"] = ["ran" if t in ran else "not run at this scale" for t in table["task"]]
    fig, axes = plotting.new_figure(len(pl.TASKS), width=3.6)
    order = list(METHOD_ORDER)
    for ax, task in zip(axes[0], pl.TASKS, strict=True):
        sub = df[df["task"] == task] if len(df) else df
        if task in ran:
            sns.barplot(sub, x="method", y="exact_match_pct", order=order, errorbar=SEED_CI, ax=ax,
                        alpha=0.8)
            sns.stripplot(sub, x="method", y="exact_match_pct", order=order, color="black", size=3, ax=ax)
        else:
            ax.text(1, 50, "not run at\nthis scale", ha="center", va="center", fontsize=11, color="grey")
        if task in PAPER_TABLE:
            ax.scatter(order, [PAPER_TABLE[task][m] for m in order], marker="*", s=120, c="red",
                       zorder=5, label="paper (Table 1)")
        tau = sub[sub["method"] != "ntp"]["tau"] if task in ran else []
        ax.set(title=f"{TASK_LABELS[task]} (tau={tau.iloc[0] if len(tau) else '-'})", xlabel="",
               ylabel="exact match (%)", ylim=EXACT_YLIM, xlim=(-0.5, 2.5))
        if task in ran:
            _say_if_floor(ax, sub["exact_match_pct"])
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.1))  # below: it covers no bar
    seeds = int(df.groupby(["task", "method"]).size().max()) if len(df) else 0
    ours = "bars, 90% t-interval" if seeds > 1 else f"bars and dots, {seeds} seed: no interval"
    plotting.save(fig, out, f"Latent lookahead: exact match by method (ours: {ours}; paper: stars)", scale,
                  False)
    return table


EXACT_YLIM = (-3, 103)  # a margin around 0 % and 100 %: a series at the floor is drawn, not under the frame


def _say_if_floor(ax, values: pd.Series) -> None:
    """Say so in the panel when every value drawn is 0 % (bars of zero height, lines on the floor)."""
    if len(values) and (values == 0).all():
        plotting.say_on_panel(ax, f"all arms 0 % exact match in every seed ({len(values)} values):\n"
                              "no arm learned at this scale")


def _not_run(out: Path, scale: str, title: str, what: str) -> pd.DataFrame:
    """The figure of an experiment that this configuration does not run (`<what>.run: false`)."""
    fig, axes = plotting.new_figure(1)
    _empty_panel(axes[0, 0], f"not run at this scale\n({what}.run: false)")
    plotting.save(fig, out, title, scale, False)
    return pd.DataFrame(columns=["run", "seed", "exact_match"])


def figure_tau_scaling(final: pd.DataFrame, specs: list[RunSpec], out: Path, scale: str) -> pd.DataFrame:
    from matplotlib.ticker import MaxNLocator

    if not specs:
        return _not_run(out, scale, "Latent lookahead: exact match against tau", "tau_scaling")
    df = _selected(final, specs)
    la = df[df["method"] == "lookahead"]
    colours = method_colours()  # as in training_curves: lookahead and NTP each in its own colour
    fig, axes = plotting.new_figure(1)
    ax = axes[0, 0]
    sns.lineplot(la, x="tau", y="exact_match_pct", errorbar=SEED_CI, marker="o", ax=ax,
                 color=colours["lookahead"], label="lookahead (bidirectional)")
    sns.stripplot(la, x="tau", y="exact_match_pct", native_scale=True, color="black", size=3, ax=ax)
    ntp = df[df["method"] == "ntp"]["exact_match_pct"]
    if len(ntp):
        what = "1 seed" if len(ntp) == 1 else f"mean of {len(ntp)} seeds"
        ax.axhline(ntp.mean(), ls="--", c=colours["ntp"], label=f"NTP ({what})")
    task = specs[0].task
    ax.set(xlabel="latent steps tau", ylabel="exact match (%)", title=TASK_LABELS[task], ylim=EXACT_YLIM)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # tau is a whole number
    _say_if_floor(ax, df["exact_match_pct"])
    ax.legend(fontsize=7)
    plotting.save(fig, out, "Latent lookahead: exact match against tau", scale, False)
    return df


def _arm_index(line, colours: dict) -> int | None:
    """The position in METHOD_ORDER of the method a line is drawn in (by its colour), or None."""
    from matplotlib.colors import to_rgb

    rgb = to_rgb(line.get_color())
    return next((i for i, m in enumerate(METHOD_ORDER) if np.allclose(to_rgb(colours[m]), rgb)), None)


def figure_training_curves(hist: pd.DataFrame, specs: list[RunSpec], out: Path, scale: str) -> pd.DataFrame:
    """Per task: held-out exact match (top) and the training loss (bottom, log scale) against step,
    per method; for lookahead also its two terms on a fixed training batch (next-token and latent),
    so that a plateau and a late fall can be seen in each arm's own loss."""
    df = _selected(hist, specs)
    tasks = [t for t in pl.TASKS if t in {s.task for s in specs}]  # the paper's order, not the specs'
    plotting.set_style()
    plt = plotting.pyplot()
    fig, axes = plt.subplots(2, len(tasks), figsize=(4.4 * len(tasks), 6.4), squeeze=False)
    colours = method_colours()
    for i, task in enumerate(tasks):
        sub = df[df["task"] == task]
        top, bottom = axes[0, i], axes[1, i]
        drawn = [m for m in METHOD_ORDER if m in set(sub["method"])]  # the legend names only these
        # each method its own line style and marker too (large to small), so that arms on top of one
        # another (all at 0 % exact match) still show
        styles = {k: v for k, v in plotting.style_args(METHOD_ORDER).items() if k != "style_order"}
        sns.lineplot(sub, x="step", y="exact_match_pct", hue="method", hue_order=drawn, style="method",
                     style_order=drawn, palette=colours, errorbar=SEED_CI, ax=top, legend=i == 0,
                     markersize=5, **styles)
        for line in top.lines:  # the earlier arm drawn larger, under the later ones
            line.set_markersize({0: 9, 1: 6.5}.get(_arm_index(line, colours), 4.5))
        top.set(title=TASK_LABELS[task], ylabel="held-out exact match (%)", ylim=EXACT_YLIM)
        _say_if_floor(top, sub["exact_match_pct"])
        loss = sub[sub["step"] > 0] if "train_loss" in sub else sub.iloc[:0]
        if len(loss):
            sns.lineplot(loss, x="step", y="train_loss", hue="method", hue_order=drawn, style="method",
                         style_order=drawn, markers=styles["markers"], dashes=False, palette=colours,
                         errorbar=SEED_CI, ax=bottom, legend=False)  # markers: a run of one epoch shows
            for line in bottom.lines:  # as on top: arms with (nearly) equal losses all stay visible
                line.set_markersize({0: 9, 1: 6.5}.get(_arm_index(line, colours), 4.5))
        la = sub[sub["method"] == "lookahead"]
        terms = (("next_token_loss", "--", "next-token term"), ("latent_loss", ":", "latent term"))
        for col, style, name in terms:
            if col in la and la[col].notna().any():
                sns.lineplot(la, x="step", y=col, color=colours["lookahead"], ls=style, errorbar=None,
                             ax=bottom, label=f"lookahead: {name} (fixed batch)")
        if len(loss):
            bottom.set_yscale("log")
        bottom.set(ylabel="training loss (epoch mean; log)", xlabel="step")
        plotting.step_axis(top)
        plotting.step_axis(bottom)
        if bottom.get_legend() is not None:
            bottom.legend(fontsize=7)
    plotting.save(fig, out, "Latent lookahead: held-out exact match and training loss during training",
                  scale, False)
    return df


def figure_ablation_mask(final: pd.DataFrame, specs: list[RunSpec], out: Path, scale: str) -> pd.DataFrame:
    if not specs:
        return _not_run(out, scale, "Latent lookahead: attention among latents", "ablation")
    df = _selected(final, specs)
    df["latent attention"] = df["mask"].map({"bidir": "bidirectional", "causal": "causal"})
    fig, axes = plotting.new_figure(1)
    ax = axes[0, 0]
    order = ["bidirectional", "causal"]
    sns.barplot(df, x="latent attention", y="exact_match_pct", order=order, errorbar=SEED_CI, ax=ax,
                alpha=0.8)
    sns.stripplot(df, x="latent attention", y="exact_match_pct", order=order, color="black", size=3, ax=ax)
    ax.set(ylabel="exact match (%)", title=f"{TASK_LABELS[specs[0].task]}, tau={df['tau'].iloc[0]}",
           ylim=EXACT_YLIM)
    _say_if_floor(ax, df["exact_match_pct"])
    seeds = int(df.groupby("latent attention").size().max()) if len(df) else 0
    ours = "bars, 90% t-interval" if seeds > 1 else f"bars and dots, {seeds} seed: no interval"
    plotting.save(fig, out, f"Latent lookahead: attention among latents ({ours})", scale, False)
    return df


def _first_example(examples: pd.DataFrame, specs: list[RunSpec]) -> pd.Series | None:
    """The first recorded example of the lowest seed of the figure's run, if any."""
    sel = examples[examples["run"].isin({s.name for s in specs})] if len(examples) else examples
    return None if sel.empty else sel.sort_values(["seed", "example"]).iloc[0]


def _lenient_grid(tokens: list[int], size: int) -> list[list[int]]:
    """A generated answer read as a grid whatever its shape: its digit and empty tokens fill the
    cells row by row (anything else, or a missing cell, reads 0)."""
    cells = [t - pl.DIGIT0 if pl.DIGIT0 < t <= pl.DIGIT0 + size else 0
             for t in tokens if t not in (pl.PAD, pl.EOS, pl.ROW)][: size * size]
    cells += [0] * (size * size - len(cells))
    return [cells[r * size:(r + 1) * size] for r in range(size)]


def _empty_panel(ax, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", fontsize=11, color="grey", transform=ax.transAxes)
    ax.set_axis_off()


def figure_maze_example(examples: pd.DataFrame, specs: list[RunSpec], out: Path, scale: str) -> pd.DataFrame:
    """One held-out maze: passages, start and goal, the true path and the model's path."""
    ex = _first_example(examples, specs)
    fig, axes = plotting.new_figure(1, width=4.6, height=4.6)
    ax = axes[0, 0]
    prompt = [t for t in ex["prompt"] if t != pl.PAD] if ex is not None else []  # prompts are left-padded
    grid_n = round(prompt.index(pl.QUERY) ** 0.5) if pl.QUERY in prompt else 0
    maze = pl.parse_maze(prompt, grid_n) if grid_n else None
    if maze is None:
        _empty_panel(ax, "maze not run at this scale" if ex is None else "no maze example recorded")
        plotting.save(fig, out, "Latent lookahead: one maze", scale, False)
        return pd.DataFrame(columns=["path", "step", "cell", "row", "col"])
    codes, start, goal = maze
    g = grid_n
    for cell, code in enumerate(codes):  # walls: a side is drawn where the passage is closed
        r, c = divmod(cell, g)
        if not code & 1:
            ax.plot([c - 0.5, c + 0.5], [r + 0.5, r + 0.5], c="black", lw=2)
        if not code & 2:
            ax.plot([c + 0.5, c + 0.5], [r - 0.5, r + 0.5], c="black", lw=2)
    ax.plot([-0.5, g - 0.5, g - 0.5], [-0.5, -0.5, g - 0.5], c="black", lw=2)
    ax.plot([-0.5, -0.5], [-0.5, g - 0.5], c="black", lw=2)
    rows = []
    for label, tokens, style in (("true path", ex["answer"], dict(c="#2e7d32", lw=6, alpha=0.45)),
                                 ("model's path", ex["prediction"], dict(c="#c62828", lw=2, ls="--",
                                                                         marker="o", ms=4))):
        cells = pl.path_cells(tokens, g) or []
        for i, cell in enumerate(cells):
            rows.append({"path": label, "step": i, "cell": cell, "row": cell // g, "col": cell % g})
        ax.plot([k % g for k in cells], [k // g for k in cells],
                label=label if cells else f"{label}: none (no cell tokens)", **style)
    for cell, name in ((start, "S"), (goal, "G")):
        ax.text(cell % g, cell // g, name, ha="center", va="center", fontsize=12, weight="bold")
    verdict = "solved" if ex["correct"] else "not solved (verifier)"
    ax.set(xlim=(-0.7, g - 0.3), ylim=(g - 0.3, -0.7), aspect="equal", xticks=[], yticks=[],
           title=f"{ex['method']}, seed {ex['seed']}: {verdict}")
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.02), ncol=2)
    plotting.save(fig, out, "Latent lookahead: one held-out maze", scale, False)
    return pd.DataFrame(rows)


def figure_sudoku9_example(examples: pd.DataFrame, specs: list[RunSpec], out: Path,
                           scale: str) -> pd.DataFrame:
    """One held-out 9x9 puzzle: the givens, the model's answer, and its wrong cells marked."""
    from matplotlib.patches import Rectangle

    ex = _first_example(examples, specs)
    fig, axes = plotting.new_figure(1, width=4.6, height=4.6)
    ax = axes[0, 0]
    given = [t for t in ex["prompt"] if t not in (pl.PAD, pl.SEP)] if ex is not None else []
    puzzle = pl.parse_grid(given, 9) if ex is not None else None
    if puzzle is None:
        _empty_panel(ax, "9x9 Sudoku not run at this scale" if ex is None else "no example recorded")
        plotting.save(fig, out, "Latent lookahead: one 9x9 Sudoku", scale, False)
        return pd.DataFrame(columns=["row", "col", "given", "true", "model", "wrong"])
    truth = pl.parse_grid([t for t in ex["answer"] if t not in (pl.PAD, pl.EOS)], 9)
    pred = _lenient_grid(ex["prediction"], 9)
    rows = []
    for r in range(9):
        for c in range(9):
            given, true, model = puzzle[r][c], truth[r][c], pred[r][c]
            wrong = not given and model != true
            rows.append({"row": r, "col": c, "given": given, "true": true, "model": model, "wrong": wrong})
            if wrong:
                ax.add_patch(Rectangle((c - 0.5, r - 0.5), 1, 1, color="#ef9a9a"))
            text = str(given or model or "?")
            ax.text(c, r, text, ha="center", va="center", fontsize=11,
                    color="black" if given else ("#c62828" if wrong else "#1565c0"),
                    weight="bold" if given else "normal")
    for k in range(10):
        lw = 2 if k % 3 == 0 else 0.5
        ax.plot([-0.5, 8.5], [k - 0.5, k - 0.5], c="black", lw=lw)
        ax.plot([k - 0.5, k - 0.5], [-0.5, 8.5], c="black", lw=lw)
    n_wrong = sum(r["wrong"] for r in rows)
    ax.set(xlim=(-0.6, 8.6), ylim=(8.6, -0.6), aspect="equal", xticks=[], yticks=[],
           title=f"{ex['method']}, seed {ex['seed']}: {n_wrong} wrong cell(s) (red); bold: givens")
    plotting.save(fig, out, "Latent lookahead: one held-out 9x9 Sudoku", scale, False)
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- claims


def _other_tasks(cfg: dict) -> str:
    if set(cfg.get("tasks", [])) - {"sudoku4"}:
        return ""
    return "only 4x4 Sudoku runs at this scale (latent_lookahead.tasks: [sudoku4])"


def _no_sudoku4(cfg: dict) -> str:
    if "sudoku4" in cfg.get("tasks", ["sudoku4"]):
        return ""
    return "4x4 Sudoku does not run in this configuration (latent_lookahead.tasks has no sudoku4)"


def _switched_off(cfg: dict, experiment: str) -> str:
    if cfg.get(experiment, {}).get("run", True):
        return ""
    return f"not run at this scale ({experiment}.run: false)"


def _gain(task: str, other: str) -> float:
    """The paper's Table 1 gain of lookahead over `other` on `task`, as a fraction."""
    return (PAPER_TABLE[task]["lookahead"] - PAPER_TABLE[task][other]) / 100


STATISTIC = "paired (per seed) difference in held-out exact match (verifier-scored), final step"
PER_TASK_USES = ("tasks", "data", "training")  # LL-3 and LL-6 read every task that runs
SINGLES_NOT_TRAINED = ("its task is not trained here (it runs where sudoku4 does, "
                       "unless latent_lookahead.singles.run is false)")
LL4_READING = ("that more latent steps give higher accuracy: the abstract motivates spending more "
               "compute on difficult tokens; the tau-scaling figure that shows it is not available offline")
LL5_READING = ("the attention mask among latents is not in the abstract; the ablation reported in the "
               "paper body is not available offline")


def _others(main: list[RunSpec]) -> list[str]:
    """The tasks besides 4x4 Sudoku among the accuracy table's runs, in LL-3 and LL-6's order."""
    return [t for t in ("sudoku9", "maze", "prosqa") if any(s.task == t for s in main)]


def _find(main: list[RunSpec], task: str, method: str) -> str:
    """The name of the run of `method` on `task` among `main`."""
    for r in main:
        if r.task == task and r.method == method:
            return r.name
    raise KeyError(f"{task}_{method}")


def _ll_vs(main: list[RunSpec], label: str, task: str, other: str, f: pd.DataFrame) -> Part:
    """Lookahead minus `other` on `task`: the paired difference in exact match, with the paper's gain."""
    return difference(label, exact_match(f, _find(main, task, "lookahead")),
                      exact_match(f, _find(main, task, other)), floor=FLOOR,
                      paper_value=_gain(task, other) if task in PAPER_TABLE else None, method="lookahead")


def _singles_measure(r: dict, main: list[RunSpec], label: str, other: str) -> list[Part]:
    """The falsifier's part: lookahead minus `other` on the puzzles answered in naked-single order."""
    return [_ll_vs(main, label, "sudoku4_singles", other, r["final"])]


def _singles_not_measurable(singles_ran: bool) -> str:
    """Why the falsifier is not measured: its task is not among the accuracy table's runs."""
    return "" if singles_ran else SINGLES_NOT_TRAINED


def _foresight_free(main: list[RunSpec], other: str) -> Falsifier:
    """Lookahead minus `other` on the 4x4 puzzles answered in naked-single order."""
    name = "NTP" if other == "ntp" else other
    label = f"{TASK_LABELS['sudoku4_singles']}: lookahead minus {name} exact match"
    singles_ran = any(r.task == "sudoku4_singles" for r in main)
    return Falsifier(origin="our construction",  # a setting we chose: the paper draws no such contrast
                     setting=SINGLES_SETTING, why=SINGLES_WHY,
                     measure=lambda r: _singles_measure(r, main, label, other),
                     not_measurable=lambda cfg: _singles_not_measurable(singles_ran))


def _ll1(r: dict, main: list[RunSpec]) -> list[Part]:
    return [_ll_vs(main, "4x4 Sudoku: lookahead minus NTP exact match", "sudoku4", "ntp", r["final"])]


def _ll2(r: dict, main: list[RunSpec]) -> list[Part]:
    return [_ll_vs(main, "4x4 Sudoku: lookahead minus pause exact match (same tau)", "sudoku4", "pause",
                   r["final"])]


def _ll3(r: dict, main: list[RunSpec], others: list[str]) -> list[Part]:
    f = r["final"]
    return [_ll_vs(main, f"{TASK_LABELS[t]}: lookahead minus NTP exact match", t, "ntp", f) for t in others]


def _ll6(r: dict, main: list[RunSpec], others: list[str]) -> list[Part]:
    return [_ll_vs(main, f"{TASK_LABELS[t]}: lookahead minus pause exact match (same tau)", t, "pause",
                   r["final"]) for t in others]


def _ll4(r: dict, runs: dict[str, list[RunSpec]]) -> list[Part]:
    la = [s for s in runs["tau_scaling"] if s.method == "lookahead"]
    f = r["final"]
    taus = {s.name: f[f["run"] == s.name]["tau"] for s in la}
    if len(la) < 2 or any(t.empty for t in taus.values()):
        raise KeyError("two or more tau values")
    ordered = sorted(la, key=lambda s: int(taus[s.name].iloc[0]))
    lo, hi = ordered[0], ordered[-1]
    t_lo, t_hi = int(taus[lo.name].iloc[0]), int(taus[hi.name].iloc[0])
    return [difference(f"{TASK_LABELS[lo.task]}: exact match at tau={t_hi} minus tau={t_lo}",
                       exact_match(f, hi.name), exact_match(f, lo.name), floor=FLOOR)]


def _ll5(r: dict, runs: dict[str, list[RunSpec]]) -> list[Part]:
    bid, cau = runs["ablation_mask"]
    return [difference("bidirectional minus causal latent attention, exact match",
                       exact_match(r["final"], bid.name), exact_match(r["final"], cau.name), floor=FLOOR)]


def _tau_scaling_task(runs: dict[str, list[RunSpec]]) -> str:
    """The task of the tau-scaling runs (4x4 Sudoku where none run)."""
    return runs["tau_scaling"][0].task if runs["tau_scaling"] else "sudoku4"


def _ablation_task(runs: dict[str, list[RunSpec]]) -> str:
    """The task of the attention-mask ablation's runs (4x4 Sudoku where none run)."""
    return runs["ablation_mask"][0].task if runs["ablation_mask"] else "sudoku4"


def claim_ll1(runs: dict[str, list[RunSpec]], cfg: dict) -> Claim:
    main = runs["accuracy_table"]
    return Claim(
        id="LL-1",
        statement="On 4x4 Sudoku latent lookahead beats next-token prediction.",
        paper_value="93.5 vs 78.0 (+15.5 points)",
        paper_source=SOURCE,
        statistic=STATISTIC,
        rule="CI > 0",
        measure=lambda r: _ll1(r, main),
        source=OUTPERFORMS,
        uses=("data.sudoku4", "training.sudoku4"),
        not_measurable=_no_sudoku4,
        reading=SUBSTANTIALLY,
        figures=("accuracy_table", "training_curves"),
        falsifier=_foresight_free(main, "ntp"),
    )


def claim_ll2(runs: dict[str, list[RunSpec]], cfg: dict) -> Claim:
    main = runs["accuracy_table"]
    return Claim(
        id="LL-2",
        statement="On 4x4 Sudoku latent lookahead beats pause tokens at equal tau.",
        paper_value="93.5 vs 86.0 (+7.5 points)",
        paper_source=SOURCE,
        statistic=STATISTIC,
        rule="CI > 0",
        measure=lambda r: _ll2(r, main),
        source=OUTPERFORMS,
        uses=("data.sudoku4", "training.sudoku4"),
        not_measurable=_no_sudoku4,
        reading=SUBSTANTIALLY,
        figures=("accuracy_table", "training_curves"),
        falsifier=_foresight_free(main, "pause"),
    )


def claim_ll3(runs: dict[str, list[RunSpec]], cfg: dict) -> Claim:
    main = runs["accuracy_table"]
    others = _others(main)
    return Claim(
        id="LL-3",
        statement="Lookahead beats NTP on 9x9 Sudoku, mazes and ProsQA, not only 4x4 Sudoku (every "
        "task run is a part).",
        paper_value="+23.0 (9x9), +3.0 (maze), +11.3 (ProsQA) points",
        paper_source=SOURCE,
        statistic=STATISTIC,
        rule="every part's CI > 0",
        measure=lambda r: _ll3(r, main, others),
        source=OUTPERFORMS,
        uses=PER_TASK_USES,
        not_measurable=_other_tasks,
        reading=SUBSTANTIALLY,
        figures=("accuracy_table",),
        falsifier=_foresight_free(main, "ntp"),
    )


def claim_ll4(runs: dict[str, list[RunSpec]], cfg: dict) -> Claim:
    ts = _tau_scaling_task(runs)
    return Claim(
        id="LL-4",
        statement="Accuracy rises with the number of latent steps tau (the paper shows it on 9x9 "
        "Sudoku).",
        paper_value="rises from tau=2 to tau=70 on 9x9 Sudoku (qualitative; figure values not "
        "verified offline)",
        paper_source="arXiv 2603.20219, tau-scaling figure",
        statistic="paired difference, largest minus smallest tau, on the tau-scaling task",
        rule="CI > 0",
        measure=lambda r: _ll4(r, runs),
        source=COMPUTE,
        kind="hypothesis",
        reading=LL4_READING,
        uses=("tau_scaling", f"data.{ts}", f"training.{ts}"),
        not_measurable=lambda cfg: _switched_off(cfg, "tau_scaling"),
        figures=("tau_scaling",),
    )


def claim_ll5(runs: dict[str, list[RunSpec]], cfg: dict) -> Claim:
    ab = _ablation_task(runs)
    return Claim(
        id="LL-5",
        statement="Bidirectional attention among the latents of a thought beats causal attention.",
        paper_value="bidirectional better (qualitative; exact values not verified offline)",
        paper_source="arXiv 2603.20219, attention ablation",
        statistic=STATISTIC,
        rule="CI > 0",
        measure=lambda r: _ll5(r, runs),
        source=LOOKAHEAD,
        kind="hypothesis",
        reading=LL5_READING,
        uses=("ablation", f"data.{ab}", f"training.{ab}"),
        not_measurable=lambda cfg: _switched_off(cfg, "ablation"),
        figures=("ablation_mask",),
    )


def claim_ll6(runs: dict[str, list[RunSpec]], cfg: dict) -> Claim:
    main = runs["accuracy_table"]
    others = _others(main)
    return Claim(
        id="LL-6",
        statement="Lookahead beats pause tokens on every task, not only 4x4 Sudoku.",
        paper_value="+23.0 (9x9), +2.0 (maze), +9.3 (ProsQA) points over pause",
        paper_source=SOURCE,
        statistic=STATISTIC,
        rule="every part's CI > 0",
        measure=lambda r: _ll6(r, main, others),
        source=OUTPERFORMS,
        uses=PER_TASK_USES,
        not_measurable=_other_tasks,
        figures=("accuracy_table",),
        falsifier=_foresight_free(main, "pause"),
    )


CLAIMS = (claim_ll1, claim_ll2, claim_ll3, claim_ll4, claim_ll5, claim_ll6)


def claims(runs: dict[str, list[RunSpec]], cfg: dict | None = None) -> list[Claim]:
    """LL-1..LL-6 for the run names of this configuration (`cfg` is not read: every threshold is 0)."""
    return [make(runs, cfg) for make in CLAIMS]


# ---------------------------------------------------------------- the paper's declaration


def load_results(files: dict[str, list[str]]) -> dict[str, pd.DataFrame]:
    hist = load_histories(files["metrics"])
    return {"history": hist, "final": final_rows(hist) if len(hist) else hist,
            "examples": load_examples(files["metrics"])}


FIGURES = (
    Figure("accuracy_table", "Held-out exact match (scored by each task's verifier) of next-token "
           "prediction, pause tokens and latent lookahead per task; bars: mean over seeds, with a 90% "
           "t-interval when there are two or more (the title says which), dots: seeds, red stars: the "
           "paper's Table 1. The table also lists tau and the paper's numbers.", figure_accuracy_table,
           "final", takes_subset=False),
    Figure("tau_scaling", "Exact match of latent lookahead (bidirectional latents) against the number of "
           "latent steps tau on one task; band: 90% t-interval over seeds, dots: seeds; dashed: NTP mean.",
           figure_tau_scaling, "final", takes_subset=False, empty_ok=True),
    Figure("training_curves", "Held-out exact match (top) and training loss (bottom: each epoch's mean "
           "over its steps, log scale) against optimizer step for each method and task; bands: 90% "
           "t-interval over seeds. Lookahead's loss is also split into its two terms (next-token, "
           "latent), each measured on the first 256 training examples without dropout, mean over seeds.",
           figure_training_curves, "history", takes_subset=False),
    Figure("ablation_mask", "Latent lookahead with bidirectional versus causal attention among the "
           "latents of a thought (same tau); bars: mean over seeds, with a 90% t-interval when there are two "
           "or more (the title says which), dots: seeds.",
           figure_ablation_mask, "final", takes_subset=False, empty_ok=True),
    Figure("maze_example", "One held-out maze (the first of the test split) with its walls, start S and "
           "goal G: the true shortest path (green) and the path generated by latent lookahead (red, "
           "dashed), lowest seed; the title says whether the verifier accepts it.", figure_maze_example,
           "examples", takes_subset=False, empty_ok=True),
    Figure("sudoku9_example", "One held-out 9x9 Sudoku (the first of the test split): givens in bold, the "
           "cells latent lookahead filled in blue, wrong ones in red on a red background, lowest seed.",
           figure_sudoku9_example, "examples", takes_subset=False, empty_ok=True),
)

# ---------------------------------------------------------------- cost (the plan)


def task_lengths(task: str, data: dict) -> tuple[int, int]:
    """Longest prompt and answer the task's generator can make (see the module docstring)."""
    import numpy as np

    from replikit.data.tasks import planning as pl


    if task in ("sudoku4", "sudoku9"):
        size = 4 if task == "sudoku4" else 9
        grid = [[0] * size for _ in range(size)]
        prompt, answer = pl.sudoku_example(grid, grid)
    elif task == "sudoku4_singles":  # the most empty cells: as many (cell, digit) pairs, and <eos>
        prompt = pl.grid_tokens([[0] * 4 for _ in range(4)]) + [pl.SEP]
        answer = [pl.PAD] * (2 * data["max_empty"] + 1)
    elif task == "maze":
        g = data["grid_n"]
        prompt, answer = pl.maze_example(np.zeros((2, g, g), bool), (0, 0), (0, 0), [(0, 0)] * g * g)
    elif task == "prosqa":
        edges = sum(min(data["max_parents"], child) for child in range(2, data["n_nodes"]))
        return 2 * edges + 5, data["max_depth"] + 1
    else:
        raise ValueError(f"unknown latent-lookahead task {task!r}")
    return len(prompt), len(answer)


def cost(cfg: dict, run: str):
    """The plan's cost model of one training job (`replikit.plan.bill`): epochs * floor(n_train / batch)
    steps, n_train from the task's split fractions; sequences at the longest prompt and answer the
    task's generator can make (`task_lengths`, an upper bound). The step is the one a CUDA run takes
    (switches `auto` resolved on CUDA, bf16 autocast as configured); a CPU job's step (`cpu_build`)
    resolves them on the CPU (at `auto`: the recomputing reference rollout, no fused Adam) in fp32."""
    import torch

    from replikit.core.training import make_optimizer
    from replikit.data.tasks import planning as pl
    from replikit.methods.step_cost import JobPlan, Piece, Setup, batches_per_epoch, fake_module
    from replikit.models import lookahead_gpt as lg
    from replikit.papers.latent_lookahead import RunSpec, performance

    spec = RunSpec.parse(run)
    own = pl.settings_task(spec.task)
    data, t, m = cfg["data"][own], cfg["training"][own], cfg["model"]
    n = pl.split_names(data["n"], data["splits"], data["seed"]).count("train")
    n_test = min(cfg["eval_max"], data["n"] - n)
    P, A = task_lengths(spec.task, data)
    tau = 0 if spec.method == "ntp" else (A if spec.tau == "A" else int(spec.tau))
    perf = performance(cfg, torch.device("cuda"), tau)
    cpu_perf = performance(cfg, torch.device("cpu"), tau)
    b = min(t["batch_size"], n)
    bf16 = bool(cfg["bf16"])

    def setup(perf: dict = perf, bf16: bool = bf16) -> Setup:
        """latent_lookahead.Run.method_loss with the switches `perf` (KV cache, fused Adam,
        checkpointed rollout); bf16 autocast emulated with CPU autocast."""
        model = fake_module(lambda: lg.LookaheadGPT(lg.GPTConfig(
            vocab_size=pl.VOCAB_SIZE, block_size=m["block_size"], n_layer=m["n_layer"], n_head=m["n_head"],
            n_embd=m["n_embd"], dropout=t["dropout"])))
        o = cfg["optimizer"]
        fused = o["name"] == "adam" and perf["fused_adam"]
        opt = torch.optim.Adam(model.parameters(), lr=o["lr"], fused=True) if fused \
            else make_optimizer(o["name"], model.parameters(), o["lr"])
        prompts, answers = torch.zeros(n, P, dtype=torch.long), torch.zeros(n, A, dtype=torch.long)
        tests = [torch.zeros(n_test, P, dtype=torch.long), torch.zeros(n_test, A, dtype=torch.long)]

        def loss() -> torch.Tensor:
            idx = torch.randint(0, n, (b,))
            p, a = prompts[idx], answers[idx]
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                if spec.method == "ntp":
                    return lg.ntp_loss(model, p, a, pl.PAD)
                if spec.method == "pause":
                    return lg.pause_loss(model, p, a, pl.PAD, pl.PAUSE, tau)
                return lg.lookahead_loss(model, p, a, pl.PAD, tau, spec.mask == "bidir",
                                         kv_cache=perf["kv_cache"], checkpoint=perf["checkpoint_rollout"])

        return Setup(model, loss, opt, [prompts, answers, *tests])

    def cpu_setup() -> Setup:
        return setup(cpu_perf, False)

    key = ("ll", str(m), spec.method, tau, spec.mask, P, A, b, n, t["dropout"], str(perf), str(cpu_perf),
           bf16)
    steps = t["epochs"] * batches_per_epoch(n, b)
    setting = f"latent_lookahead.training.{spec.task}.batch_size"
    if spec.method == "lookahead" and not perf["checkpoint_rollout"]:
        setting += " (or latent_lookahead.performance.checkpoint_rollout: true)"
    piece = Piece(key, setup, steps, bf16, cpu_setup if cpu_perf != perf or bf16 else None)
    return JobPlan([piece], f"epochs {t['epochs']} x floor({n}/{b})", setting)


SPEC = Paper(
    ll.RUNS, cost=cost, prefix="ll",
    title="Thinking into the Future: Latent Lookahead Training for Transformers "
    "(Noci et al., 2026)", arxiv="2603.20219",
    figures=FIGURES,
    claims=claims,
    load_results=load_results,
    departures=(
        Departure("training.sudoku9.tau", "answer length = 89 tokens (81 digits + 8 row separators)", "70",
                  "our 9x9 serialization adds row separators"),
        Departure("data.prosqa", "ProsQA-style graphs from our own documented generator", "ProsQA (Coconut's "
                  "split)", "Coconut's training split is not available offline"),
    ),
    unverified=("tau_scaling",),  # the grid's interior taus are ours
    retrain_free_edit=("tau_scaling", {"task": "sudoku4", "taus": [1, 3]}),
)
