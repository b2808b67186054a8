"""Read the tau-19 check (README.md beside this file): per seed that ran, exact match and training loss at
steps 7,168, 10,752 and 14,336 against rung 2's run, whether it learned, and whether its loss has
flattened (fell by less than 5 % over the last quarter)."""

import json
import sys
from pathlib import Path

RUN = "results/latent_lookahead/runs/train_task-sudoku4_method-lookahead_tau-A_mask-bidir/seed{}/metrics.json"


def at(history: list[dict], step: int) -> dict:
    return next(e for e in history if e["step"] == step)


def main(tree: Path) -> None:
    for seed in (0, 2, 4):
        path = tree / "control_tau19_16x" / RUN.format(seed)
        if not path.exists():
            print(f"seed {seed}: not run")
            continue
        rung = json.loads((tree / "tau_answer" / RUN.format(seed)).read_text())["history"]
        long = json.loads(path.read_text())["history"]
        a, b = at(rung, 7168), at(long, 7168)
        same = a["exact_match"] == b["exact_match"] and abs(a["train_loss"] - b["train_loss"]) < 1e-9
        q3, end = at(long, 10752), at(long, 14336)
        fall = 1 - end["train_loss"] / q3["train_loss"]
        print(f"seed {seed}: prefix {'equal' if same else 'DIFFERENT'} (rung 2 {a['exact_match']:.3f}/"
              f"{a['train_loss']:.3f}, here {b['exact_match']:.3f}/{b['train_loss']:.3f}); exact match "
              f"{b['exact_match']:.3f} -> {q3['exact_match']:.3f} -> {end['exact_match']:.3f}; loss "
              f"{b['train_loss']:.3f} -> {q3['train_loss']:.3f} -> {end['train_loss']:.3f} "
              f"(last quarter -{fall:.0%}): "
              f"{'learned late' if end['exact_match'] > 0 else 'still at the floor'}, "
              f"{'flattened' if fall < 0.05 else 'still learning'}")
        print("   every evaluation (step, exact match %, loss):",
              [(e["step"], round(100 * e["exact_match"], 1), round(e.get("train_loss", float("nan")), 2))
               for e in long[1:]])


if __name__ == "__main__":
    main(Path(sys.argv[1]))
