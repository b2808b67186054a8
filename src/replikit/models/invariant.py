"""The dihedral group D4 (flips and 90-degree rotations) acting on square images, and a model made
exactly invariant to it by averaging its logits over the 8 group elements (Bachmann et al. 2022)."""

from __future__ import annotations

import torch
from torch import nn

GROUP_SIZE = 8


def d4(x: torch.Tensor, g: int) -> torch.Tensor:
    """Element g in 0..7 of D4 on images (batch, C, H, W): g % 4 quarter turns, then a flip if g >= 4."""
    y = torch.rot90(x, g % 4, dims=(2, 3))
    return y.flip(3) if g >= 4 else y


def d4_batch(x: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    """Apply a per-image group element g (batch,) in 0..7, batched (8 masked ops, no per-sample Python)."""
    if x.shape[2] != x.shape[3]:
        raise ValueError(f"D4 needs square images, got {tuple(x.shape[2:])}")
    g = g.to(x.device).view(-1, 1, 1, 1)
    out = x
    for e in range(1, GROUP_SIZE):
        out = torch.where(g == e, d4(x, e), out)
    return out


class GroupAverage(nn.Module):
    """f_inv(x) = mean over g in D4 of f(g x): a D4-invariant wrapper of any image model."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b = x.shape[0]
        views = torch.cat([d4(x, g) for g in range(GROUP_SIZE)])
        return self.model(views).view(GROUP_SIZE, b, -1).mean(0)


class Canonicalize(nn.Module):
    """f_inv(x) = f(g*(x) x) with g*(x) = argmax_g <template, g x> for a fixed random template: an
    exactly D4-invariant model (up to ties) at the cost of one forward pass (canonicalization)."""

    def __init__(self, model: nn.Module, size: int, seed: int = 0) -> None:
        super().__init__()
        self.model = model
        g = torch.Generator().manual_seed(seed)
        self.register_buffer("template", torch.randn(1, 1, size, size, generator=g), persistent=False)

    def canonical(self, x: torch.Tensor) -> torch.Tensor:
        scores = torch.stack([(d4(x, g) * self.template).sum((1, 2, 3)) for g in range(GROUP_SIZE)], 1)
        return d4_batch(x, scores.argmax(1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.model(self.canonical(x))
