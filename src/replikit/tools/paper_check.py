"""Check one paper as CI will, before running its tests: `python -m replikit.tools.paper_check NAME`.

It runs, for paper NAME: that its module(s) import and keep the paper interface, its config at every
scale (loaded once), its declaration (its figures' runs, its claims' figures, a falsifier or a check for
every paper claim), ruff on its files, every quote against its source texts, the rule index
(docs/rules.md), the figure audit's stored results, its claims' functions and registration, and that
every threshold a claim rests on is drawn on its figure; a check whose prerequisite failed (the module, the
config) is skipped. Each failure names its fix; exit status 1 when any check fails. It runs no training
job and takes seconds.
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


def check_module(name: str) -> list[str]:
    """The paper's module(s) import and its SPEC keeps the paper interface (registry.get)."""
    from replikit.papers.interface import DeclarationError
    from replikit.papers.registry import _declared_in, get

    try:
        get(name)
    except (DeclarationError, KeyError) as e:
        return [str(e).strip("\"'")]
    except Exception as e:  # a SyntaxError, NameError, ... in the paper's own code
        module = _declared_in(name)
        return [f"module {module} failed to import: {type(e).__name__}: {e}; fix: run "
                f"`python -c \"import {module}\"` to see the traceback"]
    return []


def check_config(name: str) -> list[str]:
    """The paper's config at every scale, loaded once (ConfigError names the file and the nearest key)."""
    configs(name)
    return []


def falsifier_errors(name: str, claims: list) -> list[str]:
    """Every paper claim names a falsifier or says why it holds by construction (tests/test_falsifiers.py)."""
    return [f"claim {c.id}: a paper claim names a falsifier or is a check (tests/test_falsifiers.py); fix: "
            "give it falsifier=Falsifier(setting, why, measure) (replikit.scoring.claims), its own statistic "
            "in a setting where the paper says the effect is absent, or, where it holds by construction, "
            "check='why no setting could flip it'" for c in claims
            if c.kind == "paper" and c.falsifier is None and not c.check]


def check_declaration(name: str) -> list[str]:
    from replikit.papers.interface import claim_figure_errors
    from replikit.papers.registry import experiment_errors, get

    paper, errors = get(name), []
    for scale, cfg in configs(name).items():
        errors += [f"{scale}: {e}" for e in experiment_errors(paper, cfg[name])]
        if not errors:
            claims = paper.claims(paper.experiments(cfg[name]), cfg[name])
            errors += [f"{scale}: {e}" for e in claim_figure_errors(paper, claims)]
            errors += falsifier_errors(name, claims)
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


def drawn_on(name: str, figure: str) -> dict[str, list[tuple[int, str]]]:
    """Claim id -> (panel, axis) of each claim reference the figure draws from the audit's stored
    smoke results (`plotting.claim_artists`), drawn as its rule draws it (nothing written)."""
    from replikit.papers.registry import get
    from replikit.reporting import plotting

    paper, cfg = get(name), configs(name)["smoke"][name]
    fig = paper.figure(figure)
    store = _root() / "tests/figure_audit/runs"
    files = [str(store / p) for p in paper.per_run_files(cfg, fig.reads, fig.name,
                                                          paper.seeds(cfg, AUDIT_SEEDS)[:len(AUDIT_SEEDS)])]
    kept, save = {}, plotting.save
    plotting.save = lambda f, path, title, scale, subset: kept.update(fig=f)
    try:
        fig.draw(paper.load_results({fig.reads: files}), list(paper.experiments(cfg)[figure]),
                 Path("unused.png"), "smoke", False, cfg)
    finally:
        plotting.save = save
    found = plotting.claim_artists(kept["fig"])
    plotting.pyplot().close(kept["fig"])
    return found


