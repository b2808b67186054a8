"""Atomic file writes: a killed job never leaves a file Snakemake would take as complete."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch


class DiskFullError(OSError):
    """A write stopped short because the disk is full; the message names the file."""


def _is_disk_full(error: BaseException) -> bool:
    """ENOSPC, or torch's zip writer's "unexpected pos" (its report of a short write)."""
    if isinstance(error, OSError):
        return error.errno in (errno.ENOSPC, errno.EDQUOT)
    return isinstance(error, RuntimeError) and "unexpected pos" in str(error)


def _disk_full_error(path: Path) -> DiskFullError:
    try:
        free = f"{shutil.disk_usage(path.parent).free / 2**20:.0f} MiB free there now"
    except OSError:
        free = "free space unknown"
    return DiskFullError(f"no space left on device while writing {path} ({free}); "
                         "free some space (or move results/ to a bigger disk) and rerun")


def _atomic(path: str | os.PathLike, write: Callable[[str], None]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        try:
            write(tmp)
        except (OSError, RuntimeError) as e:
            if _is_disk_full(e):
                raise _disk_full_error(path) from e
            raise
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; give the usual permissions
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_json(path: str | os.PathLike, obj: Any) -> Path:
    """Write JSON atomically (indented, keys in insertion order)."""
    def write(tmp: str) -> None:
        with open(tmp, "w") as f:
            json.dump(obj, f, indent=2, allow_nan=False)
            f.write("\n")
    return _atomic(path, write)


def read_json(path: str | os.PathLike) -> Any:
    with open(path) as f:
        return json.load(f)


def torch_save(path: str | os.PathLike, obj: Any) -> Path:
    """torch.save atomically."""
    return _atomic(path, lambda tmp: torch.save(obj, tmp))


def write_text(path: str | os.PathLike, text: str) -> Path:
    def write(tmp: str) -> None:
        Path(tmp).write_text(text)
    return _atomic(path, write)


def file_digest(path: str | os.PathLike, algorithm: str = "sha256") -> str:
    """Hex digest of a file, read in 1 MiB chunks."""
    h = hashlib.new(algorithm)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def tensor_digest(*tensors: torch.Tensor) -> str:
    """sha256 of the dtypes, shapes and bytes of `tensors` (the identity of a run's input data)."""
    h = hashlib.sha256()
    for t in tensors:
        t = t.detach().cpu().contiguous()
        h.update(f"{t.dtype}{tuple(t.shape)}".encode())
        h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()
