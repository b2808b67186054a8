"""The shape of a training trajectory: principal directions of parameter snapshots, against a random walk.

`SnapshotBuffer` keeps evenly spaced snapshots of a trajectory of unknown length within a fixed memory
(when full, it drops every other snapshot and doubles its stride). `pca_shares` gives the share of the
snapshots' variance along each principal direction. `random_walk_shares` gives the same shares for a
random walk of as many evenly spaced points in high dimension: its centred Gram matrix is min(i, j) up
to a factor, so the shares are that matrix's eigenvalues over their sum. This is the reference any
diffusive trajectory meets (about 61 %, 15 % and 7 % for the first three directions when points are
many), so a trajectory that explains more in its top directions than this is lower-dimensional than
noise.
"""

from __future__ import annotations

import torch


class SnapshotBuffer:
    """At most `capacity` snapshots, at steps that are multiples of `stride` (which doubles as needed)."""

    def __init__(self, capacity: int, stride: int) -> None:
        if capacity < 4:
            raise ValueError(f"a snapshot buffer needs room for at least 4 snapshots, not {capacity}")
        self.capacity, self.stride = capacity, stride
        self.steps: list[int] = []
        self.points: list[torch.Tensor] = []

    def offer(self, step: int, point: torch.Tensor) -> None:
        """Keep `point` (a copy) when `step` falls on the stride."""
        if step % self.stride:
            return
        if len(self.steps) == self.capacity:
            self.stride *= 2
            keep = [k for k, s in enumerate(self.steps) if s % self.stride == 0]
            self.steps = [self.steps[k] for k in keep]
            self.points = [self.points[k] for k in keep]
            if step % self.stride:
                return
        self.steps.append(step)
        self.points.append(point.detach().to("cpu", torch.float32).clone())

    def between(self, start: float, stop: float) -> tuple[list[int], torch.Tensor | None]:
        """The kept steps within [start, stop] and their snapshots stacked (None when there are none)."""
        idx = [k for k, s in enumerate(self.steps) if start <= s <= stop]
        return [self.steps[k] for k in idx], torch.stack([self.points[k] for k in idx]) if idx else None


def _shares(gram: torch.Tensor) -> list[float]:
    values = torch.linalg.eigvalsh(gram).flip(0).clamp(min=0)
    return (values / values.sum()).tolist()


def pca_shares(points: torch.Tensor) -> list[float]:
    """(n, P) snapshots -> the share of their variance along each principal direction, largest first
    (n values; computed from the n x n Gram matrix of the centred snapshots, in float64)."""
    x = points.double()
    x = x - x.mean(0, keepdim=True)
    return _shares(x @ x.T)


def random_walk_shares(n: int) -> list[float]:
    """The principal directions' shares of n evenly spaced points of a high-dimensional random walk."""
    if n < 2:
        raise ValueError(f"a trajectory's principal directions need at least 2 points, not {n}")
    i = torch.arange(1, n + 1, dtype=torch.float64)
    k = torch.minimum(i[:, None], i[None, :])
    c = torch.eye(n, dtype=torch.float64) - 1.0 / n
    return _shares(c @ k @ c)
