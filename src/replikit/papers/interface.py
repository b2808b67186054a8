"""The one interface every replicated paper implements, and the registry that finds them.

A paper is `replikit/papers/<name>.py` (run specs, training) and `<name>_analysis.py` (figures,
claims), which declares `SPEC = Paper(...)`. `workflow/rules/papers.smk` generates each enabled
paper's rules from its SPEC, and three generic scripts run them through the registry:

- `<prefix>_<stage>` per `Stage`: training (one job per run and seed) and any extra stage (data
  generation, layer probes, benchmarks), with the paper's `resources`;
- `<prefix>_figure`: one job per `Figure`, which aggregates the runs the figure needs;
- `<prefix>_claims`: the scorecard (`results/<name>/claims.json`).

A run's job reruns only when its run-defining config (`Stage.config`) changes.
"""

from __future__ import annotations

import importlib
import pkgutil
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..claims import Claim, judge, write_scorecard
from ..fidelity import Departure
from ..io import read_json
from ..provenance import record, write_figure_record

Wildcards = Any  # snakemake.io.Wildcards: attribute access by wildcard name


def dataset_files(name: str) -> dict[str, str]:
    """The prepared dataset `name` (rule prepare_dataset): canonical tensors and their manifest."""
    return {"tensors": f"resources/data/{name}/tensors.pt",
            "manifest": f"resources/data/{name}/manifest.json"}


@dataclass
class Job:
    """What a stage's `run` gets from its Snakemake job."""

    wildcards: Mapping[str, str]
    input: Mapping[str, Any]  # name -> path (or list of paths)
    output: Mapping[str, str]
    cfg: dict  # the run-defining config (Stage.config)
    scratch: str | None  # checkpoint or work path of this job (Stage.scratch), removed when done
    device: Any  # torch.device

    @classmethod
    def from_snakemake(cls, sm: Any, device: Any) -> Job:
        return cls(dict(sm.wildcards.items()), dict(sm.input.items()), dict(sm.output.items()),
                   sm.params.cfg, sm.params.get("scratch"), device)


@dataclass(frozen=True)
class Stage:
    """One kind of job of a paper: rule `<prefix>_<name>`, one job per value of its wildcards."""

    name: str
    outputs: dict[str, str]  # output name -> path pattern ({run}, {seed}, {task} ... wildcards)
    run: Callable[[Job], None]  # does the work: reads job.input, writes every job.output
    inputs: Callable[[dict, Wildcards], dict[str, Any]] | None = None  # (paper config, wildcards)
    config: Callable[[dict, Wildcards], dict] | None = None  # the config that defines one job
    scratch: str | None = None  # checkpoint/work path pattern, same wildcards as the outputs
    wildcards: dict[str, str] = field(default_factory=dict)  # constraints, besides run and seed
    runtime: int | None = None  # minutes; None: the paper's `resources.runtime`
    mem_mb: int | None = None  # None: the paper's `resources.mem_mb`
    gpu: bool = True  # asks for the paper's `resources.gpu`
    threads: bool = True  # uses the config's `threads` (else 1)
    directory: bool = False  # the single output is a directory
    benchmark: bool = False  # a throughput record: a final target, listed in the report

    def log(self, paper: str) -> str:
        """logs/<paper>/<stage>/<wildcards>.log, e.g. logs/cold_posterior/sample/{run}/seed{seed}.log"""
        first = next(iter(self.outputs.values()))
        names = [w for w in ("run", "task", "seed") if "{" + w + "}" in first]
        parts = [f"seed{{{w}}}" if w == "seed" else f"{{{w}}}" for w in names]
        return f"{paper}/{self.name}/" + ("/".join(parts) if parts else self.name)


