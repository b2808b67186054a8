"""Read Sudoku ladder rung 3 (steps_32x) as README.md beside this file fixes: per arm and seed, exact match
at rung 2's length (7,168 steps) and at the end (14,336), the first evaluated step at or above 50 %, and
whether the training loss (the epoch's running mean) has flattened: fell by less than 5 % over the last
quarter (10,752 -> 14,336), the rule of the 2026-11-27 check.
Usage: read.py results/ladder/latent_lookahead
Other rungs (added 2026-11-28 for rung 4, the defaults unchanged): read.py TREE RUNG MID,Q3,END SEEDS,
e.g. read.py results/ladder/latent_lookahead lr_paper 14336,21504,28672 0,1,2,3,4"""

import json
import sys
from pathlib import Path

RUNS = "{rung}/results/latent_lookahead/runs"
ARMS = {"ntp": "train_task-sudoku4_method-ntp_tau-0_mask-bidir",
        "pause": "train_task-sudoku4_method-pause_tau-A_mask-bidir",
        "lookahead": "train_task-sudoku4_method-lookahead_tau-A_mask-bidir"}


def at(history: list[dict], step: int) -> dict:
    return next(e for e in history if e["step"] == step)


def main(tree: Path, rung: str = "steps_32x", steps: tuple[int, int, int] = (7168, 10752, 14336),
         seeds: tuple[int, ...] = (5, 6, 7, 8, 9)) -> None:
    runs = RUNS.format(rung=rung)
    for arm, run in ARMS.items():
        flat = 0
        for seed in seeds:
            path = tree / runs / run / f"seed{seed}" / "metrics.json"
            if not path.exists():
                print(f"{arm} seed {seed}: not run")
                continue
            h = json.loads(path.read_text())["history"]
            mid, q3, end = (at(h, s) for s in steps)
            past = next((e["step"] for e in h if e["exact_match"] >= 0.5), None)
            fall = 1 - end["train_loss"] / q3["train_loss"]
            flat += fall < 0.05
            print(f"{arm} seed {seed}: exact match {100 * mid['exact_match']:.1f} % at {steps[0]:,}, "
                  f"{100 * end['exact_match']:.1f} % at {steps[2]:,}; past 50 % at step {past}; loss "
                  f"{q3['train_loss']:.4f} -> {end['train_loss']:.4f} (last quarter -{fall:.0%}, "
                  f"{'flattened' if fall < 0.05 else 'still falling'})")
        print(f"{arm}: loss flattened in {flat} of {len(seeds)} seeds\n")


if __name__ == "__main__":
    if len(sys.argv) > 2:
        main(Path(sys.argv[1]), sys.argv[2], tuple(int(s) for s in sys.argv[3].split(",")),
             tuple(int(s) for s in sys.argv[4].split(",")))
    else:
        main(Path(sys.argv[1]))
