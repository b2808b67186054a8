"""Issue 67: a paper's dataset is a setting, so no paper module names a dataset in its code. A dataset
name (CIFAR, MNIST, ImageNet) may appear only in a paper's default (`DATASET`, `STREAM_DATASETS`), a
docstring, a record (a `Dataset`, the paper's `Source` sentence, a `Departure` of the paper scale, a
claim's `paper_value` and `paper_source`, a falsifier's `why`: what the paper did), or the allow-list
below, printed with its reasons."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PAPERS = Path(__file__).resolve().parents[1] / "src" / "replikit" / "papers"
DATASET_NAME = re.compile(r"cifar|mnist|imagenet", re.I)
DEFAULTS = {"DATASET", "STREAM_DATASETS"}
# call -> the arguments that record what the paper did (positions, keywords); None: every argument
RECORDS = {"Dataset": None, "Source": None, "Departure": None,
           "Claim": ({2, 3}, {"paper_value", "paper_source"}), "Falsifier": ({1}, {"why"})}
# (module, string) -> why it may name a dataset
ALLOWED = {
    **{("continual_learning.py", s): "the run-name tokens of the paper's own streams (Permuted MNIST, "
       "Split CIFAR-10), kept so that existing runs keep their names"
       for s in ("pmnist", "split_cifar10", "mnist", ": Permuted MNIST's runs are named pmnist",
                 "pmnist(?P<mnist>\\d{1,3})|p(?P<pct>\\d{1,3})(?P<permuted>[a-z][a-z0-9]*)"
                 "|split(?P<split>[a-z][a-z0-9]*)")},
    ("continual_learning_analysis.py", "pmnist"): "the stream kind (config key `stream`), not a dataset",
    **{(m, "pmnist_head"): "a config key's name (one head or one per task in the permuted stream)"
       for m in ("continual_learning.py", "continual_learning_analysis.py")},
}


def _recorded(tree: ast.AST) -> set[int]:
    """ids of the string nodes that are docstrings, defaults or records."""
    ok: set[int] = set()
    named: set[str] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant):
            ok.add(id(body[0].value))
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id in DEFAULTS
                                                for t in node.targets):
            ok |= {id(n) for n in ast.walk(node.value)}
        if isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else getattr(f, "attr", "")
            if name not in RECORDS:
                continue
            if RECORDS[name] is None:
                ok |= {id(n) for n in ast.walk(node)}
                continue
            positions, keywords = RECORDS[name]
            args = [a for i, a in enumerate(node.args) if i in positions]
            args += [k.value for k in node.keywords if k.arg in keywords]
            ok |= {id(n) for a in args for n in ast.walk(a)}
            named |= {n.id for a in args for n in ast.walk(a) if isinstance(n, ast.Name)}
    # a module constant that a record reads (e.g. `why=CPE7_WHY`, a claim function's text kept apart)
    for node in ast.walk(tree):
        targets = [t.id for t in getattr(node, "targets", []) if isinstance(t, ast.Name)]
        if isinstance(node, ast.Assign) and set(targets) & named:
            ok |= {id(n) for n in ast.walk(node.value)}
    return ok


def dataset_names_in_code(path: Path) -> list[tuple[int, str]]:
    """(line, string) of every string in `path` that names a dataset outside its defaults and records
    (the allow-list's strings included)."""
    tree = ast.parse(path.read_text())
    ok = _recorded(tree)
    return sorted({(n.lineno, n.value) for n in ast.walk(tree)
                   if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in ok
                   and DATASET_NAME.search(n.value)})


def test_no_paper_module_names_a_dataset_in_its_code():
    for (module, text), why in sorted(ALLOWED.items()):
        print(f"allowed in {module}: {text!r}: {why}")
    seen = {(p.name, text): line for p in sorted(PAPERS.glob("*.py"))
            for line, text in dataset_names_in_code(p)}
    found = sorted(f"{module}:{line}: {text!r}" for (module, text), line in seen.items()
                   if (module, text) not in ALLOWED)
    assert not found, ("dataset names in paper code (take them from the dataset's record, "
                       f"replikit.data.datasets, or the config key `dataset`): {found}")
    assert set(ALLOWED) <= set(seen), f"allow-list entries no module has any more: {set(ALLOWED) - set(seen)}"


def test_the_scan_sees_a_name_in_code_and_not_in_a_record(tmp_path):
    """The scan flags a name typed into code and lets the paper's sentence and the default through."""
    module = tmp_path / "paper.py"
    module.write_text('"""On CIFAR-10."""\nDATASET = "cifar10"\nS = Source("on CIFAR-10 and ImageNet.", W)\n'
                      'where = f"on CIFAR-10 ({n} images)"\n')
    assert [line for line, _ in dataset_names_in_code(module)] == [4]