@dataclass(frozen=True)
class Figure:
    """One figure: `func(results[frame], specs, out, scale[, subset])` draws it from
    `Paper.load_results` of the runs `Paper.experiments(cfg)[name]` and returns its table."""

    name: str
    caption: str
    func: Callable[..., pd.DataFrame]
    frame: str  # which table of Paper.load_results it draws
    reads: str = "metrics"  # which per-run file (Paper.run_files) it aggregates
    takes_subset: bool = True  # func's last argument says whether the data is a subset

    def draw(self, results: dict[str, pd.DataFrame], specs: list, out: Path, scale: str,
             subset: bool) -> pd.DataFrame:
        extra = (subset,) if self.takes_subset else ()
        return self.func(results[self.frame], specs, out, scale, *extra)


def one_table(name: str, load: Callable[[list[str]], pd.DataFrame]) -> Callable[[dict], dict]:
    """`Paper.load_results` of a paper whose runs load into one table `name` (from metrics files)."""
    return lambda files: {name: load(files["metrics"])}


def figures_of(captions: dict[str, str], funcs: dict[str, Callable[..., pd.DataFrame]],
               frames: str | dict[str, str], reads: dict[str, str] | None = None,
               takes_subset: bool = True) -> tuple[Figure, ...]:
    """One Figure per caption (in order), drawn by `funcs[name]` from `frames` (one table name for
    all, or one per figure)."""
    return tuple(Figure(name, caption, funcs[name], frames if isinstance(frames, str) else frames[name],
                        (reads or {}).get(name, "metrics"), takes_subset)
                 for name, caption in captions.items())


@dataclass(frozen=True)
class Paper:
    """Everything the workflow needs to know about one paper."""

    name: str  # config block, results/<name>, logs/<name>
    prefix: str  # rule names: <prefix>_train, <prefix>_figure, <prefix>_claims
    title: str
    arxiv: str
    run_spec: type  # a dataclass with `.name` and `parse(name)`
    run_pattern: str  # regex of run names
    experiments: Callable[[dict], dict[str, list]]  # figure -> the run specs it needs
    run_files: dict[str, str]  # per-run file kind -> path pattern with {run} and {seed}
    stages: tuple[Stage, ...]
    figures: tuple[Figure, ...]
    claims: Callable[[dict, dict], list[Claim]]  # (experiments(cfg), cfg) -> the claims
    load_results: Callable[[dict[str, list[str]]], dict[str, pd.DataFrame]]  # kind -> files -> frames
    # per-run file kind the claims read -> the figure whose runs they read it for (None: all runs)
    claim_reads: dict[str, str | None] = field(default_factory=lambda: {"metrics": None})
    dataset: Callable[[dict, str | None], str | None] = lambda cfg, figure: None  # manifest to cite
    config_errors: Callable[[dict], list[str]] = lambda cfg: []  # constraints the schema cannot express
    # Fidelity (replikit.fidelity): where config/paper.yaml itself departs from the paper (every row a
    # proxy), settings never checked against the paper text, and settings no claim statistic reads.
    departures: tuple[Departure, ...] = ()
    unverified: tuple[str, ...] = ()
    figure_only: tuple[str, ...] = ()

    @classmethod
    def declare(cls, module: Any, **fields: Any) -> Paper:
        """A paper whose run-side pieces are its module's: PAPER, RunSpec, RUN_PATTERN,
        experiment_runs, RUN_FILES, STAGES and (if any) config_errors; `fields` give the rest."""
        return cls(name=module.PAPER, run_spec=module.RunSpec, run_pattern=module.RUN_PATTERN,
                   experiments=module.experiment_runs, run_files=module.RUN_FILES, stages=module.STAGES,
                   config_errors=getattr(module, "config_errors", lambda cfg: []), **fields)

    @classmethod
    def one_table(cls, module: Any, table: str, load: Callable[[list[str]], pd.DataFrame],
                  captions: dict[str, str], funcs: dict[str, Callable[..., pd.DataFrame]],
                  **fields: Any) -> Paper:
        """`declare` for a paper whose runs' metrics load into one table `table`, which every figure
        `funcs[name](table, specs, out, scale, subset)` draws."""
        return cls.declare(module, figures=figures_of(captions, funcs, frames=table),
                           load_results=one_table(table, load), **fields)

    @property
    def results(self) -> str:
        return f"results/{self.name}"

    def stage(self, name: str) -> Stage:
        return next(s for s in self.stages if s.name == name)

    def figure(self, name: str) -> Figure:
        return next(f for f in self.figures if f.name == name)

    def run_file(self, kind: str, run: str, seed: int | str) -> str:
        return self.run_files[kind].format(run=run, seed=seed)

    def seeds(self, cfg: dict, default: list[int]) -> list[int]:
        """The paper's own seed list where its config sets one, else the global seeds."""
        return list(cfg.get("seeds") or default)

    def runs_of(self, cfg: dict, figure: str | None = None) -> list[str]:
        """Run names a figure needs (all runs when figure is None), each once, sorted."""
        groups = self.experiments(cfg)
        specs = groups[figure] if figure else [r for runs in groups.values() for r in runs]
        return sorted({r.name for r in specs})

    def per_run_files(self, cfg: dict, kind: str, figure: str | None, seeds: list[int]) -> list[str]:
        return [self.run_file(kind, n, s) for n in self.runs_of(cfg, figure) for s in seeds]

    def manifest(self, cfg: dict, figure: str | None = None) -> dict[str, str]:
        name = self.dataset(cfg, figure)
        return {"manifest": dataset_files(name)["manifest"]} if name else {}

    def figure_inputs(self, cfg: dict, seeds: list[int]) -> Callable[[Wildcards], dict]:
        def inputs(w: Wildcards) -> dict:
            fig = self.figure(w.figure)
            runs = self.per_run_files(cfg, fig.reads, fig.name, seeds)
            return {"runs": runs, **self.manifest(cfg, fig.name)}
        return inputs

    def claim_inputs(self, cfg: dict, seeds: list[int]) -> dict[str, Any]:
        files = {kind: self.per_run_files(cfg, kind, figure, seeds)
                 for kind, figure in self.claim_reads.items()}
        return {**files, **self.manifest(cfg)}

    def targets(self) -> list[str]:
        """The figures, the scorecard and the benchmark records: what `rule all` asks for."""
        bench = [p for s in self.stages if s.benchmark for p in s.outputs.values()]
        return ([f"{self.results}/figures/{f.name}.png" for f in self.figures]
                + [f"{self.results}/claims.json"] + bench)


