"""Shared by tests/test_slurm.py, tests/test_browser.py and tests/test_data_setting.py: the one-node
SLURM test cluster, the SLURM profile as a user points it at that cluster, and one small
continual-learning smoke DAG, on a synthetic dataset declared in its config (issue 67), run locally
(once per pytest session) that the SLURM comparison, the browser test and the data-setting test read.

The cluster is the one `.ci/slurm_cluster.sh` starts (partition `debug`, account `replikit`, one
pretend GPU). Tests start it themselves only under CI=true or REPLIKIT_START_SLURM=1, because the
script rewrites /etc/slurm; elsewhere they skip, saying how to start it.
"""

from __future__ import annotations

import atexit
import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest
import yaml

from replikit.core.io import file_digest
from tests.conftest import BESIDE_THE_SMOKE_DAG, run_process

ROOT = Path(__file__).resolve().parents[1]
SHARED = (ROOT.parent / "shared" / "datasets").resolve()
CLUSTER_SCRIPT = ROOT / ".ci" / "slurm_cluster.sh"
PARTITION, ACCOUNT = "debug", "replikit"
IN_CI = os.environ.get("CI", "").lower() == "true"

# The continual-learning smoke DAG with one seed and smaller width and similarity sweeps: 6 training
# jobs (two seeds until 2026-11-26; one halves the DAG for CI's time, and every check stays: each
# kind of run, its sbatch request and its bitwise match with the local run). Their resources come
# from the config's `resources` (distinct numbers, so the test sees them reach sbatch).
CL_TEST_CONFIG = {
    "outdir": ".",  # the tree at the work folder's top (smoke's own is scales/smoke)
    "batch_seeds": False,  # one job per seed, as on a cluster at the paper's scale
    "data": {"search_paths": [str(SHARED)]},
    "papers": ["continual_learning"],
    "continual_learning": {
        "seeds": [0],
        "width_sweep": {"widths": [64, 256], "gamma0": 1.0},
        "similarity": {"permuted_fractions": [1.0, 0.3]},
        "resources": {"mem_mb": 1500, "runtime": 15, "gpu": 0},
    },
}
BLOBS_SIZES = (160, 64)  # training and test images of the synthetic dataset


