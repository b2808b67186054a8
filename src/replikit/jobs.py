"""Glue for Snakemake `script:` jobs: log redirection, thread pinning, device choice."""

from __future__ import annotations

import contextlib
import sys
import traceback
from collections.abc import Iterator
from typing import Any

import torch

from .device import choose_device, set_threads


@contextlib.contextmanager
def job(snakemake: Any) -> Iterator[torch.device]:
    """Send stdout/stderr to the rule's log, pin torch threads to the rule's `threads`, and
    yield the configured device. A failure is written to the log and re-raised, so the job
    fails and Snakemake removes its outputs."""
    log_path = snakemake.log[0] if snakemake.log else None
    stream = open(log_path, "w", buffering=1) if log_path else None
    with contextlib.ExitStack() as stack:
        if stream is not None:
            stack.callback(stream.close)
            stack.enter_context(contextlib.redirect_stdout(stream))
            stack.enter_context(contextlib.redirect_stderr(stream))
        set_threads(snakemake.threads)
        device = choose_device(getattr(snakemake.params, "device", "auto") or "auto")
        print(f"[replikit] rule {snakemake.rule}: device {device}, {snakemake.threads} thread(s)")
        try:
            yield device
        except BaseException:
            traceback.print_exc()
            if stream is not None:
                print(f"rule {snakemake.rule} failed; see {log_path}", file=sys.__stderr__)
            raise