# ---------------------------------------------------------------- Snakemake glue (called from papers.smk)


def stage_inputs(stage: Stage, cfg: dict) -> Callable[[Wildcards], dict]:
    return lambda w: stage.inputs(cfg, w) if stage.inputs else {}


def stage_params(stage: Stage, cfg: dict) -> dict[str, Callable[[Wildcards], Any]]:
    """`cfg` (the run-defining config) and, where the stage has one, `scratch`: the only params, so
    a job reruns when what defines it changes, not when the wiring does."""
    params = {"cfg": lambda w: stage.config(cfg, w) if stage.config else {}}
    if stage.scratch:
        params["scratch"] = lambda w: stage.scratch.format(**dict(w.items()))
    return params


def for_rule(rule: str) -> tuple[Paper, str]:
    """The paper and the stage (or `figure`, `claims`) that a generated rule runs."""
    prefix, _, what = rule.partition("_")
    papers = {p.prefix: p for p in registry().values()}
    if prefix not in papers:
        raise KeyError(f"rule {rule!r} belongs to no declared paper (prefixes: {', '.join(sorted(papers))})")
    return papers[prefix], what


def stage_resources(paper: Paper, stage: Stage, cfg: dict) -> dict[str, int]:
    res = cfg["resources"]
    out = {"mem_mb": stage.mem_mb or res["mem_mb"], "runtime": stage.runtime or res["runtime"]}
    return {**out, "gpu": res["gpu"]} if stage.gpu else out


