"""Projector head shared by the image models: Linear -> ReLU -> Linear, no biases."""

from __future__ import annotations

from torch import nn


class ProjectorHead(nn.Module):
    """Anagnostidis et al.'s bottleneck head (`hidden` = 65536 in the paper)."""

    def __init__(self, in_dim: int, hidden: int, out_dim: int) -> None:
        super().__init__()
        self.hidden = nn.Linear(in_dim, hidden, bias=False)
        self.out = nn.Linear(hidden, out_dim, bias=False)
