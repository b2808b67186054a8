"""Device choice and CPU thread control."""

from __future__ import annotations

import torch


class DeviceError(RuntimeError):
    """The configured device does not exist on this machine."""


def check_available(preference: str) -> None:
    """Raise DeviceError when the config asks for CUDA on a machine without it."""
    if preference == "cuda" and not torch.cuda.is_available():
        raise DeviceError(
            "config key 'device' is 'cuda' but torch finds no CUDA device on this machine "
            f"(torch {torch.__version__}); set device: auto or cpu (e.g. --config device=cpu), "
            "or run on a GPU node")


def choose_device(preference: str = "auto") -> torch.device:
    """`auto` picks CUDA when present, else CPU; `cpu`/`cuda` force one (cuda must exist)."""
    if preference == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    check_available(preference)
    if preference not in ("cpu", "cuda"):
        raise ValueError(f"unknown device {preference!r}: use auto, cpu or cuda")
    return torch.device(preference)


def set_threads(n: int) -> None:
    """Pin torch to `n` intra-op threads (oversubscribed cores slow torch 10-30x)."""
    torch.set_num_threads(max(1, int(n)))
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:  # already set once in this process
        pass


def describe(device: torch.device) -> str:
    """A human-readable device name for provenance records."""
    if device.type == "cuda":
        return f"cuda:{torch.cuda.get_device_name(device)}"
    return f"cpu ({torch.get_num_threads()} threads)"
