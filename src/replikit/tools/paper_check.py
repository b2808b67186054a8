"""Check one paper as CI will, before running its tests: `python -m replikit.tools.paper_check NAME`.

It runs, for paper NAME: its config at every scale, its declaration (the interface, its figures' runs,
its claims' figures), ruff on its files, every quote against its source texts, the rule index
(docs/rules.md) and the figure audit's stored results. Each failure names its fix; exit status 1 when
any check fails. It runs no training job and takes seconds.
"""

from __future__ import annotations

import argparse
import functools
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

SCALES = {"smoke": "config/smoke.yaml", "default": "config/config.yaml", "paper": "config/paper.yaml"}
AUDIT_SEEDS = [0, 1, 2]  # the seeds tests/figure_audit stores (tests/figure_audit/store.py)


def _root() -> Path:
    from replikit.papers import CONFIGS

    return CONFIGS.parents[1]


@functools.cache
def configs(name: str) -> dict[str, dict]:
    """Each scale's validated config (ConfigError names the file and the key), read once per run."""
    from replikit.core.config import load_config
    from replikit.papers.registry import config_errors

    root = _root()
    return {scale: load_config(root / path, root / "workflow/schemas/config.schema.yaml",
                               lambda c: config_errors(c, [name])) for scale, path in SCALES.items()}


def check_declaration(name: str) -> list[str]:
    from replikit.papers.interface import claim_figure_errors
    from replikit.papers.registry import experiment_errors, get

    paper, errors = get(name), []
    for scale, cfg in configs(name).items():
        errors += [f"{scale}: {e}" for e in experiment_errors(paper, cfg[name])]
        if not errors:
            claims = paper.claims(paper.experiments(cfg[name]), cfg[name])
            errors += [f"{scale}: {e}" for e in claim_figure_errors(paper, claims)]
    return sorted(set(errors))


def paper_files(name: str) -> list[Path]:
    """The paper's own files that ruff checks: its module(s) and its test file."""
    root = _root()
    found = [root / f"src/replikit/papers/{name}{s}.py" for s in ("", "_analysis")]
    return [p for p in [*found, root / f"tests/test_{name}.py"] if p.is_file()]


def check_ruff(name: str) -> list[str]:
    files = [str(p) for p in paper_files(name)]
    res = subprocess.run([sys.executable, "-m", "ruff", "check", *files], cwd=_root(),
                         capture_output=True, text=True)
    if res.returncode == 0:
        return []
    return [f"ruff: {res.stdout.strip()}\n  fix: `ruff check --fix {' '.join(files)}` fixes the import order "
            "and the like; fix the rest by hand (tests/test_repository.py runs ruff on the whole tree)"]


def check_quotes(name: str) -> list[str]:
    from replikit.papers.registry import get
    from replikit.scoring.quotes import QuoteError, quote_errors

    paper, errors = get(name), []
    try:
        for scale, cfg in configs(name).items():
            claims = paper.claims(paper.experiments(cfg[name]), cfg[name])
            errors += [f"{scale}: {e}" for e in quote_errors(claims, paper.source_files())]
    except QuoteError as e:
        return [str(e)]
    return sorted(set(errors))


def check_rule_index(name: str) -> list[str]:
    from replikit.papers.rule_index import index

    page = _root() / "docs/rules.md"
    if page.is_file() and page.read_text() == index():
        return []
    return ["docs/rules.md does not list the rules of the papers as they are (tests/test_rule_index.py); "
            "fix: `python -m replikit.papers.rule_index > docs/rules.md`"]


def check_audit_store(name: str) -> list[str]:
    """The figure audit (tests/test_figure_audit.py) draws every figure from stored smoke results."""
    from replikit.papers.registry import get

    paper, cfg = get(name), configs(name)["smoke"][name]
    store = _root() / "tests/figure_audit/runs"
    missing = [f.name for f in paper.figures
               if not all((store / p).is_file() for p in paper.per_run_files(
                   cfg, f.reads, f.name, paper.seeds(cfg, AUDIT_SEEDS)[:len(AUDIT_SEEDS)]))]
    if not missing:
        return []
    return [f"the figure audit has no stored smoke results for figure(s) {', '.join(missing)}; fix: run the "
            f"paper at smoke, `snakemake --cores 2 --configfile config/smoke.yaml "
            f"--config 'papers=[{name}]'`, "
            "then store seeds 0-2 of its runs: `python -m tests.figure_audit.store scales/smoke/results`"]


def fidelity_notes(name: str) -> list[str]:
    from replikit.papers.registry import get

    if get(name).departures is None:
        return ["departures are not declared, so every claim reads 'unverified': declare "
                "Paper(departures=(Departure(key, ours, paper, reason), ...)) with how config/paper.yaml "
                "departs from the paper, or departures=() if it follows it in every setting"]
    return []


CHECKS: dict[str, Callable[[str], list[str]]] = {
    "declaration": check_declaration, "ruff": check_ruff, "quotes": check_quotes,
    "rule index": check_rule_index, "figure audit store": check_audit_store,
}


def run(name: str) -> int:
    """Every check of `name`, printed; 1 when one fails, else 0."""
    from replikit.core.config import ConfigError
    from replikit.papers.interface import DeclarationError

    failed = 0
    for what, check in CHECKS.items():
        try:
            problems = check(name)
        except (ConfigError, DeclarationError, KeyError) as e:
            problems = [str(e).strip("\"'")]
        failed += bool(problems)
        print(f"{'FAIL' if problems else 'ok  '} {what}" + "".join(f"\n  {p}" for p in problems))
    for note in fidelity_notes(name):
        print(f"note fidelity: {note}")
    print(f"{name}: {'every check passed' if not failed else f'{failed} check(s) failed'}")
    return int(bool(failed))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paper", help="the paper's name (config/papers/<name>.yaml)")
    return run(ap.parse_args(argv).paper)


if __name__ == "__main__":
    sys.exit(main())
