"""Shared fixtures: repository paths and a small synthetic image dataset; one torch thread per
pytest-xdist worker.

The test command runs two workers, each taking whole test files (`-n 2 --dist loadfile
--no-loadscope-reorder`), so that the tests of one file (e.g. the SLURM tests and their shared local
run) stay in one process. The files that run whole Snakemake DAGs are handed out first, the longest
first (HEAVY_FIRST): the smoke DAG (test_workflow.py) on one worker from the start, the rest on
the other, at niceness 10 while the smoke DAG runs (`pytest_runtest_setup`), so that CI's longest
path gets the cores first; the preflight runs only when asked for (`-m preflight`). (`--dist
loadgroup` would group tests by mark, but pytest-xdist 3.8 cannot rename a test under pytest 9, so
its groups are ignored.)"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from replikit.core.numerics import pin_environment

pin_environment()  # every test computes at the pinned kernels; set before torch is imported (importing
# replikit does it too: this says so where a reader of the tests looks)

import torch  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SHARED = (ROOT.parent / "shared" / "datasets").resolve()


HEAVY_FIRST = ("test_workflow.py", "test_preflight.py", "test_slurm.py", "test_browser.py",
               "test_null_claims.py", "test_ladder.py", "test_new_paper.py", "test_faults.py")


# The smoke DAG runs first in its file. pytest-xdist hands a worker its next file as soon as two or
# fewer of its tests are left to run; were the DAG test near the end of its file, as written, the
# worker would take a further file when the DAG starts and hold it for the DAG's 40 minutes while
# the other worker ran out of work (CI's run at d604a8f: test_new_paper waited there, 2026-11-28).
FIRST_IN_FILE = ("test_smoke_scale_end_to_end",)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The files of HEAVY_FIRST first, in that order, and FIRST_IN_FILE first in its file (a stable
    sort: the other tests keep their order within a file, the other files theirs), so that
    pytest-xdist starts the longest work first and queues nothing behind it."""
    rank = {name: i for i, name in enumerate(HEAVY_FIRST)}
    items.sort(key=lambda item: (rank.get(item.path.name, len(rank)),
                                 getattr(item, "originalname", item.name) not in FIRST_IN_FILE))
    drop_subsumed_fast_variants(config, items)


def drop_subsumed_fast_variants(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test run at two sizes (`...-fast]` for the fast suite, `...-full]` marked slow, as the null
    simulations are) runs only the full size when both are selected: the full one checks the same thing
    with more draws, so the fast one adds time and no evidence (CI runs everything)."""
    if "not slow" in (config.option.markexpr or ""):
        return
    ids = {item.nodeid for item in items}
    fast = [item for item in items if item.nodeid.endswith("-fast]") or item.nodeid.endswith("[fast]")]
    dropped = [item for item in fast if item.nodeid[:-len("fast]")] + "full]" in ids]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if item not in dropped]


def pytest_configure(config: pytest.Config) -> None:
    """A pytest-xdist worker keeps torch to one thread (its subprocesses too), so that the two
    workers and the Snakemake jobs of the DAG tests, each pinned to one thread, share the cores by
    turns and never oversubscribe them with threads."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        torch.set_num_threads(1)
        os.environ["OMP_NUM_THREADS"] = "1"
    else:
        stop_on_config_errors()


SCALE_FILES = ("config/config.yaml", "config/smoke.yaml", "config/paper.yaml", "config/preflight.yaml")


def stop_on_config_errors() -> None:
    """A typo in a config file fails every test that loads it: say it once, before any test runs,
    naming the file and the nearest valid key (replikit.core.config.validate_config)."""
    from replikit.core.config import ConfigError, load_config

    for name in SCALE_FILES:
        try:
            load_config(ROOT / name, ROOT / "workflow/schemas/config.schema.yaml")
        except ConfigError as e:
            pytest.exit(f"{name}: {e}\n(no test ran: fix the configuration first)", returncode=4)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """In a pytest-xdist worker, every test file but the smoke DAG's runs at niceness
    BESIDE_THE_SMOKE_DAG (the worker lowers its own priority once, before its first such test, and its
    subprocesses inherit it): the two cores go to the smoke DAG's jobs first, and the other tests fill
    the gaps (CI's run at 3e526be: the smoke DAG, sharing the cores with the other worker's null
    simulations and DAG tests, ran past its 3,600 s timeout)."""
    global _YIELDED
    if os.environ.get("PYTEST_XDIST_WORKER") and item.path.name != "test_workflow.py" and not _YIELDED:
        os.nice(BESIDE_THE_SMOKE_DAG)
        _YIELDED = True


_YIELDED = False  # this worker has lowered its priority (pytest_runtest_setup)


# The smoke DAG is CI's longest path; the other tests that run whole DAGs (the preflight, the SLURM
# tests' local run, the new paper's smoke run) run theirs at this niceness, so that the two cores go
# to the smoke DAG first and the rest fills the gaps (CI's run at d604a8f: the smoke DAG, sharing the
# cores evenly with the preflight DAG, ran past its 3,000 s timeout).
BESIDE_THE_SMOKE_DAG = 10


def run_process(cmd: list[str], cwd: Path | str, timeout: float, nice: int = 0,
                env: dict | None = None) -> subprocess.CompletedProcess:
    """`subprocess.run(cmd, capture_output=True, text=True)` at niceness `nice`, in a process group
    of its own that is killed whole on timeout: a killed Snakemake leaves its running jobs behind,
    and they would hold the cores for the rest of the test run. It stays in the test run's session:
    with the kernel's autogroup scheduling (CI's and this machine's kernels), each session shares the
    cores as a group, whatever its processes' niceness, so a DAG in a session of its own took half the
    cores from the tests beside it however they were niced."""
    cmd = ["nice", "-n", str(nice), *cmd] if nice else cmd  # coreutils: no preexec_fn under threads
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, process_group=0)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


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
