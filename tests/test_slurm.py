"""profiles/slurm for real, on the one-node test cluster of .ci/slurm_cluster.sh (SLURM 22.05).

- The continual-learning smoke DAG (one seed, small sweeps) runs through `--profile profiles/slurm`
  (partition and account set as a user would); `sacct` lists every job Snakemake submitted, each
  COMPLETED, and the training jobs' sbatch requests are the config's `resources`; every run's
  metrics are bitwise those of the same jobs run locally (`--cores 2`).
- Faults: a training job cancelled with `scancel` mid-run resumes from its checkpoint on rerun; a
  job over its time limit fails naming the rule, the SLURM TIMEOUT and its `runtime`; the config's
  `mem_mb`, `runtime` and `gpu` reach sbatch (`scontrol show job`, `sacct`).

Skips (fails under CI=true) when no test cluster can be had: see tests/slurm_support.py.
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from replikit.papers import continual_learning as cl
from replikit.papers import continual_learning_analysis as cl_analysis
from tests.slurm_support import (
    CL_RESULTS,
    CL_TARGETS,
    CL_TEST_CONFIG,
    ROOT,
    cl_test_config,
    config_args,
    local_reference_run,
    require_cluster,
    sacct_rows,
    shared_root,
    smk,
    user_profile,
    write_config,
)

pytestmark = [pytest.mark.slurm, pytest.mark.slow]  # minutes of snakemake

SACCT_FIELDS = ["JobID", "JobName", "Comment", "State", "Partition", "Account", "Timelimit", "ReqMem",
                "ReqTRES"]
# With the plugin's default of 40 s, every job's end is noticed up to 40 s late; short test jobs
# would measure mostly that wait. Real clusters keep the default (see docs/slurm-and-gpu.md).
FAST_STATUS = ["--slurm-init-seconds-before-status-checks", "5"]


def sh(*cmd: str) -> str:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout


def run_id(output: str) -> str:
    m = re.search(r"SLURM run ID: (\S+)", output)
    assert m, output[-3000:]
    return m.group(1)


def wait_for_states(rid: str, n: int, final: set[str], timeout: float = 60) -> list[dict]:
    """sacct rows of run `rid` once all `n` are in a final state (slurmdbd lags slurmctld a little)."""
    deadline = time.monotonic() + timeout
    while True:
        rows = sacct_rows(rid, SACCT_FIELDS)
        done = len(rows) >= n and all(r["State"].split()[0] in final for r in rows)
        if done or time.monotonic() > deadline:
            return rows
        time.sleep(2)


def masked(path: Path) -> bytes:
    """The file's bytes with its wall-clock fields blanked: `elapsed_s` (seconds of this run) and
    `computed_by.ran` (when it ran)."""
    data = re.sub(rb'"elapsed_s": [0-9.eE+-]+', b'"elapsed_s": null', path.read_bytes())
    return re.sub(rb'"ran": "[^"]*"', b'"ran": null', data)


@pytest.fixture(scope="module")
def slurm_run(tmp_path_factory):
    require_cluster()
    base = tmp_path_factory.mktemp("slurm")
    work = base / "work"
    overlay = write_config(base / "cl_test.yaml", cl_test_config(base / "store"))
    profile = user_profile(base / "profile")
    start = time.monotonic()
    res = smk(*CL_TARGETS, "--profile", str(profile), *FAST_STATUS, *config_args(work, overlay),
              timeout=1200)
    wall = time.monotonic() - start
    return SimpleNamespace(work=work, res=res, out=res.stdout + res.stderr, wall=wall, profile=profile,
                           overlay=overlay, shared=shared_root(tmp_path_factory))


def test_smoke_dag_through_sbatch_completes_and_matches_local(slurm_run, record_property):
    out = slurm_run.out
    assert slurm_run.res.returncode == 0, out[-5000:]
    total = int(re.search(r"^total\s+(\d+)", out, re.M).group(1))
    submitted = set(re.findall(r"has been submitted with SLURM jobid (\d+)", out))
    assert "localrule" not in out  # no job ran inside the Snakemake process itself
    assert len(submitted) == total >= 11, (total, submitted)  # data, 6 training, 4 figures

    rows = wait_for_states(run_id(out), total, {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"})
    assert {r["JobID"] for r in rows} == submitted
    for r in rows:
        assert r["State"] == "COMPLETED", r
        assert (r["Partition"], r["Account"]) == ("debug", "replikit"), r
    train = [r for r in rows if r["Comment"].startswith("rule_cl_train_wildcards_")]
    runs = sorted((slurm_run.work / cl.RESULTS / "runs").glob("*/seed*/metrics.json"))
    assert len(train) == len(runs) == 6, (train, runs)
    res = CL_TEST_CONFIG["continual_learning"]["resources"]
    for r in train:  # the config's resources reached sbatch: --mem 1500, -t 15, no --gpus
        assert r["ReqMem"] == f"{res['mem_mb']}M" and r["Timelimit"] == f"00:{res['runtime']}:00", r
        assert "gres/gpu" not in r["ReqTRES"], r

    local, local_wall = local_reference_run(slurm_run.shared)
    local_runs = sorted((local / cl.RESULTS / "runs").glob("*/seed*/metrics.json"))
    assert [p.relative_to(local) for p in local_runs] == [p.relative_to(slurm_run.work) for p in runs]
    for s, ref in zip(runs, local_runs, strict=True):
        assert masked(s) == masked(ref), f"{s.relative_to(slurm_run.work)} differs from the local run"
        assert json.loads(s.read_text())["device"].startswith("cpu")
    tables = sorted((local / CL_RESULTS / "tables").glob("*.csv"))
    assert len(tables) == 4, tables  # one per figure
    for table in tables:
        assert (slurm_run.work / table.relative_to(local)).read_bytes() == table.read_bytes(), table.name

    record_property("slurm_wall_s", round(slurm_run.wall, 1))
    record_property("local_wall_s", round(local_wall, 1))
    print(f"\nCL test DAG ({total} jobs): SLURM {slurm_run.wall:.1f} s, local --cores 2 {local_wall:.1f} s, "
          f"overhead {slurm_run.wall - local_wall:+.1f} s ({slurm_run.wall / local_wall:.2f}x)")


def test_scancel_resumes_from_checkpoint_and_time_limit_names_rule_and_runtime(slurm_run, tmp_path):
    """One width-sweep job: a tiny network, then a large one (minutes). Run 1 is cancelled with
    scancel once the first network is checkpointed; run 2 resumes after it and then runs into its
    1-minute time limit. mem_mb, runtime and gpu (one pretend GPU on the test node) come from the
    config and are checked on the live job."""
    work = tmp_path / "work"
    work.mkdir()
    cfg = copy.deepcopy(CL_TEST_CONFIG)  # on MNIST (prepared first): its jobs must take minutes
    cfg["continual_learning"].update(seeds=[0], n_train=2000, epochs=40,
                                     width_sweep={"widths": [64, 16384], "gamma0": 1.0},
                                     resources={"mem_mb": 1800, "runtime": 1, "gpu": 1})
    overlay = write_config(tmp_path / "fault.yaml", cfg)
    run = cl.RunSpec("seq", "pmnist100", "mup", gamma0=1.0).name
    target = cl_analysis.SPEC.run_file("metrics", run, 0)
    ckpt = work / cl.RESULTS / "checkpoints" / f"{run}_seed0.json"
    log = work / f"logs/continual_learning/train/{run}/seed0.log"
    # MNIST prepared here first (the shared DAG runs on a synthetic dataset), so that each run's
    # only SLURM job is the training job
    prepared = smk("resources/data/mnist/manifest.json", "--cores", "1", *config_args(work, overlay))
    assert prepared.returncode == 0, prepared.stderr[-3000:]
    args = [target, "--profile", str(slurm_run.profile), "--retries", "0", *FAST_STATUS,
            *config_args(work, overlay)]

    # Run 1: cancelled with scancel after the first network's checkpoint.
    out1 = tmp_path / "run1.log"
    with out1.open("w") as fh:
        proc = subprocess.Popen(
            [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"), *args],
            stdout=fh, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 300
        while not ckpt.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.5)
        assert ckpt.exists(), out1.read_text()[-3000:]
        rid = run_id(out1.read_text())
        jobs = sh("squeue", "-h", "--name", rid, "-o", "%i").split()
        assert len(jobs) == 1, jobs
        job = sh("scontrol", "show", "job", "-o", jobs[0])
        assert "JobState=RUNNING" in job and "TimeLimit=00:01:00" in job, job
        assert "MinMemoryNode=1800M" in job and "gres/gpu=1" in job, job  # mem_mb, gpu from the config
        subprocess.run(["scancel", jobs[0]], check=True)
        proc.wait(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
    text1 = out1.read_text()
    assert proc.returncode != 0 and "Error in rule cl_train" in text1 and "CANCELLED" in text1, text1[-3000:]
    assert len(json.loads(ckpt.read_text())["items"]) == 1
    assert not (work / target).exists()
    [row] = wait_for_states(rid, 1, {"CANCELLED"})
    assert row["State"].startswith("CANCELLED") and "gres/gpu=1" in row["ReqTRES"], row

    # Run 2: resumes after the checkpointed network, then exceeds its 1-minute limit.
    res = smk(*args, timeout=600)
    text2 = res.stdout + res.stderr
    assert res.returncode != 0
    assert f"resumed {run} seed 0 after 1 networks" in log.read_text()
    assert "Error in rule cl_train" in text2 and "TIMEOUT" in text2, text2[-4000:]
    assert "DUE TO TIME LIMIT" in text2 and "runtime=1," in text2, text2[-4000:]
    assert "`continual_learning.resources.runtime`" in text2, text2[-4000:]  # the key to raise
    [row] = wait_for_states(run_id(text2), 1, {"TIMEOUT"})
    assert row["State"] == "TIMEOUT" and row["Timelimit"] == "00:01:00", row
    assert not (work / target).exists()
