"""Image datasets as canonical uint8 tensors plus a manifest.

Any dataset of the registry (`replikit.data.datasets`: CIFAR-10, MNIST and those the papers declare)
is prepared from its sources, tried in the configured order:
  local        a full copy found under one of `search_paths` (checksums verified)
  torchvision  the real download (md5 checked by torchvision) into `download_dir`
  huggingface  `datasets.load_dataset` from the hub
  subset       where the dataset declares one, a verified subset (CIFAR-10: `cifar10-subset.npz`,
               7,728 train + 1,000 test); the manifest then carries `subset: true`, which every
               figure and the report show.
A corrupt local copy is an error, never silently skipped, and it is found before any other source
is tried. Prepared data comes only from verified bytes: extracted MNIST files (which torchvision
reuses when they merely exist) are removed and re-extracted from the verified archives every time.
"""

from __future__ import annotations

import datetime as dt
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from replikit.core.io import file_digest, tensor_digest, torch_save, write_json
from replikit.data.datasets import Dataset
from replikit.data.datasets import get as dataset
from replikit.data.freshness import declared_files, find, own_file_only

SOURCES = ("local", "torchvision", "huggingface", "subset")


class DataError(RuntimeError):
    """A dataset could not be prepared; the message says what to do."""


class ChecksumError(DataError):
    """A file's checksum does not match the published one."""


class SourceUnavailable(Exception):
    """This source has no copy (not an error while other sources remain)."""


@dataclass
class Prepared:
    """Canonical tensors of one dataset and where they came from."""

    x_train: torch.Tensor  # uint8 (N, C, H, W)
    y_train: torch.Tensor  # int64 (N,)
    x_test: torch.Tensor
    y_test: torch.Tensor
    classes: list[str]
    source: str
    source_files: dict[str, str]  # path -> md5
    subset: bool = False
    dataset: str = ""  # the registry's name and title, for the manifest (banners name the data)
    dataset_title: str = ""


def verify_md5(path: Path, expected: str) -> str:
    digest = file_digest(path, "md5")
    if digest != expected:
        raise ChecksumError(
            f"checksum mismatch for {path}: md5 is {digest}, the declaration says {expected}. If the "
            f"file is the one you mean to use, declare md5 {digest}; if the declaration is right, the "
            "file is corrupt or another version: replace it."
        )
    return digest


def data_identity(data: dict) -> str:
    """Digest of a loaded dataset's tensors: checkpoints carry it, so data that changed under a
    killed job make it restart instead of resuming on other data."""
    return tensor_digest(data["x_train"], data["y_train"], data["x_test"], data["y_test"])


def require_count(key: str, n: int | None, available: int, what: str = "training images") -> None:
    """Raise DataError when config key `key` asks for more items than the prepared data has."""
    if n is not None and n > available:
        raise DataError(f"config key '{key}' asks for {n} {what} but the prepared data has only "
                        f"{available} (resources/data/*/manifest.json says which source, e.g. a "
                        f"subset file); lower {key} to at most {available}, or set it to null for all")


def _remove_extracted(ds: Dataset, download_dir: Path) -> None:
    """Drop files extracted from the .gz archives (MNIST's): torchvision reuses them when they exist,
    unverified."""
    for relative in ds.local_files:
        if relative.endswith(".gz") and not relative.endswith(".tar.gz"):
            (download_dir / relative.removesuffix(".gz")).unlink(missing_ok=True)


def _named(files: dict[str, str]) -> str:
    """Files as a reader wants them in a report: names and short checksums, no absolute paths."""
    return ", ".join(f"{Path(f).name} (md5 {md5[:12]})" for f, md5 in files.items())


def _verified_archives(ds: Dataset, download_dir: Path) -> dict[str, str] | None:
    """path -> md5 of the archives already in `download_dir` when all are there and verified."""
    wanted = {download_dir / relative: md5 for relative, md5 in ds.local_files.items()}
    if not wanted or not all(p.exists() and file_digest(p, "md5") == md5 for p, md5 in wanted.items()):
        return None
    return {str(p): md5 for p, md5 in wanted.items()}


