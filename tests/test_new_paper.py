"""Adding a paper: the worked example of docs/adding-a-paper.md (three files), written into a fresh copy
of the repository and run by the page's steps as printed, is green at the first try (the check
command, then the fast tests (README) of the paper and of the whole tree), keeps the rules every
registered paper keeps, and a one-word misquote stops its claims job and publishes nothing."""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pandas as pd
import pytest
import yaml

from replikit.papers import registry
from replikit.scoring.claims import KINDS, VERDICTS, Claim, evaluate
from replikit.scoring.quotes import quote_errors
from tests.conftest import BESIDE_THE_SMOKE_DAG, ROOT, run_process

MARK = re.compile(r"<!-- new_paper: (\S+) -->\n```\w+\n(.*?)```", re.S)
PAGE = ROOT / "docs" / "adding-a-paper.md"
MODULE, CONFIG = "src/replikit/papers/new_paper.py", "config/papers/new_paper.yaml"
SOURCE = "sources/new_paper.txt"
STEPS = "steps"  # the page's block of commands, run as printed


def example_blocks() -> dict[str, str]:
    """The example of docs/adding-a-paper.md: path -> text for every file of the new paper, and its steps."""
    return dict(MARK.findall(PAGE.read_text()))


def example_files() -> dict[str, str]:
    """The example's files: path -> text."""
    return {k: v for k, v in example_blocks().items() if k != STEPS}


def example_steps(python: str) -> list[str]:
    """The page's steps, each a shell line, with `.venv/bin/` taken to this interpreter's."""
    lines = [line for line in example_blocks()[STEPS].splitlines() if line.strip()]
    return [line.replace(".venv/bin/python", python).replace(".venv/bin/snakemake", f"{python} -m snakemake")
            for line in lines]


def example_module() -> types.ModuleType:
    """The example's module, executed as replikit.papers.new_paper (not registered: no config file)."""
    module = types.ModuleType("replikit.papers.new_paper")
    sys.modules[module.__name__] = module  # dataclasses look their module up while the class is made
    try:
        exec(compile(example_files()[MODULE], MODULE, "exec"), module.__dict__)
    finally:
        del sys.modules[module.__name__]
    return module


