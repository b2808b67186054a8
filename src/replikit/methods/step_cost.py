"""The cost of one training step at its real shapes, counted without running it: FLOPs, peak memory
and dispatched operations of forward, backward and optimizer step under torch's FakeTensorMode
(tensors carry shapes and dtypes, no storage, so a 40 GB step is counted on a laptop).

- FLOPs: `torch.utils.flop_counter.FlopCounterMode` (as `replikit.plan.ll_cost` counts them), split into
  convolutions (TF32 tensor cores by default on CUDA: cuDNN allows TF32) and matrix products
  (fp32 unless the job runs under bf16 autocast).
- Peak memory: `MemTracker` (torch.distributed._tools.mem_tracker) over one steady-state iteration:
  a first, untracked step creates the optimizer state, then one tracker follows the second step, with
  the model, the optimizer and the data that stays on the device registered as external. Live
  tensors only: no CUDA context, no allocator fragmentation, no cuDNN/cuBLAS workspaces.
- Operations: aten calls that are not views, about one kernel launch each in eager PyTorch. Metadata
  queries (`prim::device` and the like) and profiler markers launch nothing and are not counted;
  until 2026-11-25 they were (about 2.8 of every 4 counted operations of a cold-posterior step).

A step of C stacked chains (`replikit.models.chains.ChainStack`, a `vmap` over the network) is
counted as it runs for operations, and from the same step on one network for the rest, because each
chain does exactly one network's arithmetic and holds one network's tensors:
- FLOPs: C times one network's. Counted on the stack, torch's FlopCounterMode would over-count the
  weight gradient of the grouped convolutions that the stack becomes by the group count C (its
  formula ignores `groups`: 12.9 against 4 x 1.3 GFLOP for 4 stacked ResNet-20s at batch 8).
- Peak memory: C * (peak_1 - data) + data; MemTracker cannot follow a network called inside `vmap`
  (its module hooks see batched tensors), and the chains share only the data.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode, unset_fake_temporarily
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode

CONV_OPS = ("convolution", "conv")  # FlopCounterMode keys of convolutions (and their backward)


@dataclass(frozen=True)
class StepCost:
    """One optimizer step: FLOPs of convolutions and of everything else, peak live bytes, aten ops."""

    conv_flops: float
    matmul_flops: float
    peak_bytes: int
    ops: int

    @property
    def flops(self) -> float:
        return self.conv_flops + self.matmul_flops


@dataclass
class Setup:
    """A training step as `train_loop` takes it: `loss()` on the next batch, then zero_grad, backward
    and `optimizer.step()` (no optimizer: forward and backward only). `resident`: tensors that live
    across steps besides the model and the optimizer (data kept on the device)."""

    model: nn.Module
    loss: Callable[[], torch.Tensor]
    optimizer: torch.optim.Optimizer | None
    resident: list = field(default_factory=list)
    # a step of `chains` stacked chains: `one_chain` builds the same step on one network (memory)
    chains: int = 1
    one_chain: Callable[[], Setup] | None = None

    def step(self) -> None:
        loss = _Iteration()(self.loss)
        if self.optimizer is not None:
            self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if self.optimizer is not None:
            self.optimizer.step()
        else:
            self.model.zero_grad(set_to_none=True)


class _Iteration(nn.Module):
    """One root module around the loss: MemTracker takes a second top-level call of a module for a
    second iteration, and the lookahead rollout calls the GPT's submodules directly."""

    def forward(self, loss: Callable[[], torch.Tensor]) -> torch.Tensor:
        return loss()


Builder = Callable[[], Setup]  # called under FakeTensorMode



@dataclass(frozen=True)
class Piece:
    """`steps` steps of the step `build` makes; `key` names its shapes (equal keys, equal cost).
    `cpu_build`: the step as a job on the CPU runs it, where that differs from a GPU job's (switches
    that `auto` turns on only on CUDA, bf16 autocast that the CPU runs without); None: `build`."""

    key: tuple
    build: Builder
    steps: int
    bf16: bool = False  # matrix products under bf16 autocast on a GPU
    cpu_build: Builder | None = None

    def on_cpu(self) -> tuple[tuple, Builder]:
        """The key and the builder of the step a CPU job runs."""
        return ((*self.key, "cpu"), self.cpu_build) if self.cpu_build else (self.key, self.build)


@dataclass(frozen=True)
class JobPlan:
    """What one training job computes, for `replikit.plan.bill`: its pieces, how its steps were counted,
    and the config key that lowers its peak memory. Every paper's cost model (`Paper(cost=...)`, in
    the paper's own module) returns one."""

    pieces: list[Piece]
    formula: str  # how the steps were counted
    memory_setting: str  # the config key that lowers the job's peak memory


def batches_per_epoch(n: int, batch: int, drop_last: bool = True) -> int:
    """Steps of one epoch over `n` examples (train_loop drops the last partial batch by default)."""
    b = min(batch, n)
    return n // b if drop_last else -(-n // b)


def launches(func) -> bool:  # noqa: ANN001
    """Whether a dispatched op is counted as a kernel launch: an aten op that is not a view, a detach
    or an alias (metadata queries such as prim::device and profiler markers launch nothing)."""
    return func.namespace == "aten" and not (
        func.is_view or func.__name__.startswith(("detach", "alias", "_to_copy")))