def verify_local_copies(name: str, search_paths: list[str], sources: list[str] | tuple[str, ...]) -> None:
    """Fail at once (before any network source is tried) when a local copy fails its checksum."""
    for relative, md5 in declared_files(dataset(name), sources).items():
        path = find(search_paths, relative)
        if path is not None:
            verify_md5(path, md5)


def _from_torchvision(ds_train, ds_test, classes: list[str]) -> dict:
    def arr(ds) -> torch.Tensor:
        x = torch.as_tensor(np.asarray(ds.data))
        return x.unsqueeze(1) if x.dim() == 3 else x.permute(0, 3, 1, 2).contiguous()

    return dict(x_train=arr(ds_train), y_train=torch.as_tensor(np.asarray(ds_train.targets)).long(),
                x_test=arr(ds_test), y_test=torch.as_tensor(np.asarray(ds_test.targets)).long(),
                classes=list(classes))


def _torchvision_load(ds: Dataset, root: Path, download: bool) -> dict:
    import torchvision

    if ds.torchvision is None:
        raise SourceUnavailable(f"{ds.title} declares no torchvision class")
    cls = getattr(torchvision.datasets, ds.torchvision)
    train = cls(str(root), train=True, download=download)
    test = cls(str(root), train=False, download=download)
    return _from_torchvision(train, test, train.classes)


def _local(ds: Dataset, search_paths: list[str], download_dir: Path) -> Prepared:
    found = {relative: find(search_paths, relative) for relative in ds.local_files}
    if found and all(found.values()):
        files = {}
        for relative, path in found.items():
            files[str(path)] = verify_md5(path, ds.local_files[relative])
            (download_dir / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, download_dir / relative)  # extract in our folder, never in the source
        _remove_extracted(ds, download_dir)
        t = _torchvision_load(ds, download_dir, download=True)  # extracts, checks md5 again
        return Prepared(**t, source=f"local:{_named(files)}", source_files=files)
    extracted = find(search_paths, ds.extracted) if ds.extracted else None
    if extracted is not None:
        try:  # torchvision checks the md5 of every extracted file
            t = _torchvision_load(ds, extracted.parent, download=False)
        except RuntimeError as e:
            raise ChecksumError(f"local {ds.title} copy at {extracted} is corrupt: {e}") from e
        return Prepared(**t, source=f"local:{extracted.name} (extracted, md5s checked by torchvision)",
                        source_files={str(extracted): "verified"})
    wanted = list(ds.local_files) + ([ds.extracted] if ds.extracted else [])
    raise SourceUnavailable(f"no {' or '.join(wanted) or 'local files declared'} in search paths")


UNREACHABLE: set[str] = set()  # hosts that failed once in this job: no second wait on them
CONNECT_TIMEOUT_S = 2.0


def _reachable(url_or_host: str, timeout: float = CONNECT_TIMEOUT_S) -> bool:
    """Whether a TCP connection to the host (port 443) opens within `timeout` seconds. A host that
    failed once is not tried again in this job, so an offline machine moves on to the next source
    at once instead of waiting through each library's retries."""
    import socket
    from urllib.parse import urlparse

    host = urlparse(url_or_host).hostname or url_or_host
    if host in UNREACHABLE:
        return False
    try:
        socket.create_connection((host, 443), timeout=timeout).close()
        return True
    except OSError:
        UNREACHABLE.add(host)
        return False


def _torchvision_hosts(ds: Dataset) -> list[str]:
    """The hosts torchvision downloads `ds` from (its class's `url` or `mirrors`)."""
    import torchvision

    cls = getattr(torchvision.datasets, ds.torchvision, None)
    urls = [getattr(cls, "url", None), *getattr(cls, "mirrors", [])]
    return [u for u in urls if isinstance(u, str)]


