"""The registry of papers: finds a paper by name (its config file lists it), imports only its
module(s), checks its declaration once (`get`), and finds a stage job's paper and stage from its log
path (`stage_of_job`), so that a training job imports its paper's run module and nothing else. Also
the code that computes each paper's results (`code_modules`, `code_hashes`), for provenance."""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Iterable, Mapping
from pathlib import Path

from replikit.papers import CONFIGS, paper_names
from replikit.papers.interface import DeclarationError, Paper, Runs, Stage, declaration_errors


def code_modules(paper: Paper) -> list[str]:
    """The modules whose code computes a paper's results: its stages' run modules, its claims' and
    its figures' (each with the replikit modules it imports: provenance.code_hash)."""
    return sorted({s.run.__module__ for s in paper.stages} | {paper.claims.__module__}
                  | {f.func.__module__ for f in paper.figures})


def code_hashes(papers: Iterable[Paper]) -> dict[str, str]:
    """Today's code hash of every module that computes the papers' results (module -> hash): the
    report flags a result whose record names another hash, and a change reruns figures and claims."""
    from replikit.reporting.provenance import code_hash

    return {m: code_hash(m) for paper in papers for m in code_modules(paper)}


def check(paper: Paper, others: Mapping[str, str] | None = None, configs: Path = CONFIGS) -> Paper:
    """`paper`, or DeclarationError naming the paper, each broken rule's field and its fix."""
    errors = declaration_errors(paper, others, configs)
    if errors:
        raise DeclarationError(f"paper {paper.name!r} ({_declared_in(paper.name)}.SPEC) breaks the paper "
                               "interface:\n  " + "\n  ".join(errors))
    return paper


def _name(func: object) -> str:
    return getattr(func, "__name__", "experiments")


def experiment_errors(paper: Paper, cfg: dict) -> list[str]:
    """Every figure of `paper` for which its experiments at config block `cfg` declare no runs, or an
    empty list of them (the figure's runs are `Runs.experiments(cfg)[figure name]`), as `field: problem;
    fix: ...`."""
    groups = paper.experiments(cfg)
    keys, func = list(groups), _name(paper.runs.experiments)
    return [f"figures[{fig.name!r}]: {func}(cfg) declares no runs for it (its keys: "
            f"{', '.join(map(repr, keys)) or 'none'}); fix: name the figure as its runs' key, or return "
            f"{fig.name!r}: [...runs] from {func}" if fig.name not in keys else
            f"figures[{fig.name!r}]: {func}(cfg) gives it an empty run list at this config; fix: return "
            "its runs, or declare Figure(..., empty_ok=True) and draw a 'not run at this scale' panel"
            for fig in paper.figures if fig.name not in keys or not (groups[fig.name] or fig.empty_ok)]


def check_experiments(paper: Paper, cfg: dict) -> Paper:
    """`paper`, or DeclarationError when a figure has no runs at config block `cfg` (before any job)."""
    errors = experiment_errors(paper, cfg)
    if errors:
        raise DeclarationError(f"paper {paper.name!r} ({_declared_in(paper.name)}.SPEC) breaks the paper "
                               "interface:\n  " + "\n  ".join(errors))
    return paper


_REGISTRY: dict[str, Paper] = {}


def _listed(name: str) -> None:
    if name not in paper_names():
        raise KeyError(f"no paper named {name!r}; declared: {', '.join(paper_names())} (a paper is "
                       f"config/papers/<name>.yaml and src/replikit/papers/<name>.py)")


def _declared_in(name: str) -> str:
    """The module that declares paper `name`'s SPEC: `<name>_analysis` where the paper has one, else
    `<name>`."""
    analysis = f"{__package__}.{name}_analysis"
    return analysis if importlib.util.find_spec(analysis) is not None else f"{__package__}.{name}"


def get(name: str) -> Paper:
    """The paper `name`, its module(s) imported (only they) and its declaration checked, once."""
    _listed(name)
    if name not in _REGISTRY:
        where = _declared_in(name)
        try:
            module = importlib.import_module(where)
        except ModuleNotFoundError as e:
            if e.name != where:
                raise
            raise DeclarationError(f"paper {name!r}: config/papers/{name}.yaml exists but module {where} "
                                   f"does not; fix: write src/replikit/papers/{name}.py, ending in RUNS = "
                                   "Runs(...) and SPEC = Paper(RUNS, ...)") from None
        spec = getattr(module, "SPEC", None)
        if not isinstance(spec, Paper) or spec.name != name:
            raise DeclarationError(f"paper {name!r}: {where} declares no SPEC = Paper(...) named "
                                   f"{name!r}; fix: end it with SPEC = Paper(RUNS, ...), RUNS = "
                                   f"Runs({name!r}, ...) being declared in {name}.py")
        check(spec, {n: p.prefix for n, p in _REGISTRY.items()})
        from replikit.data import datasets

        for ds in spec.datasets:
            try:
                datasets.register(ds, by=f"paper {name!r}")
            except ValueError as e:
                raise DeclarationError(f"paper {name!r}: datasets: {e}") from None
        _REGISTRY[name] = spec
    return _REGISTRY[name]


