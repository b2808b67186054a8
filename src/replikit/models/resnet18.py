"""torchvision ResNet-18 with a CIFAR stem (3x3 stride-1 conv, no max-pool) and the projector head."""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch import nn

from replikit.models.heads import ProjectorHead
from replikit.models.staged import StagedNet


class ResNet18(StagedNet):
    """The benign-memorization paper's `resnet18_small` encoder plus bias-free projector."""

    def __init__(self, num_classes: int, width: int = 64, projector_width: int = 65536,
                 in_channels: int = 3) -> None:
        super().__init__()
        if width != 64:
            raise ValueError("resnet18 has a fixed width of 64; use cnn4 to vary width")
        import torchvision  # here, not at module level: importing it costs ~2 s per job

        net = torchvision.models.resnet18(weights=None)
        net.conv1 = nn.Conv2d(in_channels, 64, 3, stride=1, padding=1, bias=False)
        net.maxpool = nn.Identity()
        net.fc = nn.Identity()
        self.encoder = net
        self.head = ProjectorHead(512, projector_width, num_classes)

    @property
    def stage_names(self) -> list[str]:
        return ["stem", "layer1", "layer2", "layer3", "layer4", "pooled", "projector", "output"]

    def stages(self, x: torch.Tensor) -> Iterator[tuple[str, torch.Tensor]]:
        e = self.encoder
        x = e.relu(e.bn1(e.conv1(x)))
        yield "stem", x
        for name in ("layer1", "layer2", "layer3", "layer4"):
            x = getattr(e, name)(x)
            yield name, x
        yield from self.head.stages(x)
