"""A job's own CPU seconds, written to its log at its end and read back when a run is published."""

from __future__ import annotations

import resource
from pathlib import Path

CPU_LINE = "[replikit] cpu seconds of this job: "


def cpu_line() -> str:
    """The job's own CPU seconds so far (user and system, its threads and finished children), for its
    log: Snakemake's benchmark samples CPU time every 30 s once a job has run 15 s, so its
    `cpu_time` misses up to the last 30 s of each job (`replikit.tools.publish.benchmark_seconds`
    reads this line instead)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
    return f"{CPU_LINE}{cpu:.2f}"


def logged_cpu_seconds(log: Path) -> float | None:
    """The CPU seconds a job wrote to its log (`cpu_line`), or None where it wrote none."""
    if not log.is_file():
        return None
    found = [ln for ln in log.read_text(errors="replace").splitlines() if ln.startswith(CPU_LINE)]
    return float(found[-1].removeprefix(CPU_LINE)) if found else None
