"""Projector head shared by the image models: Linear -> ReLU -> Linear, no biases."""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch import nn


class ProjectorHead(nn.Module):
    """Anagnostidis et al.'s bottleneck head (`hidden` = 65536 in the paper)."""

    def __init__(self, in_dim: int, hidden: int, out_dim: int) -> None:
        super().__init__()
        self.hidden = nn.Linear(in_dim, hidden, bias=False)
        self.out = nn.Linear(hidden, out_dim, bias=False)

    def stages(self, conv_map: torch.Tensor) -> Iterator[tuple[str, torch.Tensor]]:
        """From the encoder's last conv map: global-average-pooled features, the projector's
        hidden layer (after ReLU) and the output."""
        x = conv_map.mean(dim=(2, 3))
        yield "pooled", x
        x = torch.relu(self.hidden(x))
        yield "projector", x
        yield "output", self.out(x)
