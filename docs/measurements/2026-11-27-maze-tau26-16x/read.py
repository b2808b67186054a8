"""Read the maze rung 2 check at twice the steps, as README.md beside this file fixes before the runs.

    .venv/bin/python docs/measurements/2026-11-27-maze-tau26-16x/read.py

Prints, per arm, each seed's held-out exact match at steps 7,168 and 14,336 (and rung 2's at 7,168,
the prefix check), the change with its mean and 95 % t-interval, the training loss of the last
interval at both steps and its relative drop over the last quarter, and lookahead - NTP at 14,336.
It also draws both arms' held-out exact match and training loss against steps (the pipeline's
training-curves figure, which would otherwise train pause too) into FIGURE.
"""

from __future__ import annotations

import json
from pathlib import Path

from replikit.papers.latent_lookahead import RunSpec
from replikit.papers.latent_lookahead_analysis import figure_training_curves, load_histories
from replikit.scoring.stats import t_interval

LADDER = Path("results/ladder/latent_lookahead.maze")
CHECK = LADDER / "control_tau26_16x/results/latent_lookahead/runs"
RUNG2 = LADDER / "tau_answer/results/latent_lookahead/runs"
ARMS = {"lookahead": "train_task-maze_method-lookahead_tau-A_mask-bidir",
        "ntp": "train_task-maze_method-ntp_tau-0_mask-bidir"}
SEEDS = range(5)
FIGURE = LADDER / "control_tau26_16x/results/latent_lookahead/figures/training_curves_16x.png"
MID, END, QUARTER = 7168, 14336, 10752


def at(history: list[dict], step: int) -> dict:
    """The evaluation row logged at `step`."""
    rows = [r for r in history if r["step"] == step]
    if not rows:
        raise SystemExit(f"no evaluation at step {step}: has the run finished?")
    return rows[0]


def history(root: Path, run: str, seed: int) -> list[dict]:
    return json.loads((root / run / f"seed{seed}" / "metrics.json").read_text())["history"]


def ci(values: list[float]) -> str:
    mean, low, high = t_interval(values, 0.95)
    return f"{mean:+.3f} [{low:+.3f}, {high:+.3f}]"


def main() -> None:
    final: dict[str, list[float]] = {}
    for arm, run in ARMS.items():
        print(f"== {arm}")
        gains, drops = [], []
        for seed in SEEDS:
            h = history(CHECK, run, seed)
            old = at(history(RUNG2, run, seed), MID)["exact_match"]
            mid, quarter, end = at(h, MID), at(h, QUARTER), at(h, END)
            gains.append(end["exact_match"] - mid["exact_match"])
            drops.append(1 - end["train_loss"] / quarter["train_loss"])
            latent = (f"  latent {mid['latent_loss']:.3f} -> {end['latent_loss']:.3f}"
                      if arm == "lookahead" else "")
            print(f"seed {seed}: exact match rung 2 {old:.3f} | here {mid['exact_match']:.3f} -> "
                  f"{end['exact_match']:.3f}  train loss {mid['train_loss']:.3f} -> "
                  f"{quarter['train_loss']:.3f} -> {end['train_loss']:.3f}{latent}")
            final.setdefault(arm, []).append(end["exact_match"])
        print(f"gain 7,168 -> 14,336: {ci(gains)}; loss drop over the last quarter: "
              + ", ".join(f"{d:.1%}" for d in drops))
        print("mean exact match by step:", ", ".join(
            f"{r['step']}: {sum(at(history(CHECK, run, s), r['step'])['exact_match'] for s in SEEDS) / 5:.3f}"
            for r in history(CHECK, run, 0) if r["step"] % 1792 == 0))
    diff = [a - b for a, b in zip(final["lookahead"], final["ntp"], strict=True)]
    print("lookahead - NTP at 14,336:", ", ".join(f"{d:+.3f}" for d in diff), "->", ci(diff))
    paths = [CHECK / run / f"seed{seed}" / "metrics.json" for run in ARMS.values() for seed in SEEDS]
    FIGURE.parent.mkdir(parents=True, exist_ok=True)
    figure_training_curves(load_histories(paths), [RunSpec.parse(run) for run in ARMS.values()], FIGURE,
                           "default (maze rung 2, 2x the steps: a check outside the ladder)")
    print("figure:", FIGURE)


if __name__ == "__main__":
    main()
