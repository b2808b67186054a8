"""`python -m replikit.tools.paper_check NAME` (issue 65) on the worked example of docs/adding-a-paper.md
with one mistake each, in a fresh copy of the repository: a config typo is reported once and the checks
that need the config are skipped, a paper claim without a falsifier or check fails the declaration
check naming the fix, and a module that does not import is named, with the fix, without a traceback.
No training job runs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from replikit.scoring.claims import Claim, Falsifier, Part, Source
from replikit.tools.paper_check import falsifier_errors
from tests.test_new_paper import CONFIG, MODULE, example_files, repository_copy


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    return repository_copy(tmp_path_factory.mktemp("paper_check") / "repo")


def check(repo: Path, where: str = MODULE, old: str = "", new: str = "") -> tuple[int, str]:
    """Write the example with `old` replaced by `new` in file `where`, run the check; (status, output)."""
    for name, text in example_files().items():
        assert name != where or old in text
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text.replace(old, new) if name == where else text)
    env = {**os.environ, "PYTHONPATH": str(repo / "src"), "PYTHONDONTWRITEBYTECODE": "1"}
    res = subprocess.run([sys.executable, "-m", "replikit.tools.paper_check", "new_paper"], cwd=repo, env=env,
                         capture_output=True, text=True, timeout=300)
    return res.returncode, res.stdout + res.stderr


def failed_count(out: str) -> int:
    """The summary's count of failed checks, which must equal the FAIL lines."""
    n = int(re.search(r"new_paper: (\d+) check\(s\) failed", out).group(1))
    assert n == len(re.findall(r"^FAIL ", out, re.M)), out
    return n


def test_a_config_typo_is_reported_once_and_the_checks_that_need_the_config_are_skipped(repo):
    rc, out = check(repo, CONFIG, "  steps: 20\n", "  stepz: 20\n")
    assert rc == 1
    assert out.count("unknown config key 'new_paper.stepz'") == 1, out
    assert "did you mean 'new_paper.steps'?" in out and "FAIL config" in out
    for skipped in ("declaration", "quotes", "figure audit store"):
        assert f"skip {skipped} (it needs the config check)" in out, out
    assert "FAIL declaration" not in out and "Traceback" not in out
    assert failed_count(out) <= 2  # the config, and the rule index of a copy that has not learnt the paper


def test_a_paper_claim_without_a_falsifier_or_check_fails_the_declaration_naming_the_fix(repo):
    rc, out = check(repo, MODULE, 'kind="hypothesis"', 'kind="paper"')
    assert rc == 1 and "FAIL declaration" in out, out
    assert "claim NP-1: a paper claim names a falsifier or is a check" in out
    assert "falsifier=Falsifier(setting, why, measure)" in out and "check=" in out
    assert out.count("claim NP-1: a paper claim") == 1  # once, not once per scale
    rc, out = check(repo, MODULE, 'kind="hypothesis"', 'kind="paper", check="holds by construction"')
    assert "ok   declaration" in out, out


@pytest.mark.parametrize("old, new, error", [
    ("def fit(job: Job) -> None:", "def fit(job: Job) -> None", "SyntaxError"),
    ('RUNS = Runs("new_paper", Fit,', 'RUNS = Runs("new_paper", Fitt,', "NameError"),
])
def test_a_module_that_does_not_import_is_named_with_the_fix(repo, old, new, error):
    rc, out = check(repo, MODULE, old, new)
    assert rc == 1 and "FAIL module" in out, out
    assert f"module replikit.papers.new_paper failed to import: {error}" in out, out
    assert 'fix: run `python -c "import replikit.papers.new_paper"` to see the traceback' in out
    assert "Traceback" not in out
    for skipped in ("config", "declaration", "quotes", "rule index", "figure audit store"):
        assert f"skip {skipped}" in out, out
    assert failed_count(out) == 2  # the module, and ruff on the same mistake


def _claim(cid: str, **kw) -> Claim:
    return Claim(cid, "s", "v", "ps", "stat", "rule", lambda r: [],
                 source=Source("A sentence.", "p, abstract"), figures=("f",), **kw)


def test_the_falsifier_errors_name_only_paper_claims_with_neither():
    falsifier = Falsifier("no effect", "the paper says it vanishes", lambda r: [Part("x", {}, 0.0)])
    claims = [_claim("A-1"), _claim("A-2", falsifier=falsifier), _claim("A-3", check="by construction"),
              _claim("A-4", kind="hypothesis", reading="ours")]
    (error,) = falsifier_errors("p", claims)
    assert error.startswith("claim A-1: ") and "fix:" in error


def test_a_threshold_the_figure_does_not_draw_fails_naming_the_claim_and_the_helper(monkeypatch):
    """The check CI's figure audit makes (tests/test_figure_audit.py), run by paper_check on the stored
    smoke results: here with every claim reference erased from the drawn figures."""
    from replikit.reporting import plotting
    from replikit.tools import paper_check

    assert paper_check.check_thresholds("rank_collapse") == []
    monkeypatch.setattr(plotting, "claim_artists", lambda fig: {})
    problems = paper_check.check_thresholds("rank_collapse")
    assert problems and all("draws no reference for it" in p and "plotting.claim_line" in p for p in problems)
    assert any(p.startswith("RC-5: figure 'training_loss'") for p in problems), problems
