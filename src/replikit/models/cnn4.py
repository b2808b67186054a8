"""A small 4-conv CNN (airbench-like) with the projector head: the CPU-scale model."""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch import nn

from replikit.models.heads import ProjectorHead
from replikit.models.staged import StagedNet


def _conv_block(c_in: int, c_out: int, pool: bool) -> nn.Sequential:
    layers: list[nn.Module] = [nn.Conv2d(c_in, c_out, 3, padding=1, bias=False)]
    if pool:
        layers.append(nn.MaxPool2d(2))
    layers += [nn.BatchNorm2d(c_out), nn.ReLU(inplace=True)]
    return nn.Sequential(*layers)


class CNN4(StagedNet):
    """conv(w) -> [conv(2w), pool] -> [conv(4w), pool] -> [conv(8w), pool] -> GAP -> head."""

    def __init__(self, num_classes: int, width: int = 32, projector_width: int = 1024,
                 in_channels: int = 3) -> None:
        super().__init__()
        self.stem = _conv_block(in_channels, width, pool=False)
        self.block1 = _conv_block(width, 2 * width, pool=True)
        self.block2 = _conv_block(2 * width, 4 * width, pool=True)
        self.block3 = _conv_block(4 * width, 8 * width, pool=True)
        self.head = ProjectorHead(8 * width, projector_width, num_classes)

    @property
    def stage_names(self) -> list[str]:
        return ["stem", "block1", "block2", "block3", "pooled", "projector", "output"]

    def stages(self, x: torch.Tensor) -> Iterator[tuple[str, torch.Tensor]]:
        x = self.stem(x)
        yield "stem", x
        for name in ("block1", "block2", "block3"):
            x = getattr(self, name)(x)
            yield name, x
        yield from self.head.stages(x)
