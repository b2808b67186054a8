"""The one interface every replicated paper implements, and the registry that finds them.

A paper is two files, and declares itself in two plain objects:

- its config file `config/papers/<name>.yaml`: one block of settings per scale and the `schema:` of
  its block (these files are the list of papers);
- its module `replikit/papers/<name>.py`: its runs (a dataclass subclassing `Run`), what one job
  computes, and `RUNS = Runs(...)` (the run side: runs, per-run files, stages); then its figures and
  claims and `SPEC = Paper(RUNS, ...)`. Every paper here moves its figures, claims and `SPEC` into
  `<name>_analysis.py`, so that its training jobs import no analysis code (one shape for all).

Nothing else is looked up by name. The registry imports a paper only when asked for it (`get`) and
checks its declaration then (`declaration_errors`: every rule a paper must follow, with the fix).
`workflow/rules/papers.smk` generates each enabled paper's rules from its SPEC, and three generic
scripts run them:

- `<prefix>_<stage>` per `Stage`: training (one job per run and seed) and any extra stage (data
  generation, layer probes, benchmarks), with the paper's `resources`;
- `<prefix>_figure`: one job per `Figure`, which aggregates the runs the figure needs;
- `<prefix>_claims`: the scorecard (`results/<name>/claims.json`).

A job finds its paper without a lookup table: a stage job from its log path
(`logs/<name>/<stage>/...`, `stage_of_job`), which imports only `<name>.py` and reads its RUNS; figure
and claims jobs from their `paper` param (`get`). No job imports another paper.

A run's job reruns only when its run-defining config (`Stage.config`) changes.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.util
import numbers
import re
import shutil
import string
import sys
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from . import CONFIGS, paper_names

if TYPE_CHECKING:  # pandas only in figure and claims jobs (they load it with the paper's analysis module)
    import pandas as pd

    from ..claims import Claim
    from ..datasets import Dataset
    from ..fidelity import Departure

Wildcards = Any  # snakemake.io.Wildcards: attribute access by wildcard name
# The wildcards a stage's outputs may use: Stage.log names exactly these in its log path.
STAGE_WILDCARDS = ("run", "task", "seed")


def dataset_files(name: str) -> dict[str, str]:
    """The prepared dataset `name` (rule prepare_dataset): canonical tensors and their manifest."""
    return {"tensors": f"resources/data/{name}/tensors.pt",
            "manifest": f"resources/data/{name}/manifest.json"}


_VALUE = r"[A-Za-z0-9.+-][A-Za-z0-9.+_-]*"  # one value in a run name (no '/': names are folder names)


class Run:
    """A generic run: a kind and parameters, which writes and parses its own name,
    `<kind>_<key>-<value>_<key>-<value>...`. A paper's runs are a frozen dataclass subclassing it: the
    fields are the parameters, in order, and `kind` is a class attribute (`kind: ClassVar[str] =
    "sweep"`) or, for a paper with several kinds of run, its first field. For example

        @dataclass(frozen=True)
        class Sweep(Run):
            kind: ClassVar[str] = "sweep"
            depth: int
            lr: float

    names `Sweep(4, 0.01)` `sweep_depth-4_lr-0.01`, and `Sweep.parse` reads it back by the fields'
    types. Values are None (`none`), booleans (`true`, `false`), integers, floats (Python's repr) and
    words of letters, digits and `.+-_`. `pattern()` is the names' regex (the `{run}` wildcard's
    constraint). A name that is not the canonical name of its run (`1` for a float field) is refused,
    so one run has one name."""

    kind: ClassVar[str]

    @classmethod
    def keys(cls) -> tuple[str, ...]:
        """The parameters in the name, in order: the dataclass fields other than `kind`."""
        if not dataclasses.is_dataclass(cls) or not (hasattr(cls, "kind") or cls._kind_is_field()):
            raise TypeError(f"{cls.__qualname__}: a run is a dataclass subclassing Run with a `kind` (a "
                            "ClassVar or its first field)")
        return tuple(f.name for f in dataclasses.fields(cls) if f.name != "kind")

    @classmethod
    def _kind_is_field(cls) -> bool:
        return "kind" in {f.name for f in dataclasses.fields(cls)}

    @property
    def name(self) -> str:
        keys, hints = self.keys(), _hints(type(self))
        return "_".join([self.kind, *(f"{k}-{_text(getattr(self, k), hints[k], k, keys)}" for k in keys)])

    @classmethod
    def pattern(cls) -> str:
        """The regex of the names of this kind of run (no groups: a Snakemake wildcard constraint)."""
        kind = r"[a-z][a-z0-9]*" if cls._kind_is_field() else re.escape(cls.kind)
        return kind + "".join(f"_{re.escape(k)}-{_VALUE}" for k in cls.keys())

    @classmethod
    def parse(cls, name: str) -> Run:
        """The run named `name` (ValueError: not such a name, or not the canonical one)."""
        keys = cls.keys()
        kind = r"[a-z][a-z0-9]*" if cls._kind_is_field() else re.escape(cls.kind)
        m = re.fullmatch(f"({kind})" + "".join(f"_{re.escape(k)}-({_VALUE})" for k in keys), name)
        example = "_".join(["<kind>" if cls._kind_is_field() else cls.kind, *(f"{k}-<{k}>" for k in keys)])
        if not m:
            raise ValueError(f"not a {cls.__qualname__} run name ({example}): {name!r}")
        hints = _hints(cls)
        values = {k: _read(m.group(i + 2), hints[k], name, k) for i, k in enumerate(keys)}
        if cls._kind_is_field():
            values = {"kind": m.group(1), **values}
        run = cls(**values)
        if run.name != name:
            raise ValueError(f"{name!r} is not the canonical name of its run; use {run.name!r}")
        return run


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _kinds(hint: Any) -> tuple:
    """The types a field's annotation allows (`int | None` -> (int, NoneType))."""
    return typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)


