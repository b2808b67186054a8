"""Model zoo: one readable file per model; `build_model` picks one by name."""

from __future__ import annotations

from .cnn4 import CNN4
from .resnet18 import ResNet18
from .staged import StagedNet

MODELS: dict[str, type[StagedNet]] = {"cnn4": CNN4, "resnet18": ResNet18}


def build_model(name: str, num_classes: int, width: int, projector_width: int,
                in_channels: int = 3) -> StagedNet:
    """Instantiate a model by its config name."""
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; choose one of {sorted(MODELS)}")
    return MODELS[name](num_classes=num_classes, width=width, projector_width=projector_width,
                        in_channels=in_channels)


__all__ = ["CNN4", "MODELS", "ResNet18", "StagedNet", "build_model"]
