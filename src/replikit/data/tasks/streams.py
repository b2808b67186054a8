"""Continual-learning task streams as float tensors on the device, from any prepared image dataset.

Permuted stream with controllable similarity (Permuted MNIST on MNIST): task 0 is the plain dataset;
every later task permutes a fraction p of the pixels among themselves (the same permutation in every
channel), the innermost pixels first (Chebyshev distance from the image centre), so tasks share the
other 1 - p of the pixels: similarity = 1 - p.
Split stream (Split CIFAR-10 on CIFAR-10): task t holds classes (2t, 2t+1), relabelled 0/1.
Both normalise each channel by the dataset record's mean and std (`replikit.data.datasets.Dataset`),
or, where the record has none, by the training images' own.
A joint (non-sequential) baseline trains on the union of a stream's tasks (`joint_data`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from replikit.core.seeding import derive_seed


def channel_stats(x: torch.Tensor) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Per-channel mean and std of uint8 images (N, C, H, W) scaled to [0, 1]."""
    v = x.float().div(255).transpose(0, 1).flatten(1)
    return tuple(v.mean(1).tolist()), tuple(v.std(1).tolist())


def normalise(x: torch.Tensor, mean: Sequence[float], std: Sequence[float]) -> torch.Tensor:
    """uint8 images (N, C, H, W) to floats, each channel centred and scaled."""
    if len(mean) == 1:  # one channel: plain scalars (bitwise as the MNIST runs always were)
        return (x.float() / 255 - mean[0]) / std[0]
    c = x.shape[1]
    return (x.float() / 255 - torch.tensor(mean).view(1, c, 1, 1)) / torch.tensor(std).view(1, c, 1, 1)


def _stats(data: dict, mean: Sequence[float] | None, std: Sequence[float] | None) -> tuple:
    return (mean, std) if mean is not None and std is not None else channel_stats(data["x_train"])


@dataclass
class TaskStream:
    """Per-task train/test tensors (float, on the device) with per-task labels 0..n_out-1."""

    name: str
    x_train: list[torch.Tensor]
    y_train: list[torch.Tensor]
    x_test: list[torch.Tensor]
    y_test: list[torch.Tensor]
    n_out: int
    shared_head: bool = False  # one readout for all tasks (domain-incremental) instead of one per task

    @property
    def n_heads(self) -> int:
        return 1 if self.shared_head else self.n_tasks

    def head(self, task: int | torch.Tensor) -> int | torch.Tensor:
        """The readout a task is trained and evaluated with."""
        if not self.shared_head:
            return task
        return 0 if isinstance(task, int) else torch.zeros_like(task)

    @property
    def n_tasks(self) -> int:
        return len(self.x_train)

    @property
    def input_shape(self) -> tuple[int, ...]:
        return tuple(self.x_train[0].shape[1:])


def center_order(height: int, width: int) -> torch.Tensor:
    """Flat pixel indices sorted from the centre outwards (inner square first, then row-major)."""
    r = torch.arange(height).repeat_interleave(width).float()
    c = torch.arange(width).repeat(height).float()
    dist = torch.maximum((r - (height - 1) / 2).abs(), (c - (width - 1) / 2).abs())
    return torch.sort(dist, stable=True).indices


def partial_permutation(height: int, width: int, fraction: float, generator: torch.Generator
                        ) -> torch.Tensor:
    """A pixel permutation that shuffles only the innermost round(fraction * H * W) pixels."""
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"permuted fraction must lie in [0, 1], got {fraction}")
    order = center_order(height, width)
    k = int(round(fraction * height * width))
    perm = torch.arange(height * width)
    chosen = order[:k]
    perm[chosen] = chosen[torch.randperm(k, generator=generator)]
    return perm


