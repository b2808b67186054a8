"""Start-up of the workflow's jobs: how long a job's Python process takes to reach its paper's code,
against a bare `import torch`.

    python -m replikit.tools.startup_benchmark [--rounds 5] [--out startup.json]

Each round starts, one after another and alternating, a fresh interpreter per kind of process: a bare
`import torch`; and for every paper a stage job's imports up to its stage (`replikit.core.jobs` and
`registry.stage_of_job`, as workflow/scripts/paper_stage.py does) and a figure or claims job's up to
its declaration (`registry.get`, as paper_figure.py and paper_claims.py do). Prints the median wall
time of each and its excess over the bare import (the interface's target: at most 1 s for a job).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

BARE = "import torch"


def stage_code(paper: str, stage: str) -> str:
    return ("import torch; import replikit.core.jobs; from replikit.papers import interface; "
            f"registry.stage_of_job('logs/{paper}/{stage}/r/seed0.log')")


def analysis_code(paper: str) -> str:
    return ("import torch; import replikit.core.jobs; from replikit.papers import interface; "
            f"registry.get({paper!r})")


def seconds(code: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - start


def measure(rounds: int) -> dict[str, float]:
    """Median seconds per kind of process (`bare`, `<paper> stage`, `<paper> figure/claims`)."""
    from replikit.papers import paper_names, registry

    codes = {"bare": BARE}
    for name in paper_names():
        first = registry.get(name).stages[0].name
        codes[f"{name} stage"] = stage_code(name, first)
        codes[f"{name} figure/claims"] = analysis_code(name)
    times: dict[str, list[float]] = {k: [] for k in codes}
    for _ in range(rounds):
        for key, code in codes.items():
            times[key].append(seconds(code))
    return {k: statistics.median(v) for k, v in times.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", help="also write the medians to this JSON file")
    args = ap.parse_args(argv)
    med = measure(args.rounds)
    bare = med["bare"]
    print(f"{'process':44s} {'median s':>9s} {'above bare torch':>17s}")
    for key, t in med.items():
        print(f"{key:44s} {t:9.2f} {t - bare:+17.2f}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"rounds": args.rounds, "median_s": med}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