def _download(ds: Dataset, download_dir: Path) -> Prepared:
    """torchvision's download; archives already in `download_dir` that pass their md5 are reused
    (and the manifest says so: source `cache:<download_dir>`, not a download)."""
    if ds.torchvision is None:
        raise SourceUnavailable(f"{ds.title} declares no torchvision class")
    cached = _verified_archives(ds, download_dir)
    hosts = _torchvision_hosts(ds)
    if cached is None and hosts and not any(_reachable(h) for h in hosts):
        raise SourceUnavailable(f"no connection to {', '.join(hosts)} within {CONNECT_TIMEOUT_S:g} s "
                                "(offline?)")
    _remove_extracted(ds, download_dir)
    try:
        t = _torchvision_load(ds, download_dir, download=True)
    except (OSError, RuntimeError, ValueError) as e:  # URLError is an OSError
        raise SourceUnavailable(f"torchvision download failed: {e}") from e
    if cached is not None:
        return Prepared(**t, source=f"cache:{_named(cached)}", source_files=cached)
    return Prepared(**t, source="torchvision-download",
                    source_files=_verified_archives(ds, download_dir) or {})


HF_ENDPOINT = "https://huggingface.co"


def _huggingface(ds: Dataset, download_dir: Path) -> Prepared:
    if ds.huggingface is None:
        raise SourceUnavailable(f"{ds.title} declares no Hugging Face dataset")
    import os

    if os.environ.get("HF_HUB_OFFLINE") != "1" and not _reachable(HF_ENDPOINT):
        os.environ["HF_HUB_OFFLINE"] = os.environ["HF_DATASETS_OFFLINE"] = "1"  # the rest of the job
        raise SourceUnavailable(f"no connection to {HF_ENDPOINT} within {CONNECT_TIMEOUT_S:g} s "
                                "(offline?); only the local Hugging Face cache is read from now on")
    try:
        import datasets

        repo, img_key, label_key = ds.huggingface
        hub = datasets.load_dataset(repo, cache_dir=str(download_dir / "huggingface"))
    except Exception as e:  # the hub raises many kinds of connection errors
        raise SourceUnavailable(f"Hugging Face hub: {type(e).__name__}: {e}") from e

    def split(s) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.stack([torch.as_tensor(np.asarray(im)) for im in s[img_key]])
        x = x.unsqueeze(1) if x.dim() == 3 else x.permute(0, 3, 1, 2).contiguous()
        return x, torch.as_tensor(s[label_key]).long()

    xtr, ytr = split(hub["train"])
    xte, yte = split(hub["test"])
    classes = hub["train"].features[label_key].names
    return Prepared(xtr, ytr, xte, yte, list(classes), source=f"huggingface:{repo}", source_files={})


def _subset(ds: Dataset, search_paths: list[str]) -> Prepared:
    if ds.subset is None:
        raise SourceUnavailable(f"no verified subset is declared for {ds.title}")
    path = find(search_paths, ds.subset[0])
    if path is None:
        raise SourceUnavailable(f"no {ds.subset[0]} in search paths")
    md5 = verify_md5(path, ds.subset[1])
    with np.load(path) as z:
        return Prepared(
            x_train=torch.from_numpy(z["x_train"]).contiguous(),
            y_train=torch.from_numpy(z["y_train"]).long(),
            x_test=torch.from_numpy(z["x_test"]).contiguous(),
            y_test=torch.from_numpy(z["y_test"]).long(),
            classes=[str(c) for c in z["classes"]],
            source=f"{'file' if ds.complete else 'subset'}:{_named({str(path): md5})}",
            source_files={str(path): md5}, subset=not ds.complete,
        )


