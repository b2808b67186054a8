"""Aggregation, figures and claims for the latent-lookahead replication."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import seaborn as sns

from .. import plotting
from ..aggregate import final_rows, per_seed
from ..claims import Claim, Part, difference
from ..io import read_json
from . import latent_lookahead as ll
from .interface import Paper, figures_of
from .latent_lookahead import RunSpec

SOURCE = "arXiv 2603.20219 (OpenReview version), Table 1"
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
TASK_LABELS = {"sudoku4": "4x4 Sudoku", "sudoku9": "9x9 Sudoku", "prosqa": "ProsQA (regen.)",
               "maze": "Maze"}


def load_histories(paths: list[str | Path]) -> pd.DataFrame:
    """One row per (run, seed, evaluation), with the run's task, method, tau and mask."""
    rows = []
    for p in paths:
        m = read_json(p)
        spec = RunSpec.parse(m["run"])
        for h in m["history"]:
            rows.append({"run": m["run"], "seed": m["seed"], "task": spec.task, "method": spec.method,
                         "tau": m["tau"], "mask": spec.mask, **h})
    return pd.DataFrame(rows)


def exact_match(final: pd.DataFrame, run: str) -> dict[int, float]:
    return per_seed(final, run, "exact_match")


def method_label(row: pd.Series) -> str:
    return row["method"] if row["method"] == "ntp" else f"{row['method']} (tau={row['tau']})"


# ---------------------------------------------------------------- figures


def _selected(frame: pd.DataFrame, specs: list[RunSpec]) -> pd.DataFrame:
    """The rows of a figure's runs, with exact match in percent."""
    df = frame[frame["run"].isin({s.name for s in specs})].copy()
    df["exact_match_pct"] = 100 * df["exact_match"]
    return df


def figure_accuracy_table(final: pd.DataFrame, specs: list[RunSpec], out: Path, scale: str) -> pd.DataFrame:
    df = _selected(final, specs)
    tasks = list(dict.fromkeys(s.task for s in specs))
    table = (df.groupby(["task", "method"])["exact_match_pct"].agg(["mean", "std", "count"]).reset_index()
             .rename(columns={"mean": "ours_mean", "std": "ours_std", "count": "n_seeds"}))
    table["tau"] = table.apply(lambda r: df[(df.task == r.task) & (df.method == r.method)]["tau"].iloc[0],
                               axis=1)
    table["paper"] = [PAPER_TABLE[t][m] for t, m in zip(table["task"], table["method"], strict=True)]
    fig, axes = plotting.new_figure(len(tasks), width=3.6)
    order = list(METHOD_ORDER)
    for ax, task in zip(axes[0], tasks, strict=True):
        sub = df[df["task"] == task]
        sns.barplot(sub, x="method", y="exact_match_pct", order=order, errorbar=("ci", 95), ax=ax,
                    alpha=0.8)
        sns.stripplot(sub, x="method", y="exact_match_pct", order=order, color="black", size=3, ax=ax)
        ax.scatter(order, [PAPER_TABLE[task][m] for m in order], marker="*", s=120, c="red",
                   zorder=5, label="paper (Table 1)")
        tau = sub[sub["method"] != "ntp"]["tau"]
        ax.set(title=f"{TASK_LABELS[task]} (tau={tau.iloc[0] if len(tau) else '-'})", xlabel="",
               ylabel="exact match (%)", ylim=(0, 102))
        ax.legend(fontsize=7, loc="lower right")
    plotting.save(fig, out, "Latent lookahead: exact match by method (ours: bars, 95% CI; paper: stars)",
                  scale, False)
    return table


def figure_tau_scaling(final: pd.DataFrame, specs: list[RunSpec], out: Path, scale: str) -> pd.DataFrame:
    df = _selected(final, specs)
    la = df[df["method"] == "lookahead"]
    fig, axes = plotting.new_figure(1)
    ax = axes[0, 0]
    sns.lineplot(la, x="tau", y="exact_match_pct", errorbar=("ci", 95), marker="o", ax=ax,
                 label="lookahead (bidirectional)")
    sns.stripplot(la, x="tau", y="exact_match_pct", native_scale=True, color="black", size=3, ax=ax)
    ntp = df[df["method"] == "ntp"]["exact_match_pct"]
    if len(ntp):
        ax.axhline(ntp.mean(), ls="--", c="grey", label=f"NTP (mean of {len(ntp)} seeds)")
    task = specs[0].task
    ax.set(xlabel="latent steps tau", ylabel="exact match (%)", title=TASK_LABELS[task], ylim=(0, 102))
    ax.legend(fontsize=7)
    plotting.save(fig, out, "Latent lookahead: exact match against tau", scale, False)
    return df


