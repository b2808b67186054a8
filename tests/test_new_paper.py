"""Adding a paper takes two files: the README's worked example ("Adding a paper"), written into a copy
of the repository, runs from its training jobs to a claims row and its figure."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from replikit.claims import VERDICTS
from tests.conftest import ROOT

MARK = re.compile(r"<!-- new_paper: (\S+) -->\n```\w+\n(.*?)```", re.S)


def example_files() -> dict[str, str]:
    """The README's example: path -> text, for every file of the new paper."""
    return dict(MARK.findall((ROOT / "README.md").read_text()))


def repository_copy(dest: Path) -> Path:
    """The repository's files as a fresh checkout has them (tracked and untracked, not ignored)."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        if (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    return dest


def test_the_readme_example_is_exactly_two_files_outside_the_tests():
    assert sorted(example_files()) == ["config/papers/new_paper.yaml", "src/replikit/papers/new_paper.py"]


@pytest.mark.slow
def test_new_paper_from_the_readme_runs_from_its_two_files_to_a_claims_row(tmp_path):
    repo = repository_copy(tmp_path / "repo")
    for name, text in example_files().items():
        (repo / name).write_text(text)
    env = {**os.environ, "PYTHONPATH": str(repo / "src")}
    targets = ["results/new_paper/claims.json", "results/new_paper/figures/loss_vs_lr.png"]
    res = subprocess.run([sys.executable, "-m", "snakemake", *targets, "--cores", "2", "--configfile",
                          "config/smoke.yaml", "--config", "papers=[new_paper]"],
                         cwd=repo, env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-4000:]
    assert "np_train" in res.stderr and "np_claims" in res.stderr
    card = json.loads((repo / targets[0]).read_text())
    assert [c["id"] for c in card["claims"]] == ["NP-1"]
    row = card["claims"][0]
    assert row["verdict"] in VERDICTS and row["n_seeds"] == 5 and row["source"]["quote"]
    assert (repo / targets[1]).stat().st_size > 10_000


def test_a_broken_example_stops_before_any_job_naming_the_field(tmp_path):
    """The example with a rule prefix that breaks the interface: the declaration check names it."""
    repo = repository_copy(tmp_path / "repo")
    for name, text in example_files().items():
        (repo / name).write_text(text.replace('prefix="np"', 'prefix="n_p"'))
    env = {**os.environ, "PYTHONPATH": str(repo / "src")}
    res = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--configfile",
                          "config/smoke.yaml", "--config", "papers=[new_paper]"],
                         cwd=repo, env=env, capture_output=True, text=True, timeout=300)
    out = res.stdout + res.stderr
    assert res.returncode != 0
    assert "paper 'new_paper'" in out and "prefix: 'n_p' is not lowercase letters" in out, out[-3000:]
    assert not (repo / "results").exists()
