"""Provenance of a result: rule, script, config values, git commit, package versions, device."""

from __future__ import annotations

import datetime as dt
import platform
import subprocess
import sys
from importlib import metadata

PACKAGES = ("torch", "torchvision", "snakemake", "numpy", "pandas", "seaborn", "matplotlib",
            "datasets", "replikit")


def git_commit(cwd: str = ".") -> str:
    """HEAD commit, with `+dirty` when the work tree has uncommitted changes; `unknown` outside git."""
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True,
                             check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=cwd,
                               capture_output=True, text=True, check=True).stdout.strip()
        return sha + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def package_versions() -> dict[str, str]:
    out = {"python": sys.version.split()[0]}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def record(rule: str, script: str, config: dict, devices: list[str]) -> dict:
    """A provenance record for one output."""
    return {
        "rule": rule,
        "script": script,
        "config": config,
        "git_commit": git_commit(),
        "packages": package_versions(),
        "devices": sorted(set(devices)),
        "host": platform.platform(),
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    }


def write_figure_record(path: str, rule: str, script: str, config: dict, devices: list[str],
                        caption: str, scale: str, subset: bool, inputs: list[str], paper: str) -> dict:
    """Write `<figure>.provenance.json`: what the report shows beside each figure."""
    from .io import write_json

    rec = {**record(rule, script, config, devices), "paper": paper, "caption": caption, "scale": scale,
           "subset": subset, "runs": [str(p) for p in inputs]}
    write_json(path, rec)
    return rec
