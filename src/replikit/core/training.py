"""A plain training loop with one `[progress]` line per epoch, divergence detection and checkpoint/resume.

The loop knows nothing about papers: it draws a permutation per epoch from a CPU
generator, hands each index batch to `loss_fn`, steps the optimizer and calls
`evaluate` every `eval_every` epochs. On an accelerator it reads the loss only every
`check_every` steps (divergence) and once per epoch (running loss), so the host does not wait
for the device after every step. Everything that drives randomness (model,
optimizer, generator, history) is checkpointed, so a killed run that is started
again resumes and ends bitwise identical to an uninterrupted one (on CPU).
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from replikit.core.io import torch_save
from replikit.core.progress import Progress


class DivergenceError(RuntimeError):
    """Training produced a NaN or infinite loss."""


@dataclass(frozen=True)
class LoopConfig:
    epochs: int
    batch_size: int
    eval_every: int = 0  # epochs between evaluations; 0 = only at start and end
    checkpoint_every: int = 0  # epochs between checkpoints; 0 = never
    drop_last: bool = True
    # steps between divergence checks; None = every step on the CPU (where reading the loss costs
    # nothing) and every CHECK_EVERY steps on an accelerator (each check waits for the device)
    check_every: int | None = None


CHECK_EVERY = 50


class Stopwatch:
    """Seconds a run has taken over every part of it: checkpointed with the run (pass it in
    `train_loop`'s `state_objects`), so a run stopped and resumed counts its earlier parts too, each
    up to its last checkpoint (the work after that was redone, and its time is not counted). `parts`
    is how many processes the count spans (1: the run ran in one piece)."""

    def __init__(self) -> None:
        self.start, self.earlier_s, self.parts = time.perf_counter(), 0.0, 1

    def seconds(self) -> float:
        return self.earlier_s + time.perf_counter() - self.start

    def state_dict(self) -> dict:
        return {"elapsed_s": self.seconds(), "parts": self.parts}

    def load_state_dict(self, state: dict) -> None:
        self.earlier_s, self.parts = state["elapsed_s"], state["parts"] + 1


LossFn = Callable[[torch.Tensor], torch.Tensor]
EvalFn = Callable[[int], dict[str, float]]


def check_finite(loss: torch.Tensor, epoch: int, step: int) -> None:
    """Raise DivergenceError naming where a NaN/inf loss appeared."""
    value = loss.item()
    if not math.isfinite(value):
        raise DivergenceError(
            f"training diverged: loss is {value} at epoch {epoch}, step {step}; "
            "lower the learning rate or check the inputs"
        )


def _check_pending(pending: list[tuple[int, torch.Tensor]], epoch: int) -> None:
    """Raise, as `check_finite` at the first of them, when any of the (step, loss) is not finite;
    one device synchronisation for all of them."""
    if pending and not bool(torch.isfinite(torch.stack([loss for _, loss in pending])).all()):
        for step, loss in pending:
            check_finite(loss, epoch, step)
    pending.clear()


def load_checkpoint(path: str | Path | None, load: Callable[[Path], Any] | None = None) -> Any:
    """The checkpoint at `path` (None when there is none). An unreadable one (truncated, corrupt)
    is moved aside to `<name>.corrupt`, named on stderr, and None is returned: training restarts."""
    if path is None or not Path(path).exists():
        return None
    path = Path(path)
    try:
        return load(path) if load is not None else torch.load(path, weights_only=False)
    except Exception as e:  # torch, pickle and json raise many kinds for a damaged file
        aside = path.with_name(path.name + ".corrupt")
        os.replace(path, aside)
        print(f"checkpoint {path} is unreadable ({type(e).__name__}: {str(e)[:200]}); moved it to "
              f"{aside}, training restarts from scratch", file=sys.stderr)
        return None


def _batches(n: int, cfg: LoopConfig, generator: torch.Generator) -> list[torch.Tensor]:
    perm = torch.randperm(n, generator=generator)
    size = min(cfg.batch_size, n)
    stop = n - n % size if cfg.drop_last else n
    return [perm[i:i + size] for i in range(0, stop, size)]


def train_loop(model: nn.Module, optimizer: torch.optim.Optimizer, loss_fn: LossFn, n_items: int,
               cfg: LoopConfig, generator: torch.Generator, evaluate: EvalFn | None = None,
               checkpoint: str | Path | None = None, progress: bool = True,
               fingerprint: str = "", before_step: Callable[[int], None] | None = None,
               state_objects: dict | None = None) -> list[dict[str, float]]:
    """Train for `cfg.epochs` epochs over `n_items` items; return the evaluation history.

    A checkpoint is resumed only when its `fingerprint` (a digest of everything that defines
    the run) matches; a checkpoint of another configuration is discarded. `before_step(k)`, when
    given, is called before the k-th optimizer step of the loop (k counts from 0 over all epochs,
    also after a resume), e.g. to set a per-step learning-rate schedule. `state_objects` (name ->
    object with state_dict/load_state_dict, e.g. collected posterior samples) are checkpointed
    and restored with the model.
    """
    state_objects = state_objects or {}
    start, history = 0, []
    ckpt = Path(checkpoint) if checkpoint else None
    state = load_checkpoint(ckpt)
    if state is not None and state.get("fingerprint") != fingerprint:
        print(f"ignoring {ckpt}: it belongs to another configuration or other input data; "
              "training starts from scratch", file=sys.stderr)
        state = None
    if state is not None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        generator.set_state(state["generator"])
        start, history = state["epoch"], state["history"]
        for name, obj in state_objects.items():
            obj.load_state_dict(state["objects"][name])
        print(f"resumed from {ckpt} at epoch {start}", file=sys.stderr)
    if start == 0 and evaluate is not None:
        history.append({"epoch": 0, **evaluate(0)})

    model.train()
    report = Progress("epoch", cfg.epochs, start)
    for epoch in range(start, cfg.epochs):
        # the running loss is summed on the loss's device, in float64 (bitwise the sum of the
        # per-step Python floats it replaced), and read once per epoch
        total: torch.Tensor | None = None
        steps = 0
        pending: list[tuple[int, torch.Tensor]] = []  # losses not yet checked for divergence
        batches = _batches(n_items, cfg, generator)
        for step, idx in enumerate(batches):
            loss = loss_fn(idx)
            every = cfg.check_every or (1 if loss.device.type == "cpu" else CHECK_EVERY)
            if every == 1:
                check_finite(loss, epoch, step)
            else:
                pending.append((step, loss.detach()))
                if len(pending) >= every:
                    _check_pending(pending, epoch)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if before_step is not None:
                before_step(epoch * len(batches) + step)
            optimizer.step()
            if total is None:
                total = torch.zeros((), dtype=torch.float64, device=loss.device)
            total += loss.detach().double()
            steps += 1
        _check_pending(pending, epoch)  # before any evaluation or checkpoint of this epoch
        running = total.item() if total is not None else 0.0
        done = epoch + 1
        due = cfg.eval_every and done % cfg.eval_every == 0
        evaluated = evaluate is not None and (due or done == cfg.epochs)
        if evaluated:
            history.append({"epoch": done, "train_loss": running / max(steps, 1), **evaluate(done)})
            model.train()
        if progress:  # one plain line per epoch, with the evaluation's numbers when there was one
            shown = {k: v for k, v in history[-1].items() if isinstance(v, (int, float))
                     and k not in ("epoch", "train_loss")} if evaluated else {}
            report.update(done, loss=running / max(steps, 1), **dict(list(shown.items())[:4]))
        if ckpt is not None and cfg.checkpoint_every and done % cfg.checkpoint_every == 0 \
                and done < cfg.epochs:
            torch_save(ckpt, {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                              "generator": generator.get_state(), "epoch": done,
                              "history": history, "fingerprint": fingerprint,
                              "objects": {k: o.state_dict() for k, o in state_objects.items()}})
    return history


def steps_per_epoch(n_items: int, cfg: LoopConfig) -> int:
    """Number of optimizer steps `train_loop` takes per epoch."""
    size = min(cfg.batch_size, n_items)
    return n_items // size if cfg.drop_last else -(-n_items // size)


def make_optimizer(name: str, params, lr: float, weight_decay: float = 0.0,
                   momentum: float = 0.9) -> torch.optim.Optimizer:
    """Adam or SGD by config name."""
    if name == "adam":
        return torch.optim.Adam(params, lr=lr, weight_decay=weight_decay)
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=momentum, weight_decay=weight_decay)
    raise ValueError(f"unknown optimizer {name!r}: use adam or sgd")
