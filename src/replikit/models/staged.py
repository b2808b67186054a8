"""Base class for networks whose intermediate stages can be probed by name."""

from __future__ import annotations

from collections.abc import Iterator

import torch
import torch.nn.functional as F
from torch import nn


class StagedNet(nn.Module):
    """A network written as a sequence of named stages; `forward` returns the last one."""

    def stages(self, x: torch.Tensor) -> Iterator[tuple[str, torch.Tensor]]:
        raise NotImplementedError

    @property
    def stage_names(self) -> list[str]:
        raise NotImplementedError

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        *_, (_, out) = self.stages(x)
        return out

    def stage_outputs(self, x: torch.Tensor, names: set[str] | None = None) -> dict[str, torch.Tensor]:
        """Outputs of the named stages as vectors. Conv maps are average-pooled to 2x2 and
        flattened, so a conv stage keeps coarse spatial layout and differs from `pooled`."""
        feats: dict[str, torch.Tensor] = {}
        for name, out in self.stages(x):
            if names is None or name in names:
                feats[name] = F.adaptive_avg_pool2d(out, 2).flatten(1) if out.dim() == 4 else out
            if names is not None and len(feats) == len(names):
                break
        return feats