def _text(value: Any, hint: Any, key: str, keys: tuple[str, ...]) -> str:
    """`value` of a field annotated `hint` as it appears in a run name: a whole number in a float field
    is written as the float (1 -> 1.0) and numpy's numbers as Python's, so one run has one name."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, numbers.Integral) and not (float in _kinds(hint) and int not in _kinds(hint)):
        return str(int(value))
    if isinstance(value, numbers.Real):  # numpy's float64 repr would name its type
        return repr(float(value))
    text = str(value)
    if not re.fullmatch(_VALUE, text) or any(f"_{k}-" in text for k in keys):
        raise ValueError(f"run parameter {key}={value!r}: a value in a run name is letters, digits and "
                         f"'.+-_' (not starting with '_', not containing '_<key>-')")
    return text


def _read(text: str, hint: Any, name: str, key: str) -> Any:
    """A value of a run name back as the field's type (`int | None`, `int | str`, bool ...)."""
    kinds = _kinds(hint)
    if text == "none" and type(None) in kinds:
        return None
    for kind in kinds:
        if kind is bool and text in ("true", "false"):
            return text == "true"
        if kind is int and re.fullmatch(r"-?\d+", text):
            return int(text)
        if kind is float:
            try:
                return float(text)
            except ValueError:
                continue
        if kind is str:
            return text
    raise ValueError(f"run name {name!r}: {key}-{text} is not a {getattr(hint, '__name__', hint)}")


