"""Seeding and determinism: the same seed gives bitwise the same result on CPU.

On a GPU the default is "same seed, same statistics": `torch.use_deterministic_algorithms` and
cuDNN's deterministic mode are off there, because the deterministic CUDA kernels are slower
(and some ops have none) while the GPU's results already differ from the CPU's in the last bits
(other kernels, bf16 autocast, TF32). A rerun on the GPU then repeats the data order,
initialisation and sampler noise (all seeded), but floating-point reductions such as atomics in
backward passes may round differently, so numbers agree in distribution, not bitwise. Set
`REPLIKIT_DETERMINISTIC=1` (or pass `deterministic=True`) for bitwise-repeatable GPU runs at that
cost; `REPLIKIT_DETERMINISTIC=0` turns it off everywhere.
"""

from __future__ import annotations

import os
import random
import sys

import numpy as np
import torch


def deterministic_default(device: torch.device | str | None = None) -> bool:
    """Deterministic algorithms on? `REPLIKIT_DETERMINISTIC` (1/0) when set; else on for a CPU
    device, and with no device named, on unless CUDA is present."""
    env = os.environ.get("REPLIKIT_DETERMINISTIC", "").strip().lower()
    if env in ("1", "true", "yes", "on"):
        return True
    if env in ("0", "false", "no", "off"):
        return False
    if device is not None:
        return torch.device(device).type == "cpu"
    return not torch.cuda.is_available()


def seed_everything(seed: int, deterministic: bool | None = None,
                    device: torch.device | str | None = None) -> torch.Generator:
    """Seed Python, NumPy and torch; return a CPU generator for data order and augmentation.
    `deterministic` None: `deterministic_default(device)` (always on for CPU runs, as before)."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    if deterministic is None:
        deterministic = deterministic_default(device)
    set_deterministic_algorithms(bool(deterministic))
    if deterministic:
        torch.backends.cudnn.benchmark = False
    generator = torch.Generator()
    generator.manual_seed(seed)
    return generator


def set_deterministic_algorithms(mode: bool) -> None:
    """`torch.use_deterministic_algorithms(mode, warn_only=True)` without its start-up cost.

    torch's function imports `torch._inductor.config` (about 1.3 s of a job's start-up on this
    project's CPUs, measured 2026-11-26) only to set the compiler's own flag. Nothing here compiles
    unless inductor is loaded already, so its flag is set only then; the flag that every eager kernel
    reads is set exactly as torch sets it."""
    torch._C._set_deterministic_algorithms(mode, warn_only=True)
    inductor_config = sys.modules.get("torch._inductor.config")
    if inductor_config is not None:
        inductor_config.deterministic = mode


def derive_seed(*parts: int | str) -> int:
    """A stable 63-bit seed from several parts (e.g. a base seed and a purpose name)."""
    h = 1469598103934665603
    for part in parts:
        for byte in str(part).encode():
            h = ((h ^ byte) * 1099511628211) % 2**64
        h = ((h ^ 0xFF) * 1099511628211) % 2**64
    return h % 2**63
