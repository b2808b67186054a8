"""ResNet-20 for CIFAR (He et al. 2016, option-A-free: 1x1 conv shortcuts) with BatchNorm, as in
Wenzel et al. (2020): 3 stages of 3 basic blocks, widths 16, 32, 64."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class BasicBlock(nn.Module):
    def __init__(self, c_in: int, c_out: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.shortcut = nn.Identity()
        if stride != 1 or c_in != c_out:
            self.shortcut = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False),
                                          nn.BatchNorm2d(c_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + self.shortcut(x))


class ResNet20(nn.Module):
    """conv(w) -> 3 x [3 blocks] at widths w, 2w, 4w (strides 1, 2, 2) -> GAP -> linear."""

    def __init__(self, num_classes: int = 10, width: int = 16, in_channels: int = 3,
                 blocks_per_stage: int = 3) -> None:
        super().__init__()
        self.conv = nn.Conv2d(in_channels, width, 3, 1, 1, bias=False)
        self.bn = nn.BatchNorm2d(width)
        layers, c_in = [], width
        for i, c_out in enumerate((width, 2 * width, 4 * width)):
            for j in range(blocks_per_stage):
                layers.append(BasicBlock(c_in, c_out, 2 if (i > 0 and j == 0) else 1))
                c_in = c_out
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(c_in, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, nonlinearity="relu")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.layers(F.relu(self.bn(self.conv(x))))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))