@dataclass
class Job:
    """What a stage's `run` gets from its Snakemake job."""

    wildcards: Mapping[str, str]
    input: Mapping[str, Any]  # name -> path (or list of paths)
    output: Mapping[str, str]
    cfg: dict  # the run-defining config (Stage.config)
    scratch: str | None  # checkpoint or work path of this job (Stage.scratch), removed when done
    device: Any  # torch.device
    module: str = ""  # the module of the stage's `run`: its code, and what it imports, computed the outputs
    rule: str = ""  # the Snakemake rule, named in the report's hint to rerun a result of older code

    @classmethod
    def from_snakemake(cls, sm: Any, device: Any, module: str = "") -> Job:
        return cls(dict(sm.wildcards.items()), dict(sm.input.items()), dict(sm.output.items()),
                   sm.params.cfg, sm.params.get("scratch"), device, module, sm.rule)

    def write(self, kind: str, record: dict) -> None:
        """Write output `kind` (a per-run JSON file) with the metadata every such file carries, from
        the job itself: run and seed (its wildcards, where it has them), the run-defining config and
        the device that ran it (figures and scorecards cite it), and the code that computed it: when,
        at which commit, whether the tree was dirty, and the hash of the run module's code
        (`provenance.computed_by`: the report flags a result whose code has changed since)."""
        from ..device import describe
        from ..io import write_json
        from ..provenance import computed_by

        meta = {k: (int(v) if k == "seed" else v) for k, v in self.wildcards.items() if k in ("run", "seed")}
        code = {"computed_by": {**computed_by(self.module), "module": self.module, "rule": self.rule}} \
            if self.module else {}
        write_json(self.output[kind], {**meta, **record, "config": self.cfg, "device": describe(self.device),
                                       **code})


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
        names = [w for w in STAGE_WILDCARDS if "{" + w + "}" in first]
        parts = [f"seed{{{w}}}" if w == "seed" else f"{{{w}}}" for w in names]
        return f"{paper}/{self.name}/" + ("/".join(parts) if parts else self.name)


@dataclass(frozen=True)
class Figure:
    """One figure: `func(results[frame], specs, out, scale[, subset][, cfg=cfg])` draws it from
    `Paper.load_results` of the runs `Paper.experiments(cfg)[name]` and returns its table; with
    `takes_config` it also gets the paper's config block, for the reference lines a claim depends on
    (a baseline, a margin)."""

    name: str
    caption: str
    func: Callable[..., pd.DataFrame]
    frame: str  # which table of Paper.load_results it draws
    reads: str = "metrics"  # which per-run file (Paper.run_files) it aggregates
    takes_subset: bool = True  # func's last argument says whether the data is a subset
    takes_config: bool = False  # func takes the paper's config block as `cfg=`

    def draw(self, results: dict[str, pd.DataFrame], specs: list, out: Path, scale: str,
             subset: bool, cfg: dict | None = None) -> pd.DataFrame:
        extra = (subset,) if self.takes_subset else ()
        kw = {"cfg": cfg} if self.takes_config else {}
        return self.func(results[self.frame], specs, out, scale, *extra, **kw)


@dataclass(frozen=True)
class Runs:
    """The run side of a paper, declared in its module `<name>.py` as `RUNS = Runs(...)`: everything
    its stage jobs need (a stage job imports only that module, `stage_of_job`)."""

    paper: str  # the paper's name: config/papers/<paper>.yaml, results/<paper>, logs/<paper>
    spec: type[Run]  # the dataclass of its runs (a subclass of Run)
    experiments: Callable[[dict], dict[str, list[Run]]]  # (config block) -> figure -> the runs it needs
    files: dict[str, str]  # per-run file kind -> path pattern with {run} and {seed}; one kind is 'metrics'
    stages: tuple[Stage, ...]
    config_errors: Callable[[dict], list[str]] = lambda cfg: []  # constraints the schema cannot express


