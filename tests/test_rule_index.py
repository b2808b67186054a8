"""docs/rules.md lists every rule with the code that computes it, and is current."""

from __future__ import annotations

import re
import subprocess
import sys

from replikit.papers import paper_names, registry
from replikit.papers.rule_index import index
from tests.conftest import ROOT


def test_the_rule_index_is_current():
    assert (ROOT / "docs/rules.md").read_text() == index(), (
        "docs/rules.md is stale: python -m replikit.papers.rule_index > docs/rules.md")


def test_every_generated_rule_and_figure_is_listed_with_a_file_that_defines_its_function():
    page = index()
    for name in paper_names():
        paper = registry.get(name)
        rules = [f"{paper.prefix}_{s.name}" for s in paper.stages] + [f"{paper.prefix}_claims"]
        assert all(f"| `{r}` |" in page for r in rules), name
        assert all(f"| `{paper.prefix}_figure` (figure `{f.name}`) |" in page for f in paper.figures), name
    for path, func in re.findall(r"\| `(src/[^`]+\.py)`: `([\w.]+)` \|$", page, re.M):
        assert re.search(rf"^def {func.split('.')[-1]}\(", (ROOT / path).read_text(), re.M), (path, func)


def test_the_rules_snakemake_lists_are_in_the_index():
    listed = subprocess.run([sys.executable, "-m", "snakemake", "--list-rules", "--snakefile",
                             str(ROOT / "Snakefile"), "--config", "report={\"cost_plan\": true}"],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert listed.returncode == 0, listed.stderr[-2000:]
    rules = [ln.strip() for ln in listed.stdout.splitlines() if re.fullmatch(r"\s*[a-z0-9_]+\s*", ln)]
    # a batched stage's rule for a set of fresh or earlier seeds is its stage's row (the index says so)
    extra = re.compile(r"_seeds\d+$")
    assert rules and all(f"| `{extra.sub('', r)}`" in index() for r in rules), rules
    assert any(extra.search(r) for r in rules) and "`<prefix>_<stage>_seeds<first>`" in index()
