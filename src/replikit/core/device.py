"""Device choice and CPU thread control."""

from __future__ import annotations

import importlib
import sys
import types

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


class _EagerDynamo(types.ModuleType):
    """`torch._dynamo` for eager code (`eager_only`): `disable` returns the function unchanged,
    `graph_break` does nothing; any other name imports the real module in its place and is read there."""

    def __init__(self) -> None:
        super().__init__("torch._dynamo", "torch._dynamo for eager runs (replikit.core.device.eager_only)")
        self.graph_break = lambda *args, **kwargs: None
        self.is_compiling = lambda: False

    @staticmethod
    def disable(fn=None, recursive: bool = True, **kwargs):
        return fn if fn is not None else (lambda f: f)

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        del sys.modules["torch._dynamo"]
        del torch._dynamo  # while it imports, its own modules reach it through torch's lazy attribute
        real = importlib.import_module("torch._dynamo")
        torch._dynamo = real
        return getattr(real, name)


def eager_only() -> None:
    """Run torch eagerly without importing its compiler, `torch._dynamo`, unless something needs it
    (1.3-1.5 s of every training job's start on this project's CPUs, more than a smoke job's own
    compute). torch's optimizers import it only to mark their methods as not to be compiled
    (`torch._disable_dynamo`, `graph_break`), which does nothing outside `torch.compile`, and replikit
    never compiles. A stand-in answers those two and imports the real module the moment anything else
    is asked of it (activation checkpointing reads its config), so the numbers are those of the real
    module. A no-op where the compiler is already imported."""
    if "torch._dynamo" not in sys.modules:
        sys.modules["torch._dynamo"] = torch._dynamo = _EagerDynamo()