class OpCounter(TorchDispatchMode):
    """Counts dispatched ops that launch a kernel (`launches`)."""

    def __init__(self) -> None:
        super().__init__()
        self.ops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, D105
        if launches(func):
            self.ops += 1
        return func(*args, **(kwargs or {}))


def fake_module(build: Callable[[], nn.Module]) -> nn.Module:
    """`build()` run for real (the papers' builders call `.to(...)`, which fake parameters refuse),
    then, inside FakeTensorMode, every parameter and buffer swapped for a fake one of the same shape,
    dtype and strides (tied weights stay tied). Outside FakeTensorMode: the real module."""
    mode = torch._guards.active_fake_mode()
    if mode is None:
        return build()
    with unset_fake_temporarily():
        module = build()
    fakes: dict[int, torch.Tensor] = {}

    def fake(t: torch.Tensor, param: bool) -> torch.Tensor:
        if id(t) not in fakes:
            f = mode.from_tensor(t)
            fakes[id(t)] = nn.Parameter(f, requires_grad=t.requires_grad) if param else f
        return fakes[id(t)]

    for m in module.modules():
        for name, p in m._parameters.items():
            if p is not None:
                m._parameters[name] = fake(p, True)
        for name, b in m._buffers.items():
            if b is not None:
                m._buffers[name] = fake(b, False)
    return module


def _split_flops(counter: FlopCounterMode) -> tuple[float, float]:
    conv = other = 0.0
    for op, n in counter.get_flop_counts().get("Global", {}).items():
        if any(k in str(op) for k in CONV_OPS):
            conv += n
        else:
            other += n
    return conv, other


def _peak_bytes(setup: Setup) -> int:
    """Peak live bytes of one steady-state step of `setup` (fake tensors; its first step is done)."""
    from torch.distributed._tools.mem_tracker import MemTracker

    tracker = MemTracker()
    tracker.track_external(setup.model, setup.optimizer, *setup.resident)
    with tracker:
        setup.step()
    return int(sum(snap["Total"] for snap in tracker.get_tracker_snapshot("peak").values()))


def _count(setup: Setup) -> tuple[FlopCounterMode, OpCounter]:
    """FLOPs and launching ops of one steady-state step of `setup` (its first step is done)."""
    with FlopCounterMode(display=False) as flops, OpCounter() as ops:
        setup.step()
    return flops, ops


def measure_step(builder: Builder) -> StepCost:
    """Cost of the second step of `builder()` (the first creates the optimizer state), all fake."""
    with FakeTensorMode(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # MemTracker's hooks warn about modules already freed
        setup = builder()
        setup.step()
        flops, ops = _count(setup)
        if setup.chains == 1:
            conv, other = _split_flops(flops)
            return StepCost(conv, other, _peak_bytes(setup), ops.ops)
        if setup.one_chain is None:
            raise ValueError("a step of stacked chains needs `one_chain`, the same step on one network")
        one = setup.one_chain()
        one.step()
        conv, other = _split_flops(_count(one)[0])
        data = sum(t.numel() * t.element_size() for t in setup.resident)
        peak = setup.chains * (_peak_bytes(one) - data) + data
        return StepCost(setup.chains * conv, setup.chains * other, int(peak), ops.ops)


def built_for_real(builder: Builder) -> Setup:
    """`builder()` outside FakeTensorMode, on the default device, its resident float data drawn at
    random (a builder may leave it uninitialized: it only has to have the right shapes)."""
    setup = builder()
    for t in setup.resident:
        if t.is_floating_point():
            t.normal_()
    return setup


def time_step(builder: Builder, repeats: int = 3, threads: int = 1) -> float:
    """Measured seconds of one steady-state step of `builder()` on this CPU, with real tensors and
    `threads` torch threads: the median of `repeats` steps after a first that creates the optimizer
    state. What the step model cannot see (memory-bound element-wise ops, small-shape overheads) is
    in it; evaluation, data loading and start-up are not."""
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            setup = built_for_real(builder)
            setup.step()
            times = []
            for _ in range(repeats):
                start = time.perf_counter()
                setup.step()
                times.append(time.perf_counter() - start)
        return sorted(times)[len(times) // 2]
    finally:
        torch.set_num_threads(before)


def job_startup_seconds(module: str, repeats: int = 2) -> float:
    """Measured wall seconds for a fresh Python process to import what a paper's job imports
    (Snakemake's script module, torch and the paper's `module`): each job pays it once. The fastest
    of `repeats` starts (the first may read files from disk)."""
    import subprocess
    import sys

    code = f"import snakemake.script, torch, {module}"
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
        best = min(best, time.perf_counter() - start)
    return best


def cpu_matmul_flops(threads: int = 1, size: int = 1024, seconds: float = 0.5) -> float:
    """Measured fp32 matmul FLOP/s of this CPU with `threads` torch threads (the CPU's peak here)."""
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        a, b = torch.randn(size, size), torch.randn(size, size)
        a @ b
        n, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            a @ b
            n += 1
        return 2 * size ** 3 * n / (time.perf_counter() - start)
    finally:
        torch.set_num_threads(before)