def select(n_total: int, n: int | None, seed: int, purpose: str) -> torch.Tensor:
    """Indices of a fixed random subset of size n (all when n is None or too large)."""
    if n is None or n >= n_total:
        return torch.arange(n_total)
    g = torch.Generator().manual_seed(derive_seed(seed, purpose))
    return torch.randperm(n_total, generator=g)[:n].sort().values


def permuted_stream(data: dict, n_tasks: int, fraction: float, n_train: int | None, n_test: int | None,
                    seed: int, device: torch.device, shared_head: bool = True, name: str = "",
                    mean: Sequence[float] | None = None, std: Sequence[float] | None = None) -> TaskStream:
    """The permuted stream (Permuted MNIST on MNIST): the same n_train/n_test images in every task,
    task t>0 partially permuted. All tasks share the dataset's labels, so by default they share one
    readout (domain-incremental). `name` defaults to pmnist{percent}."""
    if n_tasks < 1:
        raise ValueError("a stream needs at least one task")
    _, c, h, w = data["x_train"].shape
    mean, std = _stats(data, mean, std)
    tr = select(len(data["y_train"]), n_train, seed, "cl-train")
    te = select(len(data["y_test"]), n_test, seed, "cl-test")

    def norm(x: torch.Tensor) -> torch.Tensor:
        return normalise(x, mean, std).flatten(2).to(device)  # (N, C, H*W)

    xtr, xte = norm(data["x_train"][tr]), norm(data["x_test"][te])
    ytr, yte = data["y_train"][tr].to(device), data["y_test"][te].to(device)
    g = torch.Generator().manual_seed(derive_seed(seed, "permutations", fraction))
    n_out = len(data["classes"]) if "classes" in data else int(data["y_train"].max()) + 1
    stream = TaskStream(name or f"pmnist{round(fraction * 100)}", [], [], [], [], n_out, shared_head)
    for t in range(n_tasks):
        perm = torch.arange(h * w) if t == 0 else partial_permutation(h, w, fraction, g)
        perm = perm.to(device)
        stream.x_train.append(xtr[:, :, perm].flatten(1))
        stream.x_test.append(xte[:, :, perm].flatten(1))
        stream.y_train.append(ytr)
        stream.y_test.append(yte)
    return stream


def split_stream(data: dict, n_tasks: int, n_train: int | None, n_test: int | None, seed: int,
                 device: torch.device, name: str = "splitcifar10", mean: Sequence[float] | None = None,
                 std: Sequence[float] | None = None) -> TaskStream:
    """The split stream (Split CIFAR-10 on CIFAR-10): task t = classes (2t, 2t+1) with binary labels."""
    n_classes = len(data["classes"]) if "classes" in data else int(data["y_train"].max()) + 1
    if not 1 <= n_tasks <= n_classes // 2:
        raise ValueError(f"a split stream of {n_classes} classes has 1 to {n_classes // 2} two-class tasks, "
                         f"not {n_tasks}")
    mean, std = _stats(data, mean, std)
    stream = TaskStream(name, [], [], [], [], 2)
    for t in range(n_tasks):
        for split, n, xs, ys in (("train", n_train, stream.x_train, stream.y_train),
                                 ("test", n_test, stream.x_test, stream.y_test)):
            x, y = data[f"x_{split}"], data[f"y_{split}"]
            mask = (y == 2 * t) | (y == 2 * t + 1)
            idx = mask.nonzero().flatten()
            idx = idx[select(idx.numel(), n, seed, f"cl-{split}-{t}")]
            xs.append(normalise(x[idx], mean, std).to(device))
            ys.append((y[idx] - 2 * t).to(device))
    return stream


def joint_data(stream: TaskStream) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The union of all tasks' training data: inputs, labels and task ids (for the heads)."""
    x = torch.cat(stream.x_train)
    y = torch.cat(stream.y_train)
    t = torch.cat([torch.full((len(yy),), i, dtype=torch.long, device=yy.device)
                   for i, yy in enumerate(stream.y_train)])
    return x, y, t