def figure_training_curves(hist: pd.DataFrame, specs: list[RunSpec], out: Path, scale: str) -> pd.DataFrame:
    df = _selected(hist, specs)
    tasks = list(dict.fromkeys(s.task for s in specs))
    fig, axes = plotting.new_figure(len(tasks), width=4.0)
    for i, (ax, task) in enumerate(zip(axes[0], tasks, strict=True)):
        sns.lineplot(df[df["task"] == task], x="step", y="exact_match_pct", hue="method",
                     hue_order=list(METHOD_ORDER), errorbar=("ci", 95), marker="o", ax=ax, legend=i == 0)
        ax.set(title=TASK_LABELS[task], ylabel="held-out exact match (%)", ylim=(0, 102))
    plotting.save(fig, out, "Latent lookahead: held-out exact match during training", scale, False)
    return df


def figure_ablation_mask(final: pd.DataFrame, specs: list[RunSpec], out: Path, scale: str) -> pd.DataFrame:
    df = _selected(final, specs)
    df["latent attention"] = df["mask"].map({"bidir": "bidirectional", "causal": "causal"})
    fig, axes = plotting.new_figure(1)
    ax = axes[0, 0]
    order = ["bidirectional", "causal"]
    sns.barplot(df, x="latent attention", y="exact_match_pct", order=order, errorbar=("ci", 95), ax=ax,
                alpha=0.8)
    sns.stripplot(df, x="latent attention", y="exact_match_pct", order=order, color="black", size=3, ax=ax)
    ax.set(ylabel="exact match (%)", title=f"{TASK_LABELS[specs[0].task]}, tau={df['tau'].iloc[0]}",
           ylim=(0, 102))
    plotting.save(fig, out, "Latent lookahead: attention among latents", scale, False)
    return df


# ---------------------------------------------------------------- claims


def _other_tasks(cfg: dict) -> str:
    if set(cfg.get("tasks", [])) - {"sudoku4"}:
        return ""
    return "only 4x4 Sudoku runs at this scale (latent_lookahead.tasks: [sudoku4])"


def _gain(task: str, other: str) -> float:
    """The paper's Table 1 gain of lookahead over `other` on `task`, as a fraction."""
    return (PAPER_TABLE[task]["lookahead"] - PAPER_TABLE[task][other]) / 100


