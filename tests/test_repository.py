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


def test_claims_read_as_declarations():
    """Every Claim, Falsifier and Source in the papers passes its fields by name, all but a claim's id
    and a source's quote (docs/adding-a-paper.md), so that a reader sees which sentence is the
    statement and which the rule; and each helper inside a paper's claims() is about 40 lines at most."""
    import ast

    positional = {"Claim": 1, "Source": 1, "Falsifier": 0}  # the id, the quote

    offenders, long = [], []
    for path in sorted((ROOT / "src/replikit/papers").glob("*_analysis.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in positional and len(node.args) > positional[node.func.id]):
                offenders.append(f"{path.name}:{node.lineno} {node.func.id}")
            if isinstance(node, ast.FunctionDef) and node.name == "claims":
                long += [f"{path.name}: {inner.name}, {inner.end_lineno - inner.lineno + 1} lines"
                         for inner in ast.walk(node) if isinstance(inner, ast.FunctionDef)
                         and inner is not node and inner.end_lineno - inner.lineno + 1 > 40]
    assert not offenders, f"pass the fields by name (id=..., statement=..., ...): {offenders}"
    assert not long, f"split the helper into named parts: {long}"


def test_a_claim_range_in_the_code_ends_at_the_papers_last_claim():
    """A module's or function's docstring that spans a paper's claims ("CPE-1..CPE-9") names its last
    declared claim: a range typed when a paper had fewer claims goes stale silently otherwise."""
    import ast
    import re

    span = re.compile(r"\b([A-Z]{2,3})-1\s*\.\.\s*\1-(\d+)\b")
    declared: dict[str, int] = {}
    for path in (ROOT / "src/replikit/papers").glob("*_analysis.py"):
        for prefix, number in re.findall(r'\bid="([A-Z]{2,3})-(\d+)"', path.read_text()):
            declared[prefix] = max(declared.get(prefix, 0), int(number))
    docs = [(path, ast.get_docstring(node) or "") for path in sorted((ROOT / "src").rglob("*.py"))
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Module | ast.FunctionDef | ast.ClassDef)]
    stale = [f"{path.relative_to(ROOT)}: {m.group(0)} (last declared: {m.group(1)}-{declared[m.group(1)]})"
             for path, doc in docs for m in span.finditer(doc)
             if m.group(1) in declared and int(m.group(2)) != declared[m.group(1)]]
    assert not stale, stale