def prepare(name: str, search_paths: list[str], download_dir: str | Path,
            sources: list[str] | tuple[str, ...] = SOURCES,
            log: Callable[[str], None] = lambda m: print(m, file=sys.stderr)) -> Prepared:
    """Find or download dataset `name` (of the registry, `replikit.data.datasets`), trying `sources` in
    order."""
    try:
        ds = dataset(name)
    except KeyError as e:
        raise DataError(e.args[0]) from None
    download_dir = Path(download_dir)
    verify_local_copies(name, search_paths, sources)
    tried = []
    for source in sources:
        try:
            if source == "local":
                result = _local(ds, search_paths, download_dir)
            elif source == "torchvision":
                result = _download(ds, download_dir)
            elif source == "huggingface":
                result = _huggingface(ds, download_dir)
            elif source == "subset":
                result = _subset(ds, search_paths)
            else:
                raise DataError(f"unknown data source {source!r}; use {', '.join(SOURCES)}")
        except SourceUnavailable as e:
            tried.append(f"{source}: {e}")
            log(f"[data] {name}: {source} unavailable ({e})")
            continue
        log(f"[data] {name}: using {result.source}")
        result.dataset, result.dataset_title = ds.name, ds.title
        return result
    if own_file_only(ds):
        raise DataError(f"dataset {name!r} is not available: its file {ds.subset[0]} is a file of your own, "
                        f"which no source downloads; put it in one of data.search_paths {search_paths}")
    raise DataError(
        f"dataset {name!r} is not available. Tried:\n  " + "\n  ".join(tried)
        + f"\nDownload {ds.how_to_get()} and put it in one of data.search_paths {search_paths}, "
        "or run on a machine with internet access."
    )


def save(prepared: Prepared, tensors_path: str | Path, manifest_path: str | Path) -> dict:
    """Write the tensors, then a manifest with counts, checksums and the subset flag."""
    torch_save(tensors_path, {k: getattr(prepared, k)
                              for k in ("x_train", "y_train", "x_test", "y_test", "classes")})
    manifest = {
        "dataset": prepared.dataset,
        "dataset_title": prepared.dataset_title,
        "source": prepared.source,
        "source_files": prepared.source_files,
        "subset": prepared.subset,
        "counts": {"train": int(prepared.y_train.numel()), "test": int(prepared.y_test.numel())},
        "shape": list(prepared.x_train.shape[1:]),
        "classes": prepared.classes,
        "sha256": file_digest(tensors_path),
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    }
    write_json(manifest_path, manifest)
    return manifest


def select_subset(n_total: int, n: int | None, seed: int) -> torch.Tensor:
    """Indices of a fixed random subset of size n (all when n is None)."""
    from replikit.core.seeding import derive_seed

    if n is None or n >= n_total:
        return torch.arange(n_total)
    g = torch.Generator().manual_seed(derive_seed(seed, "subset"))
    return torch.randperm(n_total, generator=g)[:n].sort().values


def batch_order(n: int, batch: int, steps: int, seed: int) -> torch.Tensor:
    """(steps, batch) indices: epochs of fresh permutations, the same for every run of the seed."""
    from replikit.core.seeding import derive_seed

    g = torch.Generator().manual_seed(derive_seed(seed, "batches"))
    per_epoch = n // batch
    epochs = -(-steps // per_epoch)
    order = torch.cat([torch.randperm(n, generator=g)[: per_epoch * batch] for _ in range(epochs)])
    return order.view(-1, batch)[:steps]


def load_prepared(tensors_path: str | Path, manifest_path: str | Path) -> dict:
    """The tensors of a prepared dataset, checked against its manifest."""
    from replikit.core.io import read_json

    return load(tensors_path, read_json(manifest_path))


def load(tensors_path: str | Path, manifest: dict) -> dict:
    """Load prepared tensors after checking them against the manifest's sha256."""
    digest = file_digest(tensors_path)
    if digest != manifest["sha256"]:
        raise ChecksumError(
            f"{tensors_path} does not match its manifest (sha256 {digest} != {manifest['sha256']}); "
            "delete it so the data rule rebuilds it"
        )
    return torch.load(tensors_path, weights_only=True)
