"""Shared fixtures: repository paths and a small synthetic image dataset."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
SHARED = (ROOT.parent / "shared" / "datasets").resolve()


@pytest.fixture
def root() -> Path:
    return ROOT


@pytest.fixture
def tiny_images() -> dict:
    """40 train / 20 test 3x16x16 uint8 images in 4 classes, each class a colour tint."""
    g = torch.Generator().manual_seed(0)

    def make(n: int) -> tuple[torch.Tensor, torch.Tensor]:
        y = torch.arange(n) % 4
        base = torch.randint(0, 60, (n, 3, 16, 16), generator=g)
        base[torch.arange(n), y % 3] += 150
        return base.clamp(0, 255).to(torch.uint8), y

    xtr, ytr = make(40)
    xte, yte = make(20)
    return {"x_train": xtr, "y_train": ytr, "x_test": xte, "y_test": yte,
            "classes": ["a", "b", "c", "d"]}
