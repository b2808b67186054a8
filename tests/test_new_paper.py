"""Adding a paper takes two files: the worked example of docs/adding-a-paper.md, written into a copy of
the repository, runs from its training jobs to a claims row and its figure, and keeps the rules every
registered paper keeps (its quote, named claim arguments, the declaration check)."""

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
from tests.conftest import ROOT

MARK = re.compile(r"<!-- new_paper: (\S+) -->\n```\w+\n(.*?)```", re.S)
PAGE = ROOT / "docs" / "adding-a-paper.md"
PAPERS_DIR = (ROOT.parent / "shared" / "papers").resolve()  # the abstracts, as in tests/test_claim_sources.py
MODULE, CONFIG = "src/replikit/papers/new_paper.py", "config/papers/new_paper.yaml"


def example_files() -> dict[str, str]:
    """The example of docs/adding-a-paper.md: path -> text, for every file of the new paper."""
    return dict(MARK.findall(PAGE.read_text()))


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


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
    """The repository's files as a fresh checkout has them (tracked and untracked, not ignored)."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        if (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    return dest


def test_the_example_is_exactly_two_files_outside_the_tests():
    assert sorted(example_files()) == [CONFIG, MODULE]


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
    abstracts = _squash(" ".join(f.read_text(encoding="utf-8", errors="replace")
                                 for f in sorted(PAPERS_DIR.glob("*.txt"))))
    for claim in claims:
        quote = _squash(claim.source.quote)
        assert quote in abstracts, f"{claim.id}: quote not found verbatim in ../shared/papers: {quote[:80]}"
        assert quote.endswith((".", "!", "?")), f"{claim.id}: quote a whole sentence"
        assert ("abstract" in claim.source.where) == claim.source.abstract_only, claim.id
        assert claim.kind in KINDS and (claim.kind != "hypothesis" or claim.reading), claim.id
        assert not (claim.kind == "hypothesis" and claim.source.background), claim.id
    (tmp_path / "new_paper.yaml").write_text(files[CONFIG])
    assert registry.check(module.SPEC, {}, tmp_path) is module.SPEC
    lo, hi = min(cfg["lrs"]), max(cfg["lrs"])
    runs = pd.DataFrame([{"run": f"fit_lr-{lr}", "seed": s, "lr": lr, "loss": 1.0 - (lr == hi) + 0.01 * s}
                         for s in range(5) for lr in (lo, hi)])
    (row,) = evaluate(claims, {"runs": runs}, cfg=cfg)
    assert row["verdict"] == "replicated" and row["kind"] == "hypothesis"


@pytest.mark.slow
def test_new_paper_from_the_docs_runs_from_its_two_files_to_a_claims_row(tmp_path):
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
    out = repo / "scales/smoke"  # the smoke scale's own output tree
    card = json.loads((out / targets[0]).read_text())
    assert [c["id"] for c in card["claims"]] == ["NP-1"]
    row = card["claims"][0]
    assert row["verdict"] in VERDICTS and row["n_seeds"] == 5 and row["source"]["quote"]
    assert (out / targets[1]).stat().st_size > 10_000


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
    assert not (repo / "results").exists() and not (repo / "scales/smoke/results").exists()
