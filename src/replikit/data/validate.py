"""A prepared dataset checked against its declaration before anything trains on it.

A declaration (`replikit.data.datasets.Dataset`, or config key `data.datasets.<name>`) says how many
classes the data has, the shape of an image and how many images each split holds. A file that
disagrees would otherwise reach training, where torch stops with a message about indices, not about
the data (`IndexError: Target 12 is out of bounds`), or trains silently on the wrong tensors. The
prepare job (workflow/scripts/prepare_dataset.py) calls `check` before it writes anything, so no
tensors or manifest are left that Snakemake would take as complete.
"""

from __future__ import annotations

from replikit.data.datasets import Dataset
from replikit.data.prepare import DataError, Prepared


def _field(ds: Dataset, key: str) -> str:
    """Where the declaration's field lives, as a user would edit it."""
    return f"`{key}` of dataset {ds.name!r} (config key data.datasets.{ds.name}.{key}, or its Dataset(...))"


def mismatches(prepared: Prepared, ds: Dataset) -> list[str]:
    """Every way the prepared tensors disagree with the declaration `ds`: labels outside
    0 .. n_classes-1, a class-name count other than n_classes, an image shape other than `shape`,
    split sizes other than `sizes` (at most them, for a subset); [] when none."""
    problems = []
    labels = [y for y in (prepared.y_train, prepared.y_test) if y.numel()]
    if ds.n_classes is not None and labels:
        low, high = min(int(y.min()) for y in labels), max(int(y.max()) for y in labels)
        if low < 0 or high >= ds.n_classes:
            problems.append(f"{_field(ds, 'n_classes')} is {ds.n_classes}, but the file holds labels "
                            f"{low} .. {high}; fix: declare n_classes: {high + 1} if those are classes, or "
                            "relabel the file as 0 .. n_classes-1")
        if prepared.classes and len(prepared.classes) != ds.n_classes:
            problems.append(f"{_field(ds, 'n_classes')} is {ds.n_classes}, but the file names "
                            f"{len(prepared.classes)} classes ({', '.join(map(str, prepared.classes[:5]))}"
                            f"{' ...' if len(prepared.classes) > 5 else ''}); fix: make the two agree")
    shape = tuple(int(d) for d in prepared.x_train.shape[1:])
    if ds.shape is not None and shape != tuple(ds.shape):
        problems.append(f"{_field(ds, 'shape')} is {list(ds.shape)}, but the file's images are {list(shape)} "
                        "(channels, height, width); fix: declare the file's shape, or store the images as "
                        "declared")
    counts = (int(prepared.y_train.numel()), int(prepared.y_test.numel()))
    if ds.sizes and prepared.subset and any(c > s for c, s in zip(counts, ds.sizes, strict=True)):
        problems.append(f"{_field(ds, 'sizes')} is {list(ds.sizes)} (train, test), but the subset file holds "
                        f"{list(counts)}, more than the whole dataset; fix: declare the full dataset's sizes")
    elif ds.sizes and not prepared.subset and counts != tuple(ds.sizes):
        problems.append(f"{_field(ds, 'sizes')} is {list(ds.sizes)} (train, test), but the file holds "
                        f"{list(counts)}; fix: declare {list(counts)}, or declare the file as a subset")
    return problems


def check(prepared: Prepared, ds: Dataset) -> None:
    """DataError naming every mismatch (`mismatches`); nothing when the file is as declared."""
    problems = mismatches(prepared, ds)
    if problems:
        raise DataError(f"dataset {ds.name!r} ({prepared.source}) is not as declared; nothing was "
                        "prepared, and nothing trains on it:\n  " + "\n  ".join(problems))