def registry() -> dict[str, Paper]:
    """All papers, by name: imports every one (a job uses `get` or `stage_of_job`)."""
    return {name: get(name) for name in paper_names()}


def _paper_and_stage(log: str) -> tuple[str, str]:
    """Paper and stage names of a generated stage job from its log path `logs/<paper>/<stage>/...`."""
    parts = Path(log).parts
    # the `logs` folder of the workflow: the one followed by a paper's name (an absolute path may
    # have other folders named logs above it)
    at = [i for i, part in enumerate(parts[:-2]) if part == "logs"]
    at = [i for i in at if parts[i + 1] in paper_names()] or at
    if not at:
        raise KeyError(f"log {log!r} is not logs/<paper>/<stage>/...: not a generated stage job")
    name, what = parts[at[0] + 1: at[0] + 3]
    return name, what


def paper_of_job(log: str) -> str:
    """The paper of a generated stage job, from its log path."""
    return _paper_and_stage(log)[0]


def stage_of_job(log: str) -> Stage:
    """The stage a generated stage job runs, found from its log path `logs/<paper>/<stage>/...`
    (`Stage.log`) and the paper's module `<name>.py` alone (its `RUNS`, which is the paper's `runs`): a
    training job loads no other paper, and no analysis code of its own."""
    name, what = _paper_and_stage(log)
    _listed(name)
    module = importlib.import_module(f"{__package__}.{name}")
    runs = getattr(module, "RUNS", None)
    if not isinstance(runs, Runs):
        raise DeclarationError(f"paper {name!r}: {module.__name__} declares no RUNS = Runs(...); fix: "
                               "declare its run side there (a stage job imports only that module)")
    stage = next((s for s in runs.stages if s.name == what), None)
    if stage is None:
        raise KeyError(f"log {log!r}: {module.__name__}.RUNS has no stage {what!r}")
    return stage


def used_datasets(config: dict, papers: list) -> list[str]:
    """The datasets the enabled `papers` read at this config (every figure's, and the paper's own)."""
    names = {p.dataset(config[p.name], f) for p in papers for f in [None, *(fig.name for fig in p.figures)]}
    return sorted(n for n in names if n)


def data_errors(config: dict, papers: list) -> list[str]:
    """What stops the run before any job about the data it reads (`replikit.data.freshness.errors`):
    a file whose md5 is not the declared one, a user's own file in no search path."""
    from replikit.data import datasets, freshness
    from replikit.papers.interface import dataset_files

    data = config["data"]
    return [e for name in used_datasets(config, papers) for e in freshness.errors(
        name, data["search_paths"], data["sources"], Path(dataset_files(name)["manifest"]).exists(),
        datasets.declared_by(name))]


def register_config_datasets(config: dict) -> list[str]:
    """Register the datasets config key `data.datasets` declares (one entry each); the errors, e.g. a
    name another declaration holds differently."""
    from replikit.data import datasets

    errors = []
    for name, e in (config.get("data", {}).get("datasets") or {}).items():
        tuples = {k: tuple(e[k]) for k in ("sizes", "subset", "shape", "mean", "std") if e.get(k) is not None}
        try:
            declared = datasets.Dataset(name, e["title"], n_classes=e["n_classes"], url=e.get("url", ""),
                                        complete=bool(e.get("complete")), **tuples)
            datasets.register(declared, by=f"config key data.datasets.{name}")
        except ValueError as err:
            errors.append(f"config key 'data.datasets.{name}': {err}")
    return errors


def config_errors(config: dict, papers: list[str] | None = None) -> list[str]:
    """Constraints between keys that a schema cannot express: the datasets the config declares (which
    it registers first), then each enabled paper's `config_errors` (replikit.core.config.validate_config's
    `constraints`); `papers`: check these instead of the enabled."""
    errors = register_config_datasets(config)
    if errors:
        return errors
    names = config.get("papers", []) if papers is None else papers
    return [e for name in names if name in paper_names() and isinstance(config.get(name), dict)
            for e in get(name).config_errors(config[name])]
