"""A dataset's local files as they are now, checked against its declaration before any job.

A dataset that is only a user's own `.npz` file is prepared under a folder keyed by the file's md5
(`prepared_key`: `resources/data/<name>-<md5, 12 digits>/`), so a file made again and declared with
its new md5 is prepared again, and every job that read the old tensors runs again on the new ones
(their input paths changed). `errors`, called by the workflow before any job, stops the run when a
file's md5 is not the declared one (naming both, and both fixes: the prepared folder is then the
file's content's, whatever the declaration said) or when a user's own file, which nothing downloads,
is in none of the search paths. md5s are cached by path, size and modification time, so an unchanged
file is read once.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from replikit.core.io import file_digest
from replikit.data.datasets import Dataset
from replikit.data.datasets import get as dataset

CACHE = Path(".snakemake/replikit-md5.json")  # in the output tree's own metadata folder


def declared_files(ds: Dataset, sources: list[str] | tuple[str, ...]) -> dict[str, str]:
    """Relative path -> declared md5 of every local copy the `sources` would read."""
    files = dict(ds.local_files) if "local" in sources else {}
    if "subset" in sources and ds.subset:
        files[ds.subset[0]] = ds.subset[1]
    return files


def find(search_paths: list[str], relative: str) -> Path | None:
    """The first copy of `relative` under the search paths, or None."""
    for root in search_paths:
        p = Path(root).expanduser().resolve() / relative
        if p.exists():
            return p
    return None


def md5_now(path: Path, cache: Path = CACHE) -> str:
    """The file's md5 as it is now (cached by path, size and modification time)."""
    stat = path.stat()
    key, stamp = str(path), [stat.st_size, stat.st_mtime_ns]
    try:
        known = json.loads(cache.read_text())
    except (OSError, ValueError):
        known = {}
    if known.get(key, {}).get("stamp") == stamp:
        return known[key]["md5"]
    digest = file_digest(path, "md5")
    known[key] = {"stamp": stamp, "md5": digest}
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_name(f"{cache.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(known, indent=0, sort_keys=True))
        os.replace(tmp, cache)
    except OSError:
        pass  # a read-only tree: hashed again next time
    return digest


def own_file_only(ds: Dataset) -> bool:
    """The dataset is only a user's `.npz` file: no download or hub source can bring it."""
    return bool(ds.subset) and not ds.local_files and not ds.torchvision and not ds.huggingface


def prepared_key(name: str) -> str:
    """The folder under resources/data/ of dataset `name`'s prepared tensors: its name, or for a user's
    own file its name and declared md5 (which `errors` holds to the file's own before any job)."""
    ds = dataset(name)
    return f"{name}-{ds.subset[1][:12]}" if own_file_only(ds) else name


def dataset_of_key(key: str) -> str:
    """The dataset a `prepared_key` names (dataset names have no '-')."""
    return key.split("-", 1)[0]


def errors(name: str, search_paths: list[str], sources: list[str] | tuple[str, ...],
           prepared: bool, declared_by: str = "") -> list[str]:
    """What stops the run before any job for dataset `name`: a local file whose md5 is not the declared
    one, and a user's own file in none of the search paths while the dataset is not `prepared` yet."""
    ds, problems = dataset(name), []
    where = declared_by or f"the declaration of dataset {name!r}"
    for relative, md5 in declared_files(ds, sources).items():
        path = find(search_paths, relative)
        if path is None:
            if own_file_only(ds) and not prepared:
                problems.append(
                    f"dataset {name!r}: its file {relative} is in none of data.search_paths "
                    f"{search_paths}; it is a file of your own, which no source downloads: put it in one "
                    "of those folders, or add its folder to config key data.search_paths")
            continue
        actual = md5_now(path)
        if actual != md5:
            problems.append(
                f"dataset {name!r}: {path} has md5 {actual}, but {where} says {md5}. If the file is the "
                f"one you mean to use (made again, say), declare md5 {actual}; if the declaration is "
                f"right, the file is not that copy (corrupt, or another version): replace it"
                + (f" with the one from {ds.url}" if ds.url else ""))
    return problems
