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
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
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
    complete: bool = False  # the .npz holds the whole dataset (`sizes`), not a subset of it
    url: str = ""  # where to download the local files by hand
    shape: tuple[int, int, int] | None = None  # (channels, height, width) of an image: model inputs, costs
    n_classes: int | None = None  # label count: model outputs, chance levels
    # per-channel mean and std of the images scaled to [0, 1], used to normalise them (None: the
    # training images' own, computed where the data is loaded)
    mean: tuple[float, ...] | None = None
    std: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[a-z][a-z0-9]*", self.name):
            raise ValueError(f"dataset name {self.name!r}: use lowercase letters and digits (a wildcard)")
        if self.local_files and self.torchvision is None:
            raise ValueError(f"dataset {self.name!r}: local_files are read by a torchvision class; "
                             "declare torchvision='<class in torchvision.datasets>'")

    def how_to_get(self) -> str:
        """What to download by hand, for the error message when no source has it."""
        files = list(self.local_files)
        if not files and self.subset:  # a dataset that is only a local .npz file
            return f"{self.subset[0]} (md5 {self.subset[1]})" + (f" from {self.url}" if self.url else "")
        if not files:
            return f"the {self.title} files" + (f" from {self.url}" if self.url else "")
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
    url="https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz", shape=(3, 32, 32), n_classes=10,
    mean=(0.4914, 0.4822, 0.4465), std=(0.2470, 0.2435, 0.2616))
MNIST = Dataset(
    "mnist", "MNIST", (60000, 10000),
    local_files={f"MNIST/raw/{name}": md5 for name, md5 in (
        ("train-images-idx3-ubyte.gz", "f68b3c2dcbeaaa9fbdd348bbdeb94873"),
        ("train-labels-idx1-ubyte.gz", "d53e105ee54ea40749a09fcbcd1e9432"),
        ("t10k-images-idx3-ubyte.gz", "9fb629c4189551a2d022fa330f9573f3"),
        ("t10k-labels-idx1-ubyte.gz", "ec29112dd5afa0611ce80d1b7f02629c"))},
    torchvision="MNIST", huggingface=("ylecun/mnist", "image", "label"), shape=(1, 28, 28), n_classes=10,
    mean=(0.1307,), std=(0.3081,))

_REGISTRY: dict[str, Dataset] = {d.name: d for d in (CIFAR10, MNIST)}
_DECLARED_BY: dict[str, str] = {d.name: "replikit.data.datasets (built in)" for d in (CIFAR10, MNIST)}


def register(dataset: Dataset, by: str = "") -> Dataset:
    """Add `dataset` (declared by `by`, e.g. "paper 'x'"); registering the same declaration again is a
    no-op, another one under a taken name an error that names both declarers and what differs."""
    known = _REGISTRY.setdefault(dataset.name, dataset)
    if known != dataset:
        differ = [f for f in known.__dataclass_fields__ if getattr(known, f) != getattr(dataset, f)]
        first = _DECLARED_BY.get(dataset.name, "an earlier declaration")
        raise ValueError(f"dataset {dataset.name!r} is declared twice, differently (by {first}, then by "
                         f"{by or 'another declaration'}; they differ in {', '.join(differ)}); give the new "
                         "one another name (a test that declares its own dataset can use `scoped()`)")
    _DECLARED_BY.setdefault(dataset.name, by or "an unnamed declaration")
    return dataset


@contextmanager
def scoped() -> Iterator[None]:
    """Datasets registered inside the block are forgotten after it (for tests that declare their own
    dataset in a process where the papers' datasets are registered too)."""
    saved, saved_by = dict(_REGISTRY), dict(_DECLARED_BY)
    try:
        yield
    finally:
        _REGISTRY.clear(), _DECLARED_BY.clear()
        _REGISTRY.update(saved), _DECLARED_BY.update(saved_by)


def declared_by(name: str) -> str:
    """Who declared dataset `name` (e.g. "config key data.datasets.blobs"), for messages."""
    return _DECLARED_BY.get(name, "an unnamed declaration")


def get(name: str) -> Dataset:
    if name not in _REGISTRY:
        raise KeyError(f"unknown dataset {name!r}; available: {', '.join(names())} (a paper declares its own "
                       "with Paper(..., datasets=(Dataset(...),)))")
    return _REGISTRY[name]


def names() -> list[str]:
    return sorted(_REGISTRY)


def image_shape(name: str) -> tuple[int, int, int]:
    """(channels, height, width) of dataset `name`'s images, from its record."""
    ds = get(name)
    if ds.shape is None:
        raise ValueError(f"dataset {name!r} declares no image shape; add shape=(channels, height, width) "
                         "to its Dataset(...)")
    return ds.shape


def class_count(name: str) -> int:
    """The number of classes of dataset `name`, from its record."""
    ds = get(name)
    if ds.n_classes is None:
        raise ValueError(f"dataset {name!r} declares no class count; add n_classes=... to its Dataset(...)")
    return ds.n_classes


def sizes(name: str) -> tuple[int, int]:
    """Full train and test counts of dataset `name`."""
    return get(name).sizes


def find_by_subset_file(source: str) -> Dataset | None:
    """The registered dataset whose subset file a manifest's `source` names (manifests written before
    they recorded their dataset)."""
    named = f"{source} "
    return next((d for d in _REGISTRY.values() if d.subset and f"subset:{d.subset[0]} " in named), None)


def subset_title(record: dict | None) -> str:
    """"<dataset> subset" for a manifest or a scorecard of data from a subset file, else "": from its
    recorded title, or for older records from the subset file its source names."""
    if not record or not record.get("subset"):
        return ""
    if record.get("dataset_title"):  # a manifest
        return f"{record['dataset_title']} subset"
    if record.get("data_label"):
        return str(record["data_label"]).split(" (")[0]
    found = find_by_subset_file(str(record.get("source") or record.get("data_source") or ""))
    return f"{found.title} subset" if found else "subset file"


def data_label(manifest: dict | None) -> str:
    """What a subset's banner and deviation say, from its manifest: the dataset and the counts the
    file holds, e.g. "CIFAR-10 subset (7,728 training / 1,000 test images)"; "" for full data."""
    title = subset_title(manifest)
    if not title:
        return ""
    counts = manifest.get("counts", {})
    sizes = " / ".join(f"{counts[k]:,} {what}" for k, what in (("train", "training"), ("test", "test"))
                       if k in counts)
    return title + (f" ({sizes} images)" if sizes else "")


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
