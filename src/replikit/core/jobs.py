"""Glue for Snakemake `script:` jobs: a per-job lock, log redirection, thread and numerics pinning, device
choice."""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

from replikit.core import numerics
from replikit.core.device import choose_device, set_threads
from replikit.core.job_cpu import cpu_line
from replikit.core.seeding import deterministic_default, set_deterministic_algorithms


class JobLockedError(RuntimeError):
    """Another live process is running the same job (same outputs)."""


LOCKS = Path(".snakemake/replikit-locks")  # under the workflow's own metadata folder, not beside the logs


def lock_path(snakemake: Any) -> Path:
    """The job's lock file: its log's path (or its first output's, when it has no log) under
    `.snakemake/replikit-locks/`, so that no lock file is left among the logs after a job."""
    target = Path(snakemake.log[0] if snakemake.log else snakemake.output[0])
    return LOCKS / Path(*target.parts[1:] if target.is_absolute() else target.parts).with_name(
        target.name + ".lock")


@contextlib.contextmanager
def exclusive(path: Path, rule: str, outputs: list[str]) -> Iterator[None]:
    """Hold an exclusive flock on `path` for the job's lifetime; refuse when a live process holds
    it (the kernel releases it when its holder dies, so a killed job never blocks its rerun)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            raise JobLockedError(
                f"another process (pid {holder}) is already running rule {rule} for {', '.join(outputs)} "
                f"(lock {path}). Two runs of one job would overwrite each other's checkpoint, log and "
                "outputs, so this one stops; wait for the other run to finish, then rerun") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)


@contextlib.contextmanager
def job(snakemake: Any, cpu_only: bool = False) -> Iterator[torch.device]:
    """Lock the job against a concurrent run of itself, send stdout/stderr to the rule's log, pin
    torch threads to the rule's `threads`, turn on deterministic algorithms (on the CPU; numerics
    pinned by `import replikit`: replikit.core.numerics, named in the log), and yield the device of
    config key `device` (read from the config, not a rule param, so changing it never reruns finished
    jobs; `cpu_only`: the CPU, whatever the key says, for jobs that never use a GPU). A failure is
    written to the log and re-raised, so the job fails and Snakemake removes its outputs."""
    log_path = snakemake.log[0] if snakemake.log else None
    with contextlib.ExitStack() as stack:
        stack.enter_context(exclusive(lock_path(snakemake), snakemake.rule, list(snakemake.output)))
        if log_path:
            stream = stack.enter_context(open(log_path, "w", buffering=1))
            stack.enter_context(contextlib.redirect_stdout(stream))
            stack.enter_context(contextlib.redirect_stderr(stream))
        try:
            set_threads(snakemake.threads)
            device = torch.device("cpu") if cpu_only \
                else choose_device(snakemake.config.get("device", "auto"))
            set_deterministic_algorithms(deterministic_default(device))
            print(f"[replikit] rule {snakemake.rule}: device {device}, {snakemake.threads} thread(s), "
                  f"kernels {numerics.kernels()} on {numerics.cpu()['model']}")
            yield device
            print(cpu_line(), flush=True)
        except BaseException:
            traceback.print_exc()
            if log_path:
                print(f"rule {snakemake.rule} failed; see {log_path}", file=sys.__stderr__)
            raise


def time_limit_hints(log_text: str, papers_by_prefix: dict[str, str]) -> list[str]:
    """One line per rule whose SLURM job ran out of time in a Snakemake log, naming the config key
    to raise: `<paper>.resources.runtime` for a paper's rules (named `<prefix>_...`), else
    `--set-resources <rule>:runtime=MINUTES`."""
    hints = []
    for block in log_text.split("Error in rule ")[1:]:
        rule = block.split(":", 1)[0].strip()
        head = "\n".join(block.splitlines()[:6])
        if "SLURM status is: 'TIMEOUT'" not in head or not rule.isidentifier():
            continue
        paper = papers_by_prefix.get(rule.split("_", 1)[0])
        fix = (f"raise `{paper}.resources.runtime` (minutes) in the config, or pass "
               f"`--set-resources {rule}:runtime=MINUTES`" if paper else
               f"pass `--set-resources {rule}:runtime=MINUTES`")
        hint = f"rule {rule} ran past its SLURM time limit (TIMEOUT): {fix}, then rerun"
        if hint not in hints:
            hints.append(hint)
    return hints