def wildcard_constraints_of(paper: Paper, stage: Stage) -> dict[str, str]:
    return {"run": paper.run_pattern, **stage.wildcards}


# ---------------------------------------------------------------- the three generic jobs


def run_stage(sm: Any, device: Any) -> None:
    """A stage job (workflow/scripts/paper_stage.py): run it, then drop its checkpoint or work dir."""
    paper, name = for_rule(sm.rule)
    job = Job.from_snakemake(sm, device)
    paper.stage(name).run(job)
    if job.scratch:
        scratch = Path(job.scratch)
        shutil.rmtree(scratch, ignore_errors=True) if scratch.is_dir() else scratch.unlink(missing_ok=True)


def draw_figure(sm: Any) -> None:
    """A figure job (workflow/scripts/paper_figure.py): the figure, its table and its provenance."""
    paper, _ = for_rule(sm.rule)
    fig, cfg, runs = paper.figure(sm.wildcards.figure), sm.params.cfg, list(sm.input.runs)
    subset = bool(read_json(sm.input.manifest)["subset"]) if "manifest" in sm.input.keys() else False
    table = fig.draw(paper.load_results({fig.reads: runs}), paper.experiments(cfg)[fig.name],
                     Path(sm.output.figure), sm.params.scale, subset)
    table.to_csv(sm.output.table, index=False)
    write_figure_record(sm.output.provenance, sm.rule, _source(fig.func), cfg,
                        [read_json(p)["device"] for p in runs], fig.caption, sm.params.scale, subset, runs,
                        paper.name)


def score_claims(sm: Any) -> None:
    """A claims job (workflow/scripts/paper_claims.py): judge every claim, write the scorecard."""
    paper, _ = for_rule(sm.rule)
    cfg, seeds = sm.params.cfg, list(sm.params.seeds)
    files = {kind: list(sm.input[kind]) for kind in paper.claim_reads}
    manifest = read_json(sm.input.manifest) if "manifest" in sm.input.keys() else None
    rows = judge(paper.claims(paper.experiments(cfg), cfg), paper.load_results(files), cfg,
                 sm.params.stats, sm.params.settings, seeds, bool(manifest and manifest.get("subset", False)),
                 sm.params.scale)
    devices = [read_json(p)["device"] for p in files["metrics"]]
    write_scorecard(sm.output[0], paper.name, paper.title, sm.params.scale, manifest, seeds, rows,
                    record(sm.rule, _source(paper.claims), cfg, devices))


def _source(func: Callable) -> str:
    """Where a figure or the claims are computed: module and function, for the provenance record."""
    return f"{func.__module__}.{func.__qualname__}"


# ---------------------------------------------------------------- the registry


def _discover() -> dict[str, Paper]:
    """Every `SPEC` declared by a module of replikit.papers, by paper name."""
    from .. import papers

    found: dict[str, Paper] = {}
    for mod in pkgutil.iter_modules(papers.__path__):
        spec = getattr(importlib.import_module(f"{papers.__name__}.{mod.name}"), "SPEC", None)
        if isinstance(spec, Paper):
            if spec.name in found or spec.prefix in {p.prefix for p in found.values()}:
                raise ValueError(f"two papers declare the name {spec.name!r} or prefix {spec.prefix!r}")
            found[spec.name] = spec
    return found


_REGISTRY: dict[str, Paper] = {}


def registry() -> dict[str, Paper]:
    """All declared papers, by name (imported once)."""
    if not _REGISTRY:
        _REGISTRY.update(_discover())
    return _REGISTRY


def get(name: str) -> Paper:
    papers = registry()
    if name not in papers:
        raise KeyError(f"no paper named {name!r}; declared: {', '.join(sorted(papers))}")
    return papers[name]


def rule_prefixes() -> dict[str, str]:
    """Rule-name prefix -> paper name (the time-limit hint names the paper's runtime key)."""
    return {p.prefix: p.name for p in registry().values()}
