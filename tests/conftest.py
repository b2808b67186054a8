"""Shared fixtures: repository paths and a small synthetic image dataset; one torch thread per
pytest-xdist worker.

The test command runs two workers (`-n 2 --dist loadgroup`): the tests that run a whole Snakemake
DAG on both cores carry `DAGS` and run one after another on one worker, while the other worker takes
every other test beside them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
SHARED = (ROOT.parent / "shared" / "datasets").resolve()
DAGS = pytest.mark.xdist_group(name="snakemake_dags")  # `--cores 2` DAG tests: one at a time


def pytest_configure(config: pytest.Config) -> None:
    """A pytest-xdist worker keeps torch to one thread (its subprocesses too), so that it and the
    DAG tests' jobs, each pinned to one thread, never oversubscribe the cores."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        torch.set_num_threads(1)
        os.environ["OMP_NUM_THREADS"] = "1"


@pytest.fixture
def root() -> Path:
    return ROOT


@pytest.fixture
def tiny_images() -> dict:
    """40 train / 20 test 3x16x16 uint8 images in 4 classes, each class a colour tint."""
    g = torch.Generator().manual_seed(0)

    def make(n: int) -> tuple[torch.Tensor, torch.Tensor]:
        y = torch.arange(n) % 4
        base = torch.randint(0, 60, (n, 3, 16, 16), generator=g)
        base[torch.arange(n), y % 3] += 150
        return base.clamp(0, 255).to(torch.uint8), y

    xtr, ytr = make(40)
    xte, yte = make(20)
    return {"x_train": xtr, "y_train": ytr, "x_test": xte, "y_test": yte,
            "classes": ["a", "b", "c", "d"]}