@dataclass(frozen=True)
class Paper:
    """Everything the workflow needs to know about one paper."""

    runs: Runs  # the run side, from the paper's module `<name>.py` (its RUNS)
    prefix: str  # rule names: <prefix>_train, <prefix>_figure, <prefix>_claims
    title: str
    arxiv: str
    figures: tuple[Figure, ...]
    claims: Callable[[dict, dict], list[Claim]]  # (experiments(cfg), cfg) -> the claims
    load_results: Callable[[dict[str, list[str]]], dict[str, pd.DataFrame]]  # kind -> files -> frames
    # per-run file kind the claims read -> the figure whose runs they read it for (None: all runs)
    claim_reads: dict[str, str | None] = field(default_factory=lambda: {"metrics": None})
    dataset: Callable[[dict, str | None], str | None] = lambda cfg, figure: None  # manifest to cite
    # Fidelity (replikit.fidelity): where config/paper.yaml itself departs from the paper (every row a
    # proxy), settings never checked against the paper text, and settings no claim statistic reads.
    departures: tuple[Departure, ...] = ()
    unverified: tuple[str, ...] = ()
    figure_only: tuple[str, ...] = ()
    # datasets of the paper's own, beyond the built-in CIFAR-10 and MNIST (replikit.datasets): registered
    # when the paper is loaded, prepared by rule prepare_dataset like the built-in ones.
    datasets: tuple[Dataset, ...] = ()
    # the cost model of one training job (config block, run name) -> replikit.plan_cost.JobPlan, for the
    # plan of the paper scale (python -m replikit.plan; the report's cost section); None: not planned
    cost: Callable[[dict, str], Any] | None = None
    # (key, value): an edit of the paper's config block that changes which runs exist or how they are
    # judged, but not the config of any run that exists both before and after (so Snakemake retrains
    # nothing); a dict value is merged into the key's block. tests/test_interface.py makes the edit.
    retrain_free_edit: tuple[str, Any] | None = None

    # the run side, as the workflow reads it
    @property
    def name(self) -> str:
        return self.runs.paper

    @property
    def run_spec(self) -> type[Run]:
        return self.runs.spec

    @property
    def run_pattern(self) -> str:
        return self.runs.spec.pattern()

    @property
    def experiments(self) -> Callable[[dict], dict[str, list[Run]]]:
        return self.runs.experiments

    @property
    def run_files(self) -> dict[str, str]:
        return self.runs.files

    @property
    def stages(self) -> tuple[Stage, ...]:
        return self.runs.stages

    @property
    def config_errors(self) -> Callable[[dict], list[str]]:
        return self.runs.config_errors

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


def stage_resources(paper: Paper, stage: Stage, cfg: dict) -> dict[str, int]:
    res = cfg["resources"]
    out = {"mem_mb": stage.mem_mb or res["mem_mb"], "runtime": stage.runtime or res["runtime"]}
    if not stage.gpu:
        return out
    return {**out, "gpu": res["gpu"], **({"gpu_mem_mb": res["gpu_mem_mb"]} if "gpu_mem_mb" in res else {})}


def wildcard_constraints_of(paper: Paper, stage: Stage) -> dict[str, str]:
    return {"run": paper.run_pattern, **stage.wildcards}


# ---------------------------------------------------------------- the three generic jobs


def run_stage(sm: Any, device: Any) -> None:
    """A stage job (workflow/scripts/paper_stage.py): run it, then drop its checkpoint or work dir.
    Imports only the paper's run module (no analysis, pandas or plotting)."""
    stage = stage_of_job(sm.log[0])
    job = Job.from_snakemake(sm, device, stage.run.__module__)
    # config key run_store: copy what another output tree ran with the same definition (never a
    # throughput record: a benchmark measures the machine and moment it ran on)
    store = None if stage.benchmark else (sm.config or {}).get("run_store")
    if store:
        from .. import run_store
        from ..provenance import code_hash

        entry = run_store.key(paper_of_job(sm.log[0]), stage.name, job.wildcards, job.cfg, device.type,
                              code_hash(stage.run.__module__))
        origin = run_store.fetch(store, entry, job.output)
        if origin is not None:
            print(f"run store: outputs copied from {store}/{entry} (ran in {origin['outdir']}, "
                  f"{origin['stored']}); not run again")
            return
    stage.run(job)
    if store:
        run_store.put(store, entry, job.output, {"rule": sm.rule, "wildcards": job.wildcards})
    if job.scratch:
        scratch = Path(job.scratch)
        shutil.rmtree(scratch, ignore_errors=True) if scratch.is_dir() else scratch.unlink(missing_ok=True)


