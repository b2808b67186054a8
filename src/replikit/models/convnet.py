"""A small CNN for CPU-scale Bayesian neural networks, with or without BatchNorm (which, as in
Wenzel et al., gets no prior)."""

from __future__ import annotations

import torch
from torch import nn


class ConvNet(nn.Module):
    """conv(w)-[bn]-relu-pool -> conv(2w)-[bn]-relu-pool -> conv(4w)-[bn]-relu -> global average pool
    -> linear."""

    def __init__(self, num_classes: int = 10, width: int = 16, in_channels: int = 3,
                 batchnorm: bool = False) -> None:
        super().__init__()

        def block(c_in: int, c_out: int, pool: bool) -> list[nn.Module]:
            layers: list[nn.Module] = [nn.Conv2d(c_in, c_out, 3, padding=1, bias=not batchnorm)]
            layers += [nn.BatchNorm2d(c_out)] if batchnorm else []
            return layers + [nn.ReLU()] + ([nn.MaxPool2d(2)] if pool else [])

        self.features = nn.Sequential(*block(in_channels, width, True), *block(width, 2 * width, True),
                                      *block(2 * width, 4 * width, False), nn.AdaptiveAvgPool2d(1),
                                      nn.Flatten())
        self.fc = nn.Linear(4 * width, num_classes)
        for m in self.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
                if m.bias is not None:
                    nn.init.zeros_(m.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.features(x))
