"""Signs of life of a long run, for its wall time. Snakemake writes its log only at job events, so a
call stopped mid-job (at a session's end, a job of hours still running) seems to have ended at its
last event; `python -m replikit.tools.publish scorecard ... --heartbeats FILE` ends each call at its
last beat instead.

    python -m replikit.tools.heartbeat TREE [--out FILE] [--every 60] &   # beside the run

appends {"alive": unix seconds} to FILE (default TREE/logs/heartbeats.jsonl) every `every` seconds
while the run's Snakemake works in TREE: a Snakemake process whose working directory is TREE, that
runs jobs (not a dry run, `--unlock`, `--lint`, `--summary` or a listing, nor a `--nolock` side
call, such as judging claims again beside the run) and is not stopped (SIGSTOP: a pause, which
publish leaves out anyway). A beat counts for the call it follows, up to the next call's start or
the next {"restarted": unix seconds} line, which whoever starts the run again appends to FILE, so
nothing else may write beats there. It stops by itself once no such process, stopped or not, has
been seen for `--idle` seconds. Linux only (it reads /proc).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

PROC = Path("/proc")


def _process(pid_dir: Path) -> tuple[list[str], Path, str] | None:
    """(argv, working directory, state letter) of one process; None when it is gone or not ours to read."""
    try:
        argv = (pid_dir / "cmdline").read_bytes().decode(errors="replace").split("\0")
        cwd = (pid_dir / "cwd").resolve(strict=True)
        state = (pid_dir / "stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return None
    return argv, cwd, state


# Snakemake calls that run no job of the run: never a sign of its life.
NOT_THE_RUN = {"-n", "--dry-run", "--dryrun", "--unlock", "--lint", "--summary", "-S",
               "--detailed-summary", "-D", "--list", "-l", "--list-rules", "--list-target-rules", "--nolock",
               "--dag", "--rulegraph"}


def run_states(tree: Path, proc: Path = PROC) -> list[str]:
    """The state letters (T: stopped) of the Snakemake processes that run jobs in `tree` (their command
    line names snakemake; see NOT_THE_RUN)."""
    tree = tree.resolve()
    out = []
    for pid_dir in proc.glob("[0-9]*"):
        found = _process(pid_dir)
        if found is None:
            continue
        argv, cwd, state = found
        if (cwd == tree and not NOT_THE_RUN & set(argv)
                and any(Path(a).name.startswith("snakemake") for a in argv[:3])):
            out.append(state)
    return out


def snakemake_working(tree: Path, proc: Path = PROC) -> bool:
    """Whether the run's Snakemake works in `tree` and is not stopped (paused)."""
    return any(state != "T" for state in run_states(tree, proc))


def beat(out: Path, now: float | None = None) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("a") as f:
        f.write(json.dumps({"alive": round(time.time() if now is None else now, 1)}) + "\n")


def run(tree: Path, out: Path, every: float = 60.0, idle: float = 3600.0) -> None:
    """Beat every `every` seconds while Snakemake works in `tree`; return after `idle` seconds without."""
    last_seen = time.monotonic()
    while time.monotonic() - last_seen < idle:
        states = run_states(tree)
        if states:  # a pause, however long, is not idle
            last_seen = time.monotonic()
        if any(state != "T" for state in states):
            beat(out)
        time.sleep(every)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tree", type=Path, help="the run's working directory (its output tree)")
    parser.add_argument("--out", type=Path, help="the heartbeat file (default TREE/logs/heartbeats.jsonl)")
    parser.add_argument("--every", type=float, default=60.0, help="seconds between beats")
    parser.add_argument("--idle", type=float, default=3600.0,
                        help="stop after this many seconds without a Snakemake process in TREE")
    args = parser.parse_args(argv)
    if not args.tree.is_dir():
        raise SystemExit(f"{args.tree}: no such folder; give the run's working directory (its output tree)")
    run(args.tree, args.out or args.tree / "logs" / "heartbeats.jsonl", args.every, args.idle)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
