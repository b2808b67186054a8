"""The datasets the papers train on: an open registry of declarations (this module imports no torch).

A `Dataset` says where its copies come from and how each is checked: local files under the
configured search paths (each with its published md5), the torchvision download, the Hugging Face
hub, and optionally a verified subset; plus its full sizes (config checks) and where to get it by
hand. `replikit.data.prepare` prepares any registered dataset the same way, with the same checksums, offline
fallback and error messages. CIFAR-10 and MNIST are built in; a paper adds its own from its module
with `Paper(..., datasets=(Dataset(...),))`, which registers it when the paper is loaded.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Dataset:
    """One image-classification dataset and its verified sources."""

    name: str  # wildcard of rule prepare_dataset: lowercase letters and digits
    title: str  # for messages and figures, e.g. "CIFAR-10"
    sizes: tuple[int, int]  # full train and test counts
    # A local copy: path relative to a search path -> md5. The files are verified, copied into the
    # download folder at the same relative path and read by torchvision (which checks them again).
    local_files: Mapping[str, str] = field(default_factory=dict)
    torchvision: str | None = None  # class in torchvision.datasets (local copies and the download)
    huggingface: tuple[str, str, str] | None = None  # (hub repo, image column, label column)
    extracted: str | None = None  # a folder torchvision extracted (it checks its files) also accepted
    subset: tuple[str, str] | None = None  # (file, md5) of a verified .npz subset, the last resort
    url: str = ""  # where to download the local files by hand

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[a-z][a-z0-9]*", self.name):
            raise ValueError(f"dataset name {self.name!r}: use lowercase letters and digits (a wildcard)")
        if self.local_files and self.torchvision is None:
            raise ValueError(f"dataset {self.name!r}: local_files are read by a torchvision class; "
                             "declare torchvision='<class in torchvision.datasets>'")

    def how_to_get(self) -> str:
        """What to download by hand, for the error message when no source has it."""
        files = list(self.local_files)
        if len(files) == 1:
            return files[0] + (f" (from {self.url})" if self.url else "")
        folder = files[0].rsplit("/", 1)[0] + "/" if files and "/" in files[0] else ""
        names = ", ".join(f.removeprefix(folder) for f in files)
        return f"{folder} with {names}" + (f" (from {self.url})" if self.url else "")


CIFAR10 = Dataset(
    "cifar10", "CIFAR-10", (50000, 10000),
    local_files={"cifar-10-python.tar.gz": "c58f30108f718f92721af3b95e74349a"},
    torchvision="CIFAR10", huggingface=("uoft-cs/cifar10", "img", "label"), extracted="cifar-10-batches-py",
    subset=("cifar10-subset.npz", "8299bffa37f32fd043c45fc373dafb8e"),
    url="https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz")
MNIST = Dataset(
    "mnist", "MNIST", (60000, 10000),
    local_files={f"MNIST/raw/{name}": md5 for name, md5 in (
        ("train-images-idx3-ubyte.gz", "f68b3c2dcbeaaa9fbdd348bbdeb94873"),
        ("train-labels-idx1-ubyte.gz", "d53e105ee54ea40749a09fcbcd1e9432"),
        ("t10k-images-idx3-ubyte.gz", "9fb629c4189551a2d022fa330f9573f3"),
        ("t10k-labels-idx1-ubyte.gz", "ec29112dd5afa0611ce80d1b7f02629c"))},
    torchvision="MNIST", huggingface=("ylecun/mnist", "image", "label"))

_REGISTRY: dict[str, Dataset] = {d.name: d for d in (CIFAR10, MNIST)}


def register(dataset: Dataset) -> Dataset:
    """Add `dataset`; registering the same declaration again is a no-op, another one under a taken
    name an error."""
    known = _REGISTRY.setdefault(dataset.name, dataset)
    if known != dataset:
        raise ValueError(f"dataset {dataset.name!r} is declared twice, differently; give the new one "
                         "another name")
    return dataset


def get(name: str) -> Dataset:
    if name not in _REGISTRY:
        raise KeyError(f"unknown dataset {name!r}; available: {', '.join(names())} (a paper declares its own "
                       "with Paper(..., datasets=(Dataset(...),)))")
    return _REGISTRY[name]


def names() -> list[str]:
    return sorted(_REGISTRY)


def sizes(name: str) -> tuple[int, int]:
    """Full train and test counts of dataset `name`."""
    return get(name).sizes


def size_errors(key: str, n: int | None, dataset: str, split: str, limit: int | None = None) -> list[str]:
    """Config key `key` asks for `n` images of the full dataset's `split` (a subset has fewer: jobs
    check that against the prepared data)."""
    ds = get(dataset)
    train, test = ds.sizes
    most = limit or (train if split == "train" else test)
    if n is None or n <= most:
        return []
    name = ds.title
    what = f"{name} has only {most} {split}ing images" + (" per task" if limit else "")
    return [f"config key '{key}' is {n} but {what}; use at most {most} (or null for all)"]
