"""Pre-registration kept by the machine (issue 85): what a claim was when its seeds were fixed.

`config/registrations/<paper>.json` records, per claim and scale, the claim's *fingerprint* (the hash
of its claim function's code, without docstrings or comments, and of every replikit function and
constant it reaches, `claim_code`;
the digest of its statement, statistic, rule, falsifier setting and quote; the config values of the
keys it uses, margins included) and the seeds it is judged on, with the date it was written. The lock
is written by `python -m replikit.tools.register`, which refuses seeds that already have results.

The claims job compares each row with the lock (`registered`): a replication whose fingerprint or
seeds differ from its registration at that scale was changed after its seeds were seen, and is
counted apart (CHANGED) until fresh seeds are registered for it and judge it.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import json
import textwrap
import types
from collections.abc import Callable
from pathlib import Path

from replikit.scoring.scorecard_reference import definition

LOCKS = Path(__file__).resolve().parents[3] / "config" / "registrations"
CHANGED = "changed after its seeds were seen"
UNREGISTERED = "not registered"
CONSTANTS = (str, int, float, tuple, frozenset)  # module-level values a claim's hash includes


def _names(func: Callable) -> set[str]:
    """The global names `func`'s code reads, its nested functions' and lambdas' included."""
    names: set[str] = set()
    todo = [func.__code__]
    while todo:
        code = todo.pop()
        names |= set(code.co_names)
        todo += [c for c in code.co_consts if isinstance(c, types.CodeType)]
    return names


def code_text(func: Callable) -> str:
    """`func`'s code as its syntax tree writes it back, without docstrings or comments (a change of
    wording there is not a change of the claim)."""
    source = textwrap.dedent(inspect.getsource(func))
    try:
        tree = ast.parse(source)
    except SyntaxError:  # a lambda inside a longer expression: its lines as they are
        return source
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and body \
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            node.body = body[1:] or [ast.Pass()]
    return ast.unparse(tree)


def claim_code(func: Callable) -> str:
    """A short sha256 of `func`'s code (`code_text`: no docstrings or comments) and of every replikit
    function and module-level constant it reaches by name, in its own module or another (each once): a
    change to the claim's statistic, its measure or a helper it calls changes it, and nothing else
    does."""
    h, seen, todo = hashlib.sha256(), set(), [func]
    while todo:
        f = todo.pop()
        key = f"{f.__module__}.{f.__qualname__}"
        if key in seen:
            continue
        seen.add(key)
        h.update(key.encode() + b"\0" + code_text(f).encode() + b"\0")
        for name in sorted(_names(f)):
            value = f.__globals__.get(name)
            if isinstance(value, types.FunctionType) and value.__module__.startswith("replikit."):
                todo.append(value)
            elif isinstance(value, CONSTANTS) and f.__module__.startswith("replikit."):
                h.update(f"{f.__module__}.{name}={value!r}".encode() + b"\0")
    return h.hexdigest()[:16]


def fingerprint(func: Callable, claim, cfg: dict) -> dict:
    """What a claim is at one scale: its code (`claim_code`), its definition and the config values of
    the keys it uses (and the paper's `margins`, which its rule reads)."""
    keys = sorted(set(claim.uses) | ({"margins"} & set(cfg)))
    return {"code": claim_code(func),
            "definition": definition(claim.statement, claim.statistic, claim.rule,
                                     claim.falsifier.setting if claim.falsifier else "",
                                     claim.source.quote if claim.source else ""),
            "settings": json.loads(json.dumps({k: cfg[k] for k in keys if k in cfg}, sort_keys=True))}


def lock_path(paper: str, locks: Path = LOCKS) -> Path:
    return locks / f"{paper}.json"


def registration_input(root: Path, paper: str) -> dict[str, str]:
    """The claims rule's input `registration`: the paper's lock, where it has one."""
    path = lock_path(paper, root / "config" / "registrations")
    return {"registration": str(path)} if path.exists() else {}


def read_lock(paper: str, locks: Path = LOCKS) -> dict:
    """{claim id: {scale: entry}} ({} before the paper's first registration)."""
    path = lock_path(paper, locks)
    return json.loads(path.read_text())["claims"] if path.exists() else {}


def write_lock(paper: str, claims: dict, locks: Path = LOCKS) -> Path:
    path = lock_path(paper, locks)
    path.parent.mkdir(parents=True, exist_ok=True)
    how = f"python -m replikit.tools.register {paper} --scale SCALE"
    body = {"paper": paper, "how": how, "claims": claims}
    path.write_text(json.dumps(body, indent=1, sort_keys=True) + "\n")
    return path


def changes(entry: dict | None, now: dict, seeds: list[int]) -> list[str]:
    """What differs between a claim's registration at a scale and the claim as judged now: "not
    registered", or each of code, definition, settings and seeds that moved."""
    if entry is None:
        return [UNREGISTERED]
    moved = [k for k in ("code", "definition", "settings") if entry.get(k) != now[k]]
    return moved + (["seeds"] if sorted(entry.get("seeds", [])) != sorted(seeds) else [])


def registered(rows: list[dict], fingerprints: dict[str, dict], lock: dict, scale: str) -> list[dict]:
    """`rows` each with its `registration` (the entry's date and what changed since, `changes`); a
    measured replication whose claim changed since its seeds were registered stands as CHANGED. A
    claim with no entry at this scale (a ladder's rung, the preflight) is shown as not registered and
    keeps its standing: every claim has one at smoke and default (tests/test_registration.py)."""
    out = []
    for row in rows:
        entry = lock.get(row["id"], {}).get(scale)
        moved = changes(entry, fingerprints[row["id"]], row.get("seeds") or [])
        row = {**row, "registration": {"registered": (entry or {}).get("registered"), "changed": moved,
                                       "after_results": bool((entry or {}).get("after_results"))}}
        if entry is not None and moved and row.get("parts") and row.get("standing") == "replication":
            row["standing"] = CHANGED
        out.append(row)
    return out


def claim_functions(claims_module: types.ModuleType, ids: list[str]) -> dict[str, Callable]:
    """Claim id -> the function that builds it (the module's CLAIMS, in the claims' order)."""
    functions = list(getattr(claims_module, "CLAIMS", ()))
    if len(functions) != len(ids):
        raise ValueError(f"{claims_module.__name__}: CLAIMS lists {len(functions)} functions for {len(ids)} "
                         "claims: one function per claim, in order")
    return dict(zip(ids, functions, strict=True))

