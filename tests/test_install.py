"""A non-editable install (`pip install .`, no checkout above the package's files) runs the workflow:
the papers are found from the Snakefile's folder, and jobs import the installed copy."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.test_workflow import overlay


@pytest.mark.slow
def test_a_non_editable_install_dry_runs_the_smoke_scale_and_runs_a_job(tmp_path):
    site, source = tmp_path / "site", tmp_path / "source"  # built from a copy: no build/ in the checkout
    shutil.copytree(ROOT / "src", source / "src", ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps",
           "--target", str(site), str(source)]
    subprocess.run(pip, check=True, capture_output=True, timeout=300)
    env = {**os.environ, "PYTHONPATH": str(site)}  # ahead of the editable install of the checkout
    run = tmp_path / "run"
    run.mkdir()
    where = subprocess.run([sys.executable, "-c", "import replikit; print(replikit.__file__)"], cwd=run,
                           env=env, capture_output=True, text=True, check=True).stdout
    assert where.strip() == str(site / "replikit" / "__init__.py")

    def smk(*args: str) -> subprocess.CompletedProcess:
        cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"), "--configfile",
               str(ROOT / "config/smoke.yaml"), str(overlay(tmp_path)), "--directory", str(run), *args]
        return subprocess.run(cmd, cwd=run, env=env, capture_output=True, text=True, timeout=600)

    dry = smk("-n", "--cores", "2")
    assert dry.returncode == 0, dry.stderr[-3000:]
    assert "rc_train" in dry.stdout and "report" in dry.stdout
    target = ("results/rank_collapse/runs/init_norm-post_scaling-1oversqrtL_d_k-128_depth-none/seed3/"
              "metrics.json")
    assert target in dry.stdout
    job = smk("--cores", "1", target)
    assert job.returncode == 0, job.stderr[-3000:]
    assert (run / "scales/smoke" / target).is_file()
