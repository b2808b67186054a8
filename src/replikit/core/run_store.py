"""A store of finished stage outputs (training runs, generated data) keyed by what defines them, so
that a job another output tree already ran is copied, not run again: the rungs of a scale ladder
(`replikit.plan.ladder`) share their common runs through it (config key `run_store`).

The key is a hash of the paper, the stage, the job's wildcards, its run-defining config (the rule's
`cfg` param, whose change reruns a job in Snakemake too), the device kind and the hash of the code
that computes the job (`provenance.code_hash` of the stage's module and what it imports): after a
change to that code, the store never hands out a result of the old code.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections.abc import Mapping
from pathlib import Path

DONE = "origin.json"  # written last: an entry without it is incomplete and ignored


def key(paper: str, stage: str, wildcards: Mapping[str, str], cfg: dict, device_kind: str,
        code: str = "") -> str:
    """The entry of one job: a hash of what defines it, its code's hash (`code`) included."""
    blob = json.dumps([paper, stage, dict(sorted(wildcards.items())), cfg, device_kind, code], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def _copy(src: Path, dst: Path) -> None:
    """Copy a file or folder to `dst` through a temporary name, so a half-copied output never
    stands at `dst`."""
    tmp = dst.with_name(dst.name + ".store-tmp")
    shutil.rmtree(tmp, ignore_errors=True) if tmp.is_dir() else tmp.unlink(missing_ok=True)
    tmp.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(src, tmp) if src.is_dir() else shutil.copy2(src, tmp)
    if dst.is_dir():
        shutil.rmtree(dst)
    tmp.replace(dst)


def fetch(store: str | Path, entry: str, outputs: Mapping[str, str]) -> dict | None:
    """Copy a stored entry's outputs to `outputs` (name -> path); its origin record, or None when the
    entry is missing or incomplete (then nothing is copied)."""
    where = Path(store) / entry
    origin = where / DONE
    if not origin.is_file() or not all((where / name).exists() for name in outputs):
        return None
    for name, path in outputs.items():
        _copy(where / name, Path(path))
    return json.loads(origin.read_text())


def put(store: str | Path, entry: str, outputs: Mapping[str, str], describe: dict) -> None:
    """Store a finished job's outputs under `entry` (written aside, then renamed into place)."""
    where = Path(store) / entry
    if (where / DONE).is_file():
        return
    tmp = Path(store) / f".{entry}.{os.getpid()}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for name, path in outputs.items():
        src = Path(path)
        shutil.copytree(src, tmp / name) if src.is_dir() else shutil.copy2(src, tmp / name)
    origin = {**describe, "outdir": str(Path.cwd()), "stored": time.strftime("%Y-%m-%d %H:%M:%S")}
    (tmp / DONE).write_text(json.dumps(origin, indent=1, sort_keys=True))
    shutil.rmtree(where, ignore_errors=True)
    tmp.replace(where)