def check_thresholds(name: str) -> list[str]:
    """Every numeric threshold or margin a claim's verdict rests on is drawn on the figure and axis the
    claim names (`Claim(drawn=((figure, axis),))`), with plotting.claim_line or claim_band keyed by the
    claim's id (tests/test_figure_audit.py, docs/report-and-scorecard.md)."""
    from replikit.papers.registry import get
    from replikit.scoring.claims import rests_on_a_threshold

    paper, cfg = get(name), configs(name)["smoke"][name]
    problems, drawn = [], {}
    for c in paper.claims(paper.experiments(cfg), cfg):
        if rests_on_a_threshold(c) and not c.drawn:
            problems.append(f"{c.id} rests on a numeric threshold or margin (its rule: {c.rule!r}) but names "
                            "no figure that draws it; fix: Claim(drawn=((figure, 'y'),)) and draw it there "
                            "with plotting.claim_line(ax, claim_id, value, what) or plotting.claim_band(ax, "
                            "claim_id, low, high, what)")
        for figure, axis in c.drawn:
            if figure not in c.figures:
                problems.append(f"{c.id} draws its threshold on {figure!r}, not among its figures; fix: add "
                                "it to Claim(figures=...)")
                continue
            if figure not in drawn:
                drawn[figure] = drawn_on(name, figure)
            if axis not in {a for _, a in drawn[figure].get(c.id, [])}:
                problems.append(f"{c.id}: figure {figure!r} draws no reference for it on its {axis} axis; "
                                "fix: draw the threshold with plotting.claim_line or claim_band, keyed by "
                                f"{c.id!r}")
    return problems


def fidelity_notes(name: str) -> list[str]:
    from replikit.papers.registry import get

    if get(name).departures is None:
        return ["departures are not declared, so every claim reads 'unverified': declare "
                "Paper(departures=(Departure(key, ours, paper, reason), ...)) with how config/paper.yaml "
                "departs from the paper, or departures=() if it follows it in every setting"]
    return []


def check_registration(name: str) -> list[str]:
    """Each claim is one function of at most 40 lines in CLAIMS, and registered at smoke and default
    (tests/test_claim_functions.py, tests/test_registration.py)."""
    import inspect
    import sys

    from replikit.papers.registry import get
    from replikit.scoring.registration import claim_functions, read_lock

    paper, cfg = get(name), configs(name)["default"][name]
    ids = [c.id for c in paper.claims(paper.experiments(cfg), cfg)]
    try:
        functions = claim_functions(sys.modules[paper.claims.__module__], ids)
    except ValueError as e:
        return [f"{e}; fix: one function claim_<id>(runs, cfg) -> Claim per claim, listed in CLAIMS"]
    lines = {f.__name__: len(inspect.getsourcelines(f)[0]) for f in functions.values()}
    long = [f"{f} has {n} lines; fix: at most 40 (texts in module constants, measures in module-level "
            "functions)" for f, n in lines.items() if n > 40]
    lock = read_lock(name)
    missing = [f"{cid} is not registered at {scale}; fix: python -m replikit.tools.register {name} --scale "
               f"{scale}, then commit config/registrations/{name}.json" for cid in ids
               for scale in ("smoke", "default") if scale not in lock.get(cid, {})]
    return long + missing


CHECKS: dict[str, Callable[[str], list[str]]] = {
    "module": check_module, "config": check_config, "declaration": check_declaration, "ruff": check_ruff,
    "quotes": check_quotes, "rule index": check_rule_index, "figure audit store": check_audit_store,
    "registration": check_registration, "thresholds drawn": check_thresholds,
}
# the check each one needs: skipped when that one failed or was skipped (one failure, reported once)
NEEDS = {"config": "module", "declaration": "config", "quotes": "config", "rule index": "module",
         "figure audit store": "config", "registration": "declaration",
         "thresholds drawn": "figure audit store"}


def run(name: str) -> int:
    """Every check of `name`, printed; 1 when one fails, else 0."""
    from replikit.core.config import ConfigError
    from replikit.papers.interface import DeclarationError

    failed, skipped = [], set()
    for what, check in CHECKS.items():
        if NEEDS.get(what) in {*failed, *skipped}:
            skipped.add(what)
            print(f"skip {what} (it needs the {NEEDS[what]} check)")
            continue
        try:
            problems = check(name)
        except (ConfigError, DeclarationError, KeyError) as e:
            problems = [str(e).strip("\"'")]
        if problems:
            failed.append(what)
        print(f"{'FAIL' if problems else 'ok  '} {what}" + "".join(f"\n  {p}" for p in problems))
    if "module" not in failed:
        for note in fidelity_notes(name):
            print(f"note fidelity: {note}")
    print(f"{name}: {'every check passed' if not failed else f'{len(failed)} check(s) failed'}")
    return int(bool(failed))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paper", help="the paper's name (config/papers/<name>.yaml)")
    return run(ap.parse_args(argv).paper)


if __name__ == "__main__":
    sys.exit(main())
