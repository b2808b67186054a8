"""The package's import graph, read from the source with `ast`: no import cycle among replikit's
modules, counting imports inside functions too (they only hide a cycle until the function runs) and
leaving out those under `if TYPE_CHECKING:` (type hints, never run)."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

SRC = ROOT / "src"


def _module(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module(p): p for p in SRC.rglob("*.py")}


def _runtime_nodes(tree: ast.AST):
    """Every node except those under `if TYPE_CHECKING:`."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            yield from (n for child in node.orelse for n in [child, *_runtime_nodes(child)])
            continue
        yield node
        yield from _runtime_nodes(node)


def imports_of(module: str) -> set[str]:
    """The replikit modules `module` imports at run time (a `from pkg import name` counts as the
    submodule pkg.name where that is a module, else as pkg)."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in _runtime_nodes(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "replikit"}
        elif isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(max(node.level - 1, 0)):
                base = base.rpartition(".")[0]
            name = (f"{base}.{node.module}" if node.module else base) if node.level else node.module
            if name and name.split(".")[0] == "replikit":
                found |= {f"{name}.{a.name}" if f"{name}.{a.name}" in MODULES else name for a in node.names}
    return {m for m in found if m in MODULES and m != module}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The graph's strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle_among_replikits_modules():
    graph = {m: imports_of(m) for m in MODULES}
    assert cycles(graph) == [], "modules that import each other (move the shared piece down a level)"


def test_the_cycle_finder_finds_a_cycle_hidden_in_a_function():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_configuration_library_imports_no_paper():
    assert not {m for m in imports_of("replikit.core.config") if m.startswith("replikit.papers")}
    assert "replikit.papers.registry" in imports_of("replikit.tools.config_check")  # the command line does


# The rooms by role, bottom first: a module may import its own room and the rooms below it, never one
# above (each room's __init__ says so in its docstring).
ROOMS = ("core", "data", "models", "methods", "scoring", "reporting", "papers", "plan", "tools")


def room_of(module: str) -> int | None:
    """The index of `module`'s room in ROOMS; None for the package itself."""
    parts = module.split(".")
    return ROOMS.index(parts[1]) if len(parts) > 1 else None


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """`a -> b` for every import of a module in a higher room."""
    return [f"{a} -> {b}" for a in sorted(graph) for b in sorted(graph[a])
            if room_of(a) is not None and room_of(b) is not None and room_of(b) > room_of(a)]


def test_every_module_lives_in_a_room_and_imports_no_room_above_its_own():
    assert [m for m in MODULES if m != "replikit" and m.split(".")[1] not in ROOMS] == []
    assert upward_imports({m: imports_of(m) for m in MODULES}) == [], "move the shared piece down a room"


def test_the_upward_import_check_can_fail():
    assert upward_imports({"replikit.core.config": {"replikit.papers.interface"},
                           "replikit.plan.bill": {"replikit.core.io"}}) == [
        "replikit.core.config -> replikit.papers.interface"]


def test_every_room_says_what_it_is_for_and_what_it_may_import():
    for room in ROOMS:
        doc = ast.get_docstring(ast.parse((SRC / "replikit" / room / "__init__.py").read_text())) or ""
        assert len(doc) > 80, f"src/replikit/{room}/__init__.py: say in a docstring what the room is for"
        assert "May import" in doc, f"{room}: say what it may import"