def repository_copy(dest: Path) -> Path:
    """The repository's files as a fresh checkout has them (tracked and untracked, not ignored), with
    what a checkout finds beside it: `../shared` (the datasets, and the abstracts that
    test_claim_sources checks the shipped sources against, and must find under CI)."""
    shared = ROOT.parent / "shared"
    if shared.is_dir() and not (dest.parent / "shared").exists():
        (dest.parent / "shared").symlink_to(shared.resolve(), target_is_directory=True)
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        if (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    return dest


def test_the_example_is_exactly_three_files_outside_the_tests():
    assert sorted(example_files()) == [CONFIG, SOURCE, MODULE]


def test_the_example_passes_ruff():
    res = subprocess.run([sys.executable, "-m", "ruff", "check", "--stdin-filename", MODULE, "-"], cwd=ROOT,
                         input=example_files()[MODULE], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout


def test_the_example_calls_claim_with_named_arguments_after_its_id():
    calls = [node for node in ast.walk(ast.parse(example_files()[MODULE])) if isinstance(node, ast.Call)
             and isinstance(node.func, ast.Name) and node.func.id == "Claim"]
    assert calls and all(len(call.args) == 1 for call in calls)


def test_the_example_keeps_the_rules_of_every_registered_paper(tmp_path):
    """Its quote passes tests/test_claim_sources.py's rule, its declaration passes the interface check,
    and its measure gives a verdict from per-seed results."""
    module, files = example_module(), example_files()
    cfg = yaml.safe_load(files[CONFIG])["smoke"]
    claims = module.claims(module.experiment_runs(cfg), cfg)
    assert claims and all(isinstance(c, Claim) for c in claims)
    (tmp_path / "new_paper.txt").write_text(files[SOURCE])
    assert quote_errors(claims, [tmp_path / "new_paper.txt"]) == []
    for claim in claims:
        assert ("abstract" in claim.source.where) == claim.source.abstract_only, claim.id
        assert claim.kind in KINDS and (claim.kind != "hypothesis" or claim.reading), claim.id
        assert not (claim.kind == "hypothesis" and claim.source.background), claim.id
        assert claim.kind != "paper" or claim.falsifier or claim.check, claim.id  # tests/test_falsifiers.py
    (tmp_path / "new_paper.yaml").write_text(files[CONFIG])
    assert registry.check(module.SPEC, {}, tmp_path) is module.SPEC
    lo, hi = min(cfg["lrs"]), max(cfg["lrs"])
    runs = pd.DataFrame([{"run": f"fit_lr-{lr}", "seed": s, "lr": lr, "loss": 1.0 - (lr == hi) + 0.01 * s}
                         for s in range(5) for lr in (lo, hi)])
    (row,) = evaluate(claims, {"runs": runs}, cfg=cfg)
    assert row["verdict"] == "replicated" and row["kind"] == "hypothesis"


def _git_checkout(repo: Path) -> None:
    """Make the copy a git checkout with every file committed (the example's files come after)."""
    for cmd in (["init", "-q"], ["add", "-A"],
                ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "copy"]):
        subprocess.run(["git", *cmd], cwd=repo, check=True, capture_output=True)


@pytest.mark.slow
def test_new_paper_from_the_docs_is_green_at_the_first_try(tmp_path):
    """In a fresh copy: a one-word misquote stops the smoke run in np_claims and publishes nothing; then
    the page's files and steps, as printed, end in a claims row, a passing check and green tests, and the
    results of the untracked module are dirty in provenance and in the report."""
    repo = repository_copy(tmp_path / "repo")
    _git_checkout(repo)
    files = example_files()
    env = {**os.environ, "PYTHONPATH": str(repo / "src")}
    misquoted = files[MODULE].replace("far more slowly", "far more quickly")
    assert misquoted != files[MODULE]
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    for step in [s for s in example_steps(sys.executable) if "replikit.tools.register" in s]:
        # registered before any run, as the page says (again in the steps below: already registered)
        res = run_process(["bash", "-c", step], repo, 600, BESIDE_THE_SMOKE_DAG, env)
        assert res.returncode == 0, f"{step}\n{(res.stdout + res.stderr)[-4000:]}"
    (repo / MODULE).write_text(misquoted)
    smoke = [sys.executable, "-m", "snakemake", "--cores", "2", "--configfile", "config/smoke.yaml",
             "--config", "papers=[new_paper]"]
    res = run_process(smoke, repo, 600, BESIDE_THE_SMOKE_DAG, env)
    out, tree = res.stdout + res.stderr, repo / "scales/smoke"
    assert res.returncode != 0 and "np_claims" in out
    assert "claim NP-1: quote not found verbatim" in out and ">>quickly<<" in out, out[-3000:]
    assert not (tree / "results/new_paper/claims.json").exists()
    assert not (tree / "results/report/index.md").exists()

    (repo / MODULE).write_text(files[MODULE])
    for step in example_steps(sys.executable):
        res = run_process(["bash", "-c", step], repo, 600, BESIDE_THE_SMOKE_DAG, env)
        assert res.returncode == 0, f"{step}\n{(res.stdout + res.stderr)[-4000:]}"
    assert "new_paper: every check passed" in res.stdout
    card = json.loads((tree / "results/new_paper/claims.json").read_text())
    (row,) = card["claims"]
    assert row["id"] == "NP-1" and row["verdict"] in VERDICTS and row["n_seeds"] == 5
    assert row["fidelity"] == "unverified" and any("departures" in k for k in row["unverified"])
    (runs,) = card["provenance"]["runs"]
    assert runs["dirty"] and MODULE in runs["uncommitted"]
    assert MODULE in card["provenance"]["analysis_uncommitted"]
    report = (tree / "results/report/index.md").read_text()
    assert "computed by code that is not committed" in report and MODULE in report
    assert (tree / "results/new_paper/figures/loss_vs_lr.png").stat().st_size > 10_000

    quick = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m",
             "not slow and not preflight and not slurm", "-k", "new_paper or rule_index or ruff",
             "tests/test_claim_sources.py", "tests/test_interface.py", "tests/test_fidelity.py",
             "tests/test_figure_audit.py", "tests/test_rule_index.py", "tests/test_repository.py"]
    res = run_process(quick, repo, 900, BESIDE_THE_SMOKE_DAG, env)
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    assert re.search(r"\d+ passed", res.stdout), res.stdout[-2000:]


BROKEN = {  # a mistake in the example -> (file, old, new, what the dry run must say)
    "prefix": (MODULE, 'prefix="np"', 'prefix="n_p"',
               ["paper 'new_paper'", "prefix: 'n_p' is not lowercase letters", "fix:"]),
    "figure without runs": (MODULE, 'return {"loss_vs_lr": [', 'return {"loss_vs_lrs": [',
                            ["paper 'new_paper'",
                             "figures['loss_vs_lr']: experiment_runs(cfg) declares no runs",
                             "fix: name the figure as its runs' key"]),
    "config typo": (CONFIG, "  steps: 20\n", "  stepz: 20\n",
                    ["unknown config key 'new_paper.stepz' in config/papers/new_paper.yaml (block 'smoke')",
                     "did you mean 'new_paper.steps'?"]),
}


@pytest.mark.parametrize("mistake", sorted(BROKEN))
def test_a_broken_example_stops_the_dry_run_naming_the_field_and_the_fix(tmp_path, mistake):
    """Each mistake stops the dry run before any job, with a message that names the field (or file and
    key) and the fix; nothing is written."""
    where, old, new, says = BROKEN[mistake]
    repo = repository_copy(tmp_path / "repo")
    for name, text in example_files().items():
        assert name != where or old in text
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text.replace(old, new) if name == where else text)
    env = {**os.environ, "PYTHONPATH": str(repo / "src")}
    res = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--configfile",
                          "config/smoke.yaml", "--config", "papers=[new_paper]"],
                         cwd=repo, env=env, capture_output=True, text=True, timeout=300)
    out = res.stdout + res.stderr
    assert res.returncode != 0
    assert all(s in out for s in says), out[-3000:]
    assert "KeyError" not in out and "Traceback" not in out.split("Error")[0]
    assert not (repo / "results").exists() and not (repo / "scales/smoke/results").exists()
