"""Width-consistent parameterizations (Bordelon et al. 2023 notation) for an MLP and a small ResCNN.

All weights are initialised N(0, 1); every layer multiplies its pre-activation by fan_in^-1/2
(D^-1/2 at the input), residual branches by 1/sqrt(L) (`depth_scaling=False`: by 1, plain muP
residuals), and the readout divides by gamma:

    f = w . phi(h^L) / (sqrt(N) * gamma)        (one zero-initialised head per task)

NTP:  gamma = 1,                          learning rate eta0
muP:  gamma = gamma0 * sqrt(N / N0),      learning rate eta0 * gamma0^2 * N / N0  (= eta0 * gamma^2)

so muP with gamma0 = 1 equals NTP at N = N0, and NTP at width N behaves like muP with
gamma0 = sqrt(N0 / N). gamma0 sets the feature-learning strength independently of the width.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

MODES = ("ntp", "mup")


@dataclass(frozen=True)
class Scaling:
    """Parameterization mode, width N, gamma0 and base width N0."""

    mode: str
    width: int
    gamma0: float = 1.0
    base_width: int = 64

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"unknown parameterization {self.mode!r}: use one of {MODES}")
        if self.width < 1 or self.gamma0 <= 0 or self.base_width < 1:
            raise ValueError(f"width, gamma0 and base width must be positive: {self}")

    @property
    def gamma(self) -> float:
        """The readout divisor: 1 under NTP, gamma0 * sqrt(N / N0) under muP."""
        return 1.0 if self.mode == "ntp" else self.gamma0 * math.sqrt(self.width / self.base_width)

    @property
    def effective_gamma0(self) -> float:
        """The muP gamma0 this network behaves like (sqrt(N0 / N) for NTP)."""
        return self.gamma0 if self.mode == "mup" else math.sqrt(self.base_width / self.width)

    def lr(self, eta0: float) -> float:
        """SGD learning rate: eta0 * gamma^2."""
        return eta0 * self.gamma ** 2


def _normal(shape: tuple[int, ...], generator: torch.Generator | None) -> nn.Parameter:
    return nn.Parameter(torch.randn(shape, generator=generator))


class MultiHead(nn.Module):
    """Zero-initialised per-task readouts, f = w_t . z / (sqrt(N) gamma)."""

    def __init__(self, width: int, n_heads: int, n_out: int, gamma: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(n_heads, n_out, width))
        self.scale = 1.0 / (math.sqrt(width) * gamma)

    def forward(self, z: torch.Tensor, task: int | torch.Tensor) -> torch.Tensor:
        if isinstance(task, int):
            return z @ self.weight[task].T * self.scale
        return torch.einsum("bn,bon->bo", z, self.weight[task]) * self.scale


class _ScaledResidual(nn.Module):
    """Shared by the scaled networks: an input layer, residual blocks whose branches are divided by
    sqrt(L), and per-task heads (parameters created in that order, from one generator)."""

    def __init__(self, scaling: Scaling, inp_shape: tuple[int, ...], block_shape: tuple[int, ...],
                 n_heads: int, n_out: int, n_blocks: int, generator: torch.Generator | None,
                 depth_scaling: bool = True) -> None:
        super().__init__()
        self.scaling = scaling
        self.inp = _normal(inp_shape, generator)
        self.blocks = nn.ParameterList([_normal(block_shape, generator) for _ in range(n_blocks)])
        self.branch = 1.0 / math.sqrt(max(n_blocks, 1)) if depth_scaling else 1.0
        self.head = MultiHead(scaling.width, n_heads, n_out, scaling.gamma)

    @property
    def first_layer(self) -> torch.Tensor:
        return self.inp

    def features(self, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def forward(self, x: torch.Tensor, task: int | torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x), task)


class ScaledMLP(_ScaledResidual):
    """h1 = W0 x / sqrt(D); h <- h + W_l phi(h) / sqrt(N L) for L residual blocks; per-task heads."""

    def __init__(self, d_in: int, scaling: Scaling, n_heads: int, n_out: int, n_blocks: int = 0,
                 generator: torch.Generator | None = None, depth_scaling: bool = True) -> None:
        n = scaling.width
        super().__init__(scaling, (n, d_in), (n, n), n_heads, n_out, n_blocks, generator, depth_scaling)
        self.d_in = d_in

    def features(self, x: torch.Tensor) -> torch.Tensor:
        n = self.scaling.width
        h = x.flatten(1) @ self.inp.T / math.sqrt(self.d_in)
        for w in self.blocks:
            h = h + self.branch * F.relu(h) @ w.T / math.sqrt(n)
        return F.relu(h)


class ScaledResCNN(_ScaledResidual):
    """3x3 conv stem, residual conv blocks (2x2 average pooling after each third), global pool.

    Channels are the width N; every conv divides by sqrt(fan_in) = sqrt(C_in * 9), each residual
    branch by sqrt(L).
    """

    def __init__(self, in_channels: int, scaling: Scaling, n_heads: int, n_out: int, n_blocks: int = 6,
                 generator: torch.Generator | None = None, depth_scaling: bool = True) -> None:
        n = scaling.width
        super().__init__(scaling, (n, in_channels, 3, 3), (n, n, 3, 3), n_heads, n_out, n_blocks, generator,
                         depth_scaling)
        self.in_channels = in_channels
        self.pool_after = {max(1, n_blocks // 3) * k - 1 for k in (1, 2)} if n_blocks >= 3 else set()

    def features(self, x: torch.Tensor) -> torch.Tensor:
        n = self.scaling.width
        h = F.conv2d(x, self.inp, padding=1) / math.sqrt(self.in_channels * 9)
        for i, w in enumerate(self.blocks):
            h = h + self.branch * F.conv2d(F.relu(h), w, padding=1) / math.sqrt(n * 9)
            if i in self.pool_after:
                h = F.avg_pool2d(h, 2)
        return F.relu(h).mean(dim=(2, 3))


def build_scaled(kind: str, input_shape: tuple[int, ...], scaling: Scaling, n_heads: int, n_out: int,
                 n_blocks: int, generator: torch.Generator | None = None,
                 depth_scaling: bool = True) -> nn.Module:
    """`mlp` (flattened input) or `rescnn` (C, H, W input) under the given parameterization;
    `depth_scaling`: residual branches times 1/sqrt(L) (else 1)."""
    if kind == "mlp":
        return ScaledMLP(math.prod(input_shape), scaling, n_heads, n_out, n_blocks, generator, depth_scaling)
    if kind == "rescnn":
        return ScaledResCNN(input_shape[0], scaling, n_heads, n_out, n_blocks, generator, depth_scaling)
    raise ValueError(f"unknown scaled model {kind!r}: use mlp or rescnn")