def images_used(cfg: dict) -> str | None:
    """The training and test images a paper's runs use, from its block's n_train / n_test (where it
    has them; null = the whole file), e.g. "256 training / 500 test images"."""
    parts = [f"{cfg[k]:,} {what}" for k, what in (("n_train", "training"), ("n_test", "test"))
             if isinstance(cfg.get(k), int)]
    if not parts:
        return None
    return " / ".join(parts) + " images" + (" per task" if "n_tasks" in cfg else "")


def draw_figure(sm: Any) -> None:
    """A figure job (workflow/scripts/paper_figure.py): the figure, its table and its provenance."""
    from .. import plotting
    from ..io import read_json
    from ..provenance import code_hash, runs_computed_by, write_figure_record

    paper = get(sm.params.paper)
    fig, cfg, runs = paper.figure(sm.wildcards.figure), sm.params.cfg, list(sm.input.runs)
    subset = bool(read_json(sm.input.manifest)["subset"]) if "manifest" in sm.input.keys() else False
    seeds = {m.group(1) for r in runs if (m := re.search(r"seed(\d+)", r))}
    plotting.set_drawn(seeds=len(seeds) or None, images=images_used(cfg))
    table = fig.draw(paper.load_results({fig.reads: runs}), paper.experiments(cfg)[fig.name],
                     Path(sm.output.figure), sm.params.scale, subset, cfg)
    table.to_csv(sm.output.table, index=False)
    records = [read_json(p) for p in runs]
    write_figure_record(sm.output.provenance, sm.rule, _source(fig.func), cfg,
                        [r["device"] for r in records], fig.caption, sm.params.scale, subset, runs,
                        paper.name, runs_computed_by(records), code_hash(fig.func.__module__))


def score_claims(sm: Any) -> None:
    """A claims job (workflow/scripts/paper_claims.py): judge every claim, write the scorecard."""
    from ..claims import judge, write_scorecard
    from ..io import read_json
    from ..provenance import code_hash, record, runs_computed_by

    paper = get(sm.params.paper)
    cfg, seeds = sm.params.cfg, list(sm.params.seeds)
    files = {kind: list(sm.input[kind]) for kind in paper.claim_reads}
    manifest = read_json(sm.input.manifest) if "manifest" in sm.input.keys() else None
    claims = paper.claims(paper.experiments(cfg), cfg)
    errors = claim_figure_errors(paper, claims)
    if errors:
        raise DeclarationError(f"paper {paper.name!r}: " + "; ".join(errors))
    rows = judge(claims, paper.load_results(files), cfg,
                 sm.params.stats, sm.params.settings, seeds, bool(manifest and manifest.get("subset", False)),
                 sm.params.scale)
    records = [read_json(p) for p in files["metrics"]]
    prov = record(sm.rule, _source(paper.claims), cfg, [r["device"] for r in records])
    prov.update(runs=runs_computed_by(records), analysis_code=code_hash(paper.claims.__module__))
    write_scorecard(sm.output[0], paper.name, paper.title, sm.params.scale, manifest, seeds, rows, prov,
                    paper.arxiv)


def code_modules(paper: Paper) -> list[str]:
    """The modules whose code computes a paper's results: its stages' run modules, its claims' and
    its figures' (each with the replikit modules it imports: provenance.code_hash)."""
    return sorted({s.run.__module__ for s in paper.stages} | {paper.claims.__module__}
                  | {f.func.__module__ for f in paper.figures})


def code_hashes(papers: Iterable[Paper]) -> dict[str, str]:
    """Today's code hash of every module that computes the papers' results (module -> hash): the
    report flags a result whose record names another hash, and a change reruns figures and claims."""
    from ..provenance import code_hash

    return {m: code_hash(m) for paper in papers for m in code_modules(paper)}


def _source(func: Callable) -> str:
    """Where a figure or the claims are computed: module and function, for the provenance record."""
    return f"{func.__module__}.{func.__qualname__}"


# ---------------------------------------------------------------- the registry


class DeclarationError(ValueError):
    """A paper's declaration breaks a rule of the interface (each line names the field and the fix)."""


