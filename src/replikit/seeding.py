"""Seeding and determinism: the same seed gives bitwise the same result on CPU."""

from __future__ import annotations

import random

import numpy as np
import torch


def seed_everything(seed: int, deterministic: bool = True) -> torch.Generator:
    """Seed Python, NumPy and torch; return a CPU generator for data order and augmentation."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    if deterministic:
        torch.use_deterministic_algorithms(True, warn_only=True)
        torch.backends.cudnn.benchmark = False
    generator = torch.Generator()
    generator.manual_seed(seed)
    return generator


def derive_seed(*parts: int | str) -> int:
    """A stable 63-bit seed from several parts (e.g. a base seed and a purpose name)."""
    h = 1469598103934665603
    for part in parts:
        for byte in str(part).encode():
            h = ((h ^ byte) * 1099511628211) % 2**64
        h = ((h ^ 0xFF) * 1099511628211) % 2**64
    return h % 2**63