def claims(runs: dict[str, list[RunSpec]]) -> list[Claim]:
    """LL-1..LL-6 for the run names of this configuration."""
    main = runs["accuracy_table"]
    others = [t for t in ("sudoku9", "maze", "prosqa") if any(s.task == t for s in main)]

    def find(task: str, method: str) -> str:
        for r in main:
            if r.task == task and r.method == method:
                return r.name
        raise KeyError(f"{task}_{method}")

    def ll_vs(label: str, task: str, other: str, f: pd.DataFrame) -> Part:
        return difference(label, exact_match(f, find(task, "lookahead")), exact_match(f, find(task, other)),
                          floor=FLOOR, paper_value=_gain(task, other))

    def ll1(r: dict) -> list[Part]:
        return [ll_vs("4x4 Sudoku: lookahead minus NTP exact match", "sudoku4", "ntp", r["final"])]

    def ll2(r: dict) -> list[Part]:
        return [ll_vs("4x4 Sudoku: lookahead minus pause exact match (same tau)", "sudoku4", "pause",
                      r["final"])]

    def ll3(r: dict) -> list[Part]:
        return [ll_vs(f"{TASK_LABELS[t]}: lookahead minus NTP exact match", t, "ntp", r["final"])
                for t in others]

    def ll6(r: dict) -> list[Part]:
        return [ll_vs(f"{TASK_LABELS[t]}: lookahead minus pause exact match (same tau)", t, "pause",
                      r["final"]) for t in others]

    def ll4(r: dict) -> list[Part]:
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

    def ll5(r: dict) -> list[Part]:
        bid, cau = runs["ablation_mask"]
        return [difference("bidirectional minus causal latent attention, exact match",
                           exact_match(r["final"], bid.name), exact_match(r["final"], cau.name), floor=FLOOR)]

    stat = "paired (per seed) difference in held-out exact match (verifier-scored), final step"
    per_task = ("tasks", "data", "training")
    ts, ab = runs["tau_scaling"][0].task, runs["ablation_mask"][0].task
    return [
        Claim("LL-1", "On 4x4 Sudoku latent lookahead beats next-token prediction.",
              "93.5 vs 78.0 (+15.5 points)", SOURCE, stat, "CI > 0", ll1,
              uses=("data.sudoku4", "training.sudoku4")),
        Claim("LL-2", "On 4x4 Sudoku latent lookahead beats pause tokens at equal tau.",
              "93.5 vs 86.0 (+7.5 points)", SOURCE, stat, "CI > 0", ll2,
              uses=("data.sudoku4", "training.sudoku4")),
        Claim("LL-3", "On 9x9 Sudoku, mazes and ProsQA lookahead is at least as good as NTP (judged "
              "as: beats it; every task run is a part).",
              "+23.0 (9x9), +3.0 (maze), +11.3 (ProsQA) points", SOURCE, stat, "every part's CI > 0", ll3,
              uses=per_task, not_measurable=_other_tasks),
        Claim("LL-4", "Accuracy rises with the number of latent steps tau (the paper shows it on 9x9 "
              "Sudoku).", "rises from tau=2 to tau=70 on 9x9 Sudoku (qualitative; figure values not "
              "verified offline)", "arXiv 2603.20219, tau-scaling figure",
              "paired difference, largest minus smallest tau, on the tau-scaling task", "CI > 0", ll4,
              uses=("tau_scaling", f"data.{ts}", f"training.{ts}")),
        Claim("LL-5", "Bidirectional attention among the latents of a thought beats causal attention.",
              "bidirectional better (qualitative; exact values not verified offline)",
              "arXiv 2603.20219, attention ablation", stat, "CI > 0", ll5,
              uses=("ablation", f"data.{ab}", f"training.{ab}")),
        Claim("LL-6", "Lookahead beats pause tokens on every task, not only 4x4 Sudoku.",
              "+23.0 (9x9), +2.0 (maze), +9.3 (ProsQA) points over pause", SOURCE, stat,
              "every part's CI > 0", ll6, uses=per_task, not_measurable=_other_tasks),
    ]


# ---------------------------------------------------------------- the paper's declaration


def load_results(files: dict[str, list[str]]) -> dict[str, pd.DataFrame]:
    hist = load_histories(files["metrics"])
    return {"history": hist, "final": final_rows(hist)}


CAPTIONS = {
    "accuracy_table": "Held-out exact match (scored by each task's verifier) of next-token prediction, "
    "pause tokens and latent lookahead per task; bars: mean and 95% bootstrap CI over seeds, dots: seeds, "
    "red stars: the paper's Table 1. The table also lists tau and the paper's numbers.",
    "tau_scaling": "Exact match of latent lookahead (bidirectional latents) against the number of latent "
    "steps tau on one task; band: 95% CI over seeds, dots: seeds; dashed: NTP mean.",
    "training_curves": "Held-out exact match against optimizer step for each method and task; bands: 95% "
    "CI over seeds.",
    "ablation_mask": "Latent lookahead with bidirectional versus causal attention among the latents of a "
    "thought (same tau); bars: mean and 95% CI over seeds, dots: seeds.",
}
FIGURE_FUNCS = {"accuracy_table": figure_accuracy_table, "tau_scaling": figure_tau_scaling,
                "training_curves": figure_training_curves, "ablation_mask": figure_ablation_mask}

SPEC = Paper.declare(
    ll, prefix="ll", title="Thinking into the Future: Latent Lookahead Training for Transformers "
    "(Noci et al., 2026)", arxiv="2603.20219",
    figures=figures_of(CAPTIONS, FIGURE_FUNCS, takes_subset=False,
                       frames={n: "history" if n == "training_curves" else "final" for n in CAPTIONS}),
    claims=lambda runs, cfg: claims(runs),
    load_results=load_results,
)
