"""Progress of a training job: one plain line per epoch, evaluation or network in the job's log.

Every training job prints the same shape of line, readable with `cat` and `less` (no carriage
returns, no bars):

    [progress] epoch 12/60 | loss 0.4132 | test_nll 0.512 | elapsed 1m04s | ETA 4m16s
"""

from __future__ import annotations

import math
import sys
import time
from typing import TextIO


def duration(seconds: float) -> str:
    """`45s`, `3m07s`, `2h05m`."""
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def _value(v: object) -> str:
    if isinstance(v, float):
        return "nan" if not math.isfinite(v) else f"{v:.4g}"
    return str(v)


class Progress:
    """Counts `total` units (epochs, steps, networks ...) from `start` (a resumed job's first) and
    prints one line per `update`, with the elapsed time and an ETA from the rate so far."""

    def __init__(self, unit: str, total: int, start: int = 0, stream: TextIO | None = None) -> None:
        self.unit, self.total, self.start = unit, total, start
        self.began = time.monotonic()
        self.stream = stream

    def line(self, done: int, **metrics: object) -> str:
        elapsed = time.monotonic() - self.began
        rate = (done - self.start) / elapsed if elapsed > 0 and done > self.start else 0.0
        eta = duration((self.total - done) / rate) if rate > 0 else "?"
        shown = " | ".join(f"{k} {_value(v)}" for k, v in metrics.items() if v is not None)
        return (f"[progress] {self.unit} {done}/{self.total}" + (f" | {shown}" if shown else "")
                + f" | elapsed {duration(elapsed)} | ETA {eta if done < self.total else '0s'}")

    def update(self, done: int, **metrics: object) -> None:
        print(self.line(done, **metrics), file=self.stream or sys.stdout, flush=True)
