"""What a fresh machine takes (issue 84): the install and the test command, timed from the log of
`.ci/run` on a fresh clone and published as a snapshot that the README's generated block shows."""

from __future__ import annotations

import subprocess

import pytest

from replikit.reporting.docs import block_setup
from replikit.tools.publish import publish_setup

LOG = """CI: SLURM test cluster and chromium ready after 61 s
Successfully installed replikit-0.1.0
...........................................................................
======= 919 passed, 1 xfailed in 1012.41s (0:16:52) =======
CI: finished after 1235 s (exit 0)
"""


def clone(tmp_path):
    repo = tmp_path / "clone"
    repo.mkdir()
    git = lambda *a: subprocess.run(["git", *a], cwd=repo, check=True, capture_output=True)  # noqa: E731
    git("init", "-q")
    (repo / "f").write_text("x")
    git("add", "f")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x")
    return repo


@pytest.mark.parametrize("quiet", [False, True])
def test_the_install_is_cis_time_less_the_cluster_and_the_tests(tmp_path, quiet):
    repo = clone(tmp_path)
    log = LOG.replace("======= 919 passed, 1 xfailed in 1012.41s (0:16:52) =======",
                      "919 passed, 1 xfailed in 1012.41s (0:16:52)") if quiet else LOG  # pytest -q's form
    (tmp_path / "ci.log").write_text(log)
    snap = publish_setup(repo, tmp_path / "ci.log", out=tmp_path / "published")
    assert (snap["ci_s"], snap["slurm_s"], snap["tests_s"], snap["install_s"]) == (1235, 61, 1012, 162)
    assert snap["tests"] == "919 passed, 1 xfailed" and not snap["made_by"]["dirty"]
    line = block_setup({"setup": snap})
    assert "the install (a fresh venv, torch from local disk, the package with its test extras) took " \
        "2.7 min" in line
    assert "and its tests 16.9 min (919 passed, 1 xfailed); CI took 20.6 min in all, of which " \
        "1.0 min" in line
    assert block_setup({}) == "- **install and tests**: not yet measured on a fresh clone."


@pytest.mark.parametrize("log, says", [
    (LOG.replace("(exit 0)", "(exit 1)"), "that CI run failed (exit 1)"),
    (LOG.replace("CI: finished after 1235 s (exit 0)\n", ""), "is not the log of a finished .ci/run"),
])
def test_a_failed_or_unfinished_ci_run_is_not_published(tmp_path, log, says):
    (tmp_path / "ci.log").write_text(log)
    with pytest.raises(SystemExit, match=says.replace("(", r"\(").replace(")", r"\)")):
        publish_setup(clone(tmp_path), tmp_path / "ci.log", out=tmp_path / "published")
    assert not (tmp_path / "published").exists()