def _wildcards(pattern: str) -> set[str]:
    return {name.split(",")[0] for _, name, _, _ in string.Formatter().parse(pattern) if name}


def declaration_errors(paper: Paper, others: Mapping[str, str] | None = None,
                       configs: Path = CONFIGS) -> list[str]:
    """Every rule of the interface that `paper` breaks, as `field: problem; fix: ...` (none: []).
    `others`: the other papers registered alongside (name -> rule prefix); `configs`: the folder of
    the papers' config files."""
    errors: list[str] = []

    def bad(where: str, problem: str, fix: str) -> None:
        errors.append(f"{where}: {problem}; fix: {fix}")

    config_file = configs / f"{paper.name}.yaml"
    if not re.fullmatch(r"[a-z][a-z0-9]*", paper.prefix):
        bad("prefix", f"{paper.prefix!r} is not lowercase letters and digits (rules are named "
            "<prefix>_<stage>, and the SLURM time-limit hint finds a rule's paper by the text before the "
            "first '_')", "declare a prefix such as prefix='ab' in Paper(...)")
    clash = sorted(n for n, p in (others or {}).items() if p == paper.prefix and n != paper.name)
    if clash:
        bad("prefix", f"{paper.prefix!r} is also the prefix of {', '.join(clash)} (rule names would clash)",
            "declare a prefix no other paper uses")

    if "metrics" not in paper.run_files:
        bad("run_files", f"no kind named 'metrics' (it has: {', '.join(paper.run_files) or 'none'})",
            "name the per-run JSON of results 'metrics': the claims read it and every figure and "
            "scorecard records the 'device' key of each metrics file")
    made = {p for s in paper.stages for p in s.outputs.values()}
    for kind, pattern in paper.run_files.items():
        if _wildcards(pattern) != {"run", "seed"}:
            bad(f"run_files[{kind!r}]", f"{pattern!r} has wildcards {sorted(_wildcards(pattern))}",
                "use exactly {run} and {seed}")
        if pattern not in made:
            bad(f"run_files[{kind!r}]", f"no stage writes {pattern!r}", "make it an output of a stage")
    figures = [f.name for f in paper.figures]
    if len(set(figures)) != len(figures):
        bad("figures", f"names repeat: {figures}", "give each figure its own name")
    for fig in paper.figures:
        if fig.reads not in paper.run_files:
            bad(f"figures[{fig.name!r}].reads", f"{fig.reads!r} is not a kind of run_files",
                f"use one of {', '.join(paper.run_files)}")
    for kind, figure in paper.claim_reads.items():
        if kind not in paper.run_files:
            bad("claim_reads", f"{kind!r} is not a kind of run_files",
                f"use one of {', '.join(paper.run_files)}")
        if figure is not None and figure not in figures:
            bad("claim_reads", f"{figure!r} is not a figure of the paper", "name a declared figure, or None")

    stages = [s.name for s in paper.stages]
    if not stages or len(set(stages)) != len(stages) or {"figure", "claims"} & set(stages):
        bad("stages", f"names {stages}", "declare at least one stage, each with its own name, none "
            "named 'figure' or 'claims' (rules <prefix>_figure and <prefix>_claims exist already)")
    module = sys.modules.get(f"{__package__}.{paper.name}")  # imported with the paper's SPEC, if at all
    if module is not None and getattr(module, "RUNS", None) is not paper.runs:
        bad("runs", f"is not {module.__name__}.RUNS, whose stages a stage job runs (it imports only that "
            "module)", f"declare RUNS = Runs(...) in {module.__name__} and SPEC = Paper(RUNS, ...)")
    spec = paper.run_spec
    if not (isinstance(spec, type) and issubclass(spec, Run) and dataclasses.is_dataclass(spec)
            and (hasattr(spec, "kind") or spec._kind_is_field())):
        bad("runs.spec", f"{spec!r} is not a dataclass subclassing Run with a kind",
            "declare @dataclass(frozen=True) class MyRun(Run) with kind: ClassVar[str] = '...' (or a "
            "first field kind)")
    for stage in paper.stages:
        found = [_wildcards(p) for p in stage.outputs.values()]
        used = set().union(*found) if found else set()
        where = f"stages[{stage.name!r}]"
        if not found:
            bad(f"{where}.outputs", "no outputs", "declare what the stage writes")
        if used - set(STAGE_WILDCARDS):
            bad(f"{where}.outputs", f"unknown wildcard(s) {sorted(used - set(STAGE_WILDCARDS))} (the "
                f"stage's log path names only {', '.join(STAGE_WILDCARDS)})",
                f"use only {{{'}, {'.join(STAGE_WILDCARDS)}}}")
        if any(f != found[0] for f in found):
            bad(f"{where}.outputs", "the outputs have different wildcards", "give every output the same ones")
        free = sorted(used - {"run", "seed"} - set(stage.wildcards))
        if free:
            bad(f"{where}.wildcards", f"no constraint for wildcard(s) {free}",
                "give each a regex in Stage(wildcards={...}) ({run} takes the paper's run_pattern, "
                "{seed} the workflow's)")
        if set(stage.wildcards) - used:
            bad(f"{where}.wildcards", f"constrains {sorted(set(stage.wildcards) - used)}, which no output "
                "uses", "drop those constraints")
        if stage.scratch and not _wildcards(stage.scratch) <= used:
            bad(f"{where}.scratch", f"{stage.scratch!r} has wildcards the outputs lack",
                "use only the outputs' wildcards")
        if stage.directory and len(stage.outputs) != 1:
            bad(f"{where}.directory", "a directory stage has more than one output", "declare one output")

    ref = "resources: {$ref: \"#/definitions/resources\", default: {}}"
    if not config_file.exists():
        bad("name", f"{config_file} does not exist (the papers are the files in {configs})",
            f"write it: a smoke, default and paper block of settings, and schema: with type: object, the "
            f"block's keys under properties, among them {ref}")
    else:
        from ..config import SCHEMA_KEY, ConfigError, paper_file

        try:
            props = paper_file(config_file)[SCHEMA_KEY].get("properties") or {}
        except ConfigError as e:
            bad("schema", str(e), f"add `{SCHEMA_KEY}:` to {config_file}")
        else:
            if (props.get("resources") or {}).get("$ref") != "#/definitions/resources":
                bad("schema", f"{config_file} `{SCHEMA_KEY}:` does not declare the paper's resources (its "
                    "stages' runtime, mem_mb and gpu come from the block's 'resources')",
                    f"add under its properties: {ref}")
    return errors


