"""Provenance of a result: rule, script, config values, git commit, package versions, device, and the
kernel level its numbers were computed at."""

from __future__ import annotations

import ast
import datetime as dt
import functools
import hashlib
import platform
import subprocess
import sys
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

from replikit.core import numerics

PACKAGES = ("torch", "torchvision", "snakemake", "numpy", "pandas", "seaborn", "matplotlib",
            "datasets", "replikit")


REPOSITORY = Path(__file__).resolve().parents[3]  # the checkout that holds src/replikit


def git_commit(cwd: str | Path = REPOSITORY) -> str:
    """HEAD commit of the checkout that holds this code (not of the folder a job runs in, which is
    often outside it), with `+dirty` when its work tree has uncommitted changes; `unknown` outside git."""
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True,
                             check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=cwd,
                               capture_output=True, text=True, check=True).stdout.strip()
        return sha + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def git_state(cwd: str | Path = REPOSITORY) -> dict:
    """The commit and whether the work tree had uncommitted changes, as two fields."""
    commit = git_commit(cwd)
    return {"commit": commit.removesuffix("+dirty"), "dirty": commit.endswith("+dirty")}


PACKAGE_ROOT = Path(__file__).resolve().parents[1]  # src/replikit


def _module_file(name: str, root: Path) -> Path | None:
    """The source file of replikit module `name` (dotted, from the package root), if it is one."""
    parts = name.split(".")[1:]
    if not parts:
        return root / "__init__.py"
    rel = Path(*parts)
    for candidate in (root / rel.with_suffix(".py"), root / rel / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _import_statements(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement of `tree`, at any depth (in functions, classes, branches), found by
    walking statement bodies only: an import is a statement, so expressions are never entered. The
    body of `if TYPE_CHECKING:` is left out: what it imports is read by type checkers only, never run,
    so it computes nothing (a run module naming `Claim` in a hint does not hash the scorecard's code)."""
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            todo += node.orelse
            continue
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            block = getattr(node, field, None)
            if isinstance(block, list):
                todo += block


def _imports(path: Path, name: str, root: Path) -> frozenset[str]:
    """The replikit modules that module `name` (file `path`) imports, anywhere in its body (parsed
    once per version of the file: a Snakemake start hashes the closures of 18 modules, which share
    most of their files)."""
    return _parsed_imports(path, name, root, path.stat().st_mtime_ns)


@functools.cache
def _parsed_imports(path: Path, name: str, root: Path, mtime_ns: int) -> frozenset[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in _import_statements(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == root.name}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != root.name:
                continue
            found.add(target)
            found |= {f"{target}.{a.name}" for a in node.names}  # `from . import x`: x may be a module
    return frozenset(m for m in found if _module_file(m, root))


@functools.cache
def code_files(module: str, root: Path = PACKAGE_ROOT) -> tuple[Path, ...]:
    """Module `module` and every replikit module it imports, directly or through others (read from
    the source, so nothing is imported): the code that computes what the module computes."""
    seen: dict[str, Path] = {}
    todo = [module]
    while todo:
        name = todo.pop()
        path = _module_file(name, root)
        if name in seen or path is None:
            continue
        seen[name] = path
        todo += sorted(_imports(path, name, root) - set(seen))
    return tuple(sorted(set(seen.values())))


def code_hash(*modules: str, root: Path = PACKAGE_ROOT) -> str:
    """A short sha256 of the source of `modules` and of the replikit modules they import: it changes
    when any of that code changes (and only then), so a result can say which code computed it."""
    h = hashlib.sha256()
    for path in sorted({p for m in modules for p in code_files(m, root)}):
        h.update(str(path.relative_to(root.parent)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def run_fingerprint(*parts: object, module: str) -> str:
    """What a checkpoint must match to be resumed: the run's defining `parts` (name, seed, config,
    data digest) and the code hash of `module`, so a job never resumes a checkpoint that older code
    wrote (its numbers would mix two versions of the code)."""
    import json

    return json.dumps([*parts, code_hash(module)], sort_keys=True)


def uncommitted_code(*modules: str, root: Path = PACKAGE_ROOT, cwd: str | Path = REPOSITORY) -> list[str]:
    """The code files of `modules` (`code_files`) that git does not track or that have uncommitted
    changes, relative to the checkout; [] outside git."""
    files = [str(p) for p in sorted({p for m in modules for p in code_files(m, root)})]
    try:
        out = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all", "--", *files],
                             cwd=cwd, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return []
    return sorted(line[3:].strip() for line in out.splitlines() if line.strip())


def computed_by(*modules: str) -> dict:
    """What a run's record says about the code that computed it: when it ran, the commit, whether
    the tree was dirty (its tracked files changed, or the modules' own code untracked or changed:
    `uncommitted`, the files), the hash of the modules' code (`code_hash`), and the kernel level and
    CPU it ran on (replikit.core.numerics)."""
    state, changed = git_state(), uncommitted_code(*modules)
    return {**state, "dirty": state["dirty"] or bool(changed), "uncommitted": changed,
            "code": code_hash(*modules), "kernels": numerics.kernels(), "cpu": numerics.cpu()["model"],
            "ran": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}


def package_versions() -> dict[str, str]:
    out = {"python": sys.version.split()[0]}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def record(rule: str, script: str, config: dict, devices: list[str]) -> dict:
    """A provenance record for one output."""
    return {
        "rule": rule,
        "script": script,
        "config": config,
        "git_commit": git_commit(),
        "packages": package_versions(),
        "devices": sorted(set(devices)),
        "numerics": numerics.record(),
        "host": platform.platform(),
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    }


def runs_computed_by(records: list[dict]) -> list[dict]:
    """The code that computed a set of run records (their `computed_by`), one entry per distinct
    (module, rule, commit, dirty, code, kernel level) with how many runs and when the first and last
    ran. Runs from before records named their code give one entry with `code` None: their code is
    unknown."""
    groups: dict[tuple, dict] = {}
    for r in records:
        c = r.get("computed_by") or {}
        k = (c.get("module"), c.get("rule"), c.get("commit"), c.get("dirty"), c.get("code"),
             c.get("kernels"), tuple(c.get("uncommitted") or ()))
        fields = dict(zip(("module", "rule", "commit", "dirty", "code", "kernels"), k[:6], strict=True))
        g = groups.setdefault(k, dict(fields, uncommitted=list(k[6]), n_runs=0, first=c.get("ran"),
                                      last=c.get("ran")))
        g["n_runs"] += 1
        if c.get("ran"):
            g["first"] = min(filter(None, (g["first"], c["ran"])))
            g["last"] = max(filter(None, (g["last"], c["ran"])))
    return list(groups.values())


def stale(prov: dict, today: dict[str, str]) -> list[str]:
    """Why results in a scorecard's or figure's provenance were computed by other code than today's
    (`today`: module -> code hash, replikit.papers.registry.code_hashes); [] when none was. Names
    the commit that did compute them and the rule to rerun."""
    notes = []
    for g in prov.get("runs") or []:
        if isinstance(g, str):  # a figure's list of run paths, not a code record
            continue
        if g.get("code") is None:
            notes.append(f"{g['n_runs']} run(s) recorded no code hash (computed before runs recorded "
                         "their code): which code computed them is unknown; rerun them with "
                         "`snakemake --forcerun <prefix>_train ...` to know")
        elif g.get("module") in today and today[g["module"]] != g["code"]:
            dirty = " with uncommitted changes" if g.get("dirty") else ""
            notes.append(f"{g['n_runs']} run(s) computed at commit {str(g['commit'])[:10]}{dirty} "
                         f"(code {g['code']}); the code of {g['module']} has changed since (now "
                         f"{today[g['module']]}): rerun with `snakemake --forcerun {g['rule']} ...`")
    return notes


def other_kernels(prov: dict) -> list[str]:
    """Which results in a scorecard's or figure's provenance were computed at another kernel level
    than the pinned one (replikit.core.numerics); [] when none was."""
    groups = [g for g in prov.get("runs") or [] if isinstance(g, dict)]
    notes = [(g.get("module"), numerics.other_level_note(g.get("kernels"), g["n_runs"])) for g in groups]
    return [f"{module}: {note}" for module, note in notes if note]


def uncommitted(prov: dict) -> list[str]:
    """Which results in a scorecard's or figure's provenance were computed by code that git does not
    track or that had uncommitted changes (the files, and the module whose code they are); [] when none."""
    notes = [f"{g['n_runs']} run(s) of {g.get('module')} computed by code not committed: "
             f"{', '.join(g['uncommitted'])}; commit it and rerun to know which code computed them"
             for g in prov.get("runs") or [] if isinstance(g, dict) and g.get("uncommitted")]
    for key in ("analysis_uncommitted", "figure_uncommitted"):
        if prov.get(key):
            notes.append(f"{key.split('_')[0]} code not committed: {', '.join(prov[key])}")
    return notes


def write_figure_record(path: str, rule: str, script: str, config: dict, devices: list[str],
                        caption: str, scale: str, subset: str, inputs: list[str], paper: str,
                        runs: list[dict] | None = None, figure_code: str | None = None,
                        figure_module: str | None = None) -> dict:
    """Write `<figure>.provenance.json`: what the report shows beside each figure. `subset` names the
    data when it is a subset file ("CIFAR-10 subset"; "" for full data). `git_commit` is
    the commit that drew it; `runs` (runs_computed_by) the commits and code that computed its runs."""
    from replikit.core.io import write_json

    rec = {**record(rule, script, config, devices), "paper": paper, "caption": caption, "scale": scale,
           "subset": bool(subset), "subset_title": subset, "inputs": [str(p) for p in inputs],
           "runs": runs or [],
           "figure_code": figure_code, "figure_uncommitted": uncommitted_code(figure_module) if figure_module
           else []}
    write_json(path, rec)
    return rec
