"""The repository keeps its promises: README commands, CI, ruff."""

import subprocess
import sys

from tests.conftest import ROOT


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci/run").read_text().strip().splitlines()[-1]
    assert ci in readme
    assert "pytest" in ci and "snakemake --cores all" in readme


def test_ruff_is_clean():
    res = subprocess.run([sys.executable, "-m", "ruff", "check", str(ROOT)], capture_output=True,
                         text=True, cwd=ROOT)
    assert res.returncode == 0, res.stdout