def claim_figure_errors(paper: Paper, claims: list) -> list[str]:
    """Every claim that names no figure, or a figure the paper does not declare (the report links each
    claim to the figures that draw its evidence, and each figure to its claims)."""
    names = [f.name for f in paper.figures]
    errors = []
    for c in claims:
        if not c.figures:
            errors.append(f"claim {c.id} names no figure; fix: Claim(..., figures=(...)) with the figures "
                          f"that draw its evidence, of {', '.join(names)}")
        for f in set(c.figures) - set(names):
            errors.append(f"claim {c.id} names figure {f!r}, which the paper does not declare; fix: use one "
                          f"of {', '.join(names)}")
    return errors


def check(paper: Paper, others: Mapping[str, str] | None = None, configs: Path = CONFIGS) -> Paper:
    """`paper`, or DeclarationError naming the paper, each broken rule's field and its fix."""
    errors = declaration_errors(paper, others, configs)
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
        from .. import datasets

        for ds in spec.datasets:
            try:
                datasets.register(ds)
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


def config_errors(config: dict, papers: list[str] | None = None) -> list[str]:
    """Constraints between keys that a schema cannot express: each enabled paper's `config_errors`
    (replikit.config.validate_config's `constraints`); `papers`: check these instead of the enabled."""
    names = config.get("papers", []) if papers is None else papers
    return [e for name in names if name in paper_names() and isinstance(config.get(name), dict)
            for e in get(name).config_errors(config[name])]