def write_blobs(folder: Path) -> str:
    """A small synthetic image dataset, 3x16x16 in 4 classes (each class a tint), as the .npz a
    dataset record declares (written once per folder; the same bytes every time); its md5."""
    path = folder / "blobs.npz"
    if not path.exists():
        rng = np.random.default_rng(0)

        def split(n: int) -> tuple[np.ndarray, np.ndarray]:
            y = np.arange(n) % 4
            x = rng.integers(0, 90, (n, 3, 16, 16))
            x[np.arange(n), y % 3] += 120 + 30 * (y // 3)[:, None, None]
            return x.clip(0, 255).astype(np.uint8), y

        (xtr, ytr), (xte, yte) = split(BLOBS_SIZES[0]), split(BLOBS_SIZES[1])
        folder.mkdir(parents=True, exist_ok=True)
        np.savez(folder / "tmp.npz", x_train=xtr, y_train=ytr, x_test=xte, y_test=yte,
                 classes=np.array(list("abcd")))
        (folder / "tmp.npz").rename(path)
    return file_digest(path, "md5")


def blobs_data(folder: Path) -> dict:
    """Config key `data` with the synthetic dataset declared in one entry, its file under `folder`."""
    md5 = write_blobs(folder)
    entry = {"title": "Blobs", "sizes": list(BLOBS_SIZES), "subset": ["blobs.npz", md5], "shape": [3, 16, 16],
             "n_classes": 4}
    return {"search_paths": [str(folder), str(SHARED)], "sources": ["local", "subset"],
            "datasets": {"blobs": entry}}


def cl_test_config(folder: Path) -> dict:
    """CL_TEST_CONFIG on the synthetic dataset (its file under `folder`): the continual-learning
    paper runs on it by its key `dataset` alone (smaller per-task counts: the file holds 160 images)."""
    cfg = {**CL_TEST_CONFIG, "data": blobs_data(folder)}
    cfg["continual_learning"] = {**CL_TEST_CONFIG["continual_learning"], "dataset": "blobs", "n_train": 48,
                                 "n_test": 24}
    return cfg


# Its training, data and figure jobs. Not the scorecard job: its code changes with every claim, and
# the browser test (which needs it) builds it on top of the local run.
# On blobs, not its own MNIST, the paper's figures and scorecard go to results/<paper>/on-blobs/
# (replikit.papers.glue.results_dir).
CL_RESULTS = "results/continual_learning/on-blobs"
CL_TARGETS = [f"{CL_RESULTS}/figures/{f}.png" for f in
              ("forgetting_vs_width", "forgetting_vs_gamma", "similarity", "joint_vs_sequential")]


def smk(*args: str, cwd: Path = ROOT, timeout: int = 900) -> subprocess.CompletedProcess:
    """Snakemake at BESIDE_THE_SMOKE_DAG niceness (the SLURM tests' own jobs run under slurmd)."""
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"), *args]
    return run_process(cmd, cwd, timeout, BESIDE_THE_SMOKE_DAG)


def write_config(path: Path, cfg: dict) -> Path:
    path.write_text(yaml.safe_dump(cfg))
    return path


def config_args(workdir: Path, overlay: Path) -> list[str]:
    """Targets must come before these: --configfile takes every following word as a file."""
    return ["--directory", str(workdir), "--configfile", str(ROOT / "config/smoke.yaml"), str(overlay)]


# ---------------------------------------------------------------- the cluster


def _sh(cmd: list[str], timeout: int = 30) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def cluster_problem() -> str | None:
    """None when the replikit test cluster answers with an idle node; otherwise why not."""
    if shutil.which("sinfo") is None or shutil.which("sbatch") is None:
        return "no SLURM client commands (sinfo, sbatch) on PATH"
    try:
        states = _sh(["sinfo", "-h", "-p", PARTITION, "-o", "%t"]).stdout.split()
        if not any(s.rstrip("*") in ("idle", "mix", "alloc") for s in states):
            return f"partition {PARTITION!r} has no usable node (sinfo states: {states or 'none'})"
        assoc = _sh(["sacctmgr", "-n", "-P", "list", "assoc", f"account={ACCOUNT}", "format=account"])
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"SLURM does not answer: {exc}"
    if ACCOUNT not in assoc.stdout.split():
        return f"no SLURM account {ACCOUNT!r} (sacct/slurmdbd not set up as by .ci/slurm_cluster.sh)"
    return None


@lru_cache(maxsize=1)
def ensure_cluster() -> str | None:
    """Start the test cluster where allowed; None when it is usable, else the reason it is not."""
    problem = cluster_problem()
    if problem is None:
        return None
    if not (IN_CI or os.environ.get("REPLIKIT_START_SLURM") == "1"):
        return (f"{problem}; start the one-node test cluster with `sudo {CLUSTER_SCRIPT.relative_to(ROOT)}` "
                "(or set REPLIKIT_START_SLURM=1 when running as root)")
    if os.geteuid() != 0:
        return f"{problem}; starting the test cluster needs root"
    res = subprocess.run(["bash", str(CLUSTER_SCRIPT)], capture_output=True, text=True, timeout=900)
    if res.returncode != 0:
        return f"{CLUSTER_SCRIPT.name} failed (exit {res.returncode}): {res.stderr[-2000:]}"
    return cluster_problem()


def require_cluster() -> None:
    problem = ensure_cluster()
    if problem is not None:
        if IN_CI:
            pytest.fail(f"CI must run the SLURM tests, but: {problem}")
        pytest.skip(problem)


def user_profile(dest: Path) -> Path:
    """profiles/slurm as a cluster user edits it: only slurm_partition and slurm_account changed."""
    cfg = yaml.safe_load((ROOT / "profiles/slurm/config.yaml").read_text())
    cfg["default-resources"].update(slurm_partition=PARTITION, slurm_account=ACCOUNT)
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    return dest


def sacct_rows(run_id: str, fields: list[str]) -> list[dict]:
    """`sacct` rows (allocations only, -X) of the jobs one Snakemake run submitted (job name = run id)."""
    res = _sh(["sacct", "-X", "-n", "-P", "--name", run_id, "-S", "now-1days", "-E", "now",
               "-o", ",".join(fields)])
    assert res.returncode == 0, res.stderr
    lines = [line for line in res.stdout.splitlines() if line.strip()]
    return [dict(zip(fields, line.split("|"), strict=True)) for line in lines]


# ---------------------------------------------------------------- the local reference run


def _session_dir() -> Path:
    path = Path(tempfile.mkdtemp(prefix="replikit-slurm-tests-"))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


@lru_cache(maxsize=1)
def session_dir() -> Path:
    return _session_dir()


def shared_root(tmp_path_factory) -> Path:  # noqa: ANN001 (pytest's TempPathFactory)
    """A folder every pytest-xdist worker of this run sees (the parent of the workers' base
    temporary folders, one per pytest run, which pytest prunes), or this process's session folder
    without xdist."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return tmp_path_factory.getbasetemp().parent
    return session_dir()


@lru_cache(maxsize=1)
def local_reference_run(root: Path) -> tuple[Path, float]:
    """The CL test DAG run locally with 2 cores (CL_TARGETS only, timed), once per pytest run: the
    SLURM test and the browser test, on two xdist workers, share it through `root` (`shared_root`).
    The first to ask builds it under a file lock; the other waits for it and reads its wall time."""
    with open(root / "local.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        work, done = root / "local", root / "local.json"
        if done.exists():
            return work, json.loads(done.read_text())["wall_s"]
        shutil.rmtree(work, ignore_errors=True)  # a build that failed part-way
        work.mkdir()
        overlay = write_config(root / "cl_test.yaml", cl_test_config(root / "store"))
        start = time.monotonic()
        res = smk(*CL_TARGETS, "--cores", "2", *config_args(work, overlay))
        wall = time.monotonic() - start
        assert res.returncode == 0, res.stderr[-5000:]
        done.write_text(json.dumps({"wall_s": wall}))
        return work, wall


@lru_cache(maxsize=1)
def local_report(root: Path) -> Path:
    """results/report/index.html of the local reference run (adds the report's own jobs; the SLURM
    test reads only the runs' metrics and the figures' tables, which these jobs do not touch). Under a
    file lock: two xdist workers asking at once (the browser and data-setting tests) would otherwise run
    two Snakemakes in one folder, and the second would fail on the first's lock."""
    work, _ = local_reference_run(root)
    with open(root / "report.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        res = smk("results/report/index.html", "--cores", "2", *config_args(work, root / "cl_test.yaml"))
    assert res.returncode == 0, res.stderr[-5000:]
    return work / "results/report/index.html"
