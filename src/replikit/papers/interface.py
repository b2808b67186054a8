"""The contract every replicated paper implements: its runs (`Run`, `Runs`, `Stage`, `Job`), its figures
(`Figure`) and its declaration (`Paper`), with every rule a declaration must follow
(`declaration_errors`). The registry that finds papers is `registry`; the Snakemake glue and the
three generic jobs are `glue`.

A paper is two files, and declares itself in two plain objects:

- its config file `config/papers/<name>.yaml`: one block of settings per scale and the `schema:` of
  its block (these files are the list of papers);
- its module `replikit/papers/<name>.py`: its runs (a dataclass subclassing `Run`), what one job
  computes, and `RUNS = Runs(...)` (the run side: runs, per-run files, stages); then its figures and
  claims and `SPEC = Paper(RUNS, ...)`. Every paper here moves its figures, claims and `SPEC` into
  `<name>_analysis.py`, so that its training jobs import no analysis code (one shape for all).

Nothing else is looked up by name. The registry imports a paper only when asked for it
(`registry.get`) and checks its declaration then (`declaration_errors`: every rule a paper must
follow, with the fix).
`workflow/rules/papers.smk` generates each enabled paper's rules from its SPEC, and three generic
scripts run them:

- `<prefix>_<stage>` per `Stage`: training (one job per run and seed) and any extra stage (data
  generation, layer probes, benchmarks), with the paper's `resources`;
- `<prefix>_figure`: one job per `Figure`, which aggregates the runs the figure needs;
- `<prefix>_claims`: the scorecard (`results/<name>/claims.json`).

A job finds its paper without a lookup table: a stage job from its log path
(`logs/<name>/<stage>/...`, `registry.stage_of_job`), which imports only `<name>.py` and reads its
RUNS; figure and claims jobs from their `paper` param (`registry.get`). No job imports another paper.

A run's job reruns only when its run-defining config (`Stage.config`) changes.
"""

from __future__ import annotations

import dataclasses
import functools
import numbers
import re
import string
import sys
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from replikit.papers import CONFIGS

if TYPE_CHECKING:  # pandas only in figure and claims jobs (they load it with the paper's analysis module)
    import pandas as pd

    from replikit.data.datasets import Dataset
    from replikit.scoring.claims import Claim
    from replikit.scoring.fidelity import Departure

Wildcards = Any  # snakemake.io.Wildcards: attribute access by wildcard name
# The wildcards a stage's outputs may use: Stage.log names exactly these in its log path.


STAGE_WILDCARDS = ("run", "task", "seed")


def prepared_files(key: str) -> dict[str, str]:
    """Rule prepare_dataset's outputs under resources/data/<key>/: canonical tensors and their manifest."""
    return {"tensors": f"resources/data/{key}/tensors.pt", "manifest": f"resources/data/{key}/manifest.json"}


def dataset_files(name: str) -> dict[str, str]:
    """The prepared dataset `name`: its `prepared_files` under its key (`replikit.data.freshness.
    prepared_key`: its name, or for a user's own file, the name and the file's md5)."""
    from replikit.data.freshness import prepared_key

    return prepared_files(prepared_key(name))


_VALUE = r"[A-Za-z0-9.+-][A-Za-z0-9.+_-]*"  # one value in a run name (no '/': names are folder names)
OMITTED_AT_DEFAULT = {"omitted_at_default": True}  # field metadata: see Run


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
    so one run has one name. A field declared with `OMITTED_AT_DEFAULT` (e.g. `dataset: str | None =
    field(default=None, metadata=OMITTED_AT_DEFAULT)`) is left out of the name at its default, so adding
    it renames no existing run."""

    kind: ClassVar[str]

    @classmethod
    def _omissible(cls) -> dict[str, Any]:
        """Fields left out of the name at their default: name -> default."""
        return {f.name: f.default for f in dataclasses.fields(cls) if f.metadata.get("omitted_at_default")}

    @classmethod
    def _value(cls) -> str:
        """One value's regex: with omissible fields, a value never runs into their `_<key>-`."""
        omissible = cls._omissible()
        if not omissible:
            return _VALUE
        keys = "|".join(re.escape(k) for k in omissible)
        return rf"[A-Za-z0-9.+-](?:(?!_(?:{keys})-)[A-Za-z0-9.+_-])*"

    @classmethod
    def _segments(cls, group: bool) -> str:
        """The `_<key>-<value>` segments' regex, optional for omissible fields."""
        value, omissible = cls._value(), cls._omissible()
        value = f"({value})" if group else value
        return "".join(f"(?:_{re.escape(k)}-{value})?" if k in omissible else f"_{re.escape(k)}-{value}"
                       for k in cls.keys())

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
        keys, hints, omissible = self.keys(), _hints(type(self)), self._omissible()
        return "_".join([self.kind, *(f"{k}-{_text(getattr(self, k), hints[k], k, keys)}" for k in keys
                                      if k not in omissible or getattr(self, k) != omissible[k])])

    @classmethod
    def pattern(cls) -> str:
        """The regex of the names of this kind of run (no groups: a Snakemake wildcard constraint)."""
        kind = r"[a-z][a-z0-9]*" if cls._kind_is_field() else re.escape(cls.kind)
        return kind + cls._segments(group=False)

    @classmethod
    def parse(cls, name: str) -> Run:
        """The run named `name` (ValueError: not such a name, or not the canonical one)."""
        keys, omissible = cls.keys(), cls._omissible()
        kind = r"[a-z][a-z0-9]*" if cls._kind_is_field() else re.escape(cls.kind)
        m = re.fullmatch(f"({kind})" + cls._segments(group=True), name)
        example = "_".join(["<kind>" if cls._kind_is_field() else cls.kind, *(f"{k}-<{k}>" for k in keys)])
        if not m:
            raise ValueError(f"not a {cls.__qualname__} run name ({example}): {name!r}")
        hints = _hints(cls)
        values = {k: omissible[k] if m.group(i + 2) is None else _read(m.group(i + 2), hints[k], name, k)
                  for i, k in enumerate(keys)}
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
        from replikit.core.device import describe
        from replikit.core.io import write_json
        from replikit.reporting.provenance import computed_by

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
    empty_ok: bool = False  # func draws a "not run at this scale" panel when the config gives it no runs

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
    # Fidelity (replikit.scoring.fidelity): where config/paper.yaml itself departs from the paper (every row a
    # proxy), settings never checked against the paper text, and settings no claim statistic reads.
    # None: not declared yet, and every claim reads `unverified` until they are; () declares that the
    # paper block follows the paper in every setting.
    departures: tuple[Departure, ...] | None = None
    unverified: tuple[str, ...] = ()
    figure_only: tuple[str, ...] = ()
    # datasets of the paper's own, beyond the built-in CIFAR-10 and MNIST (replikit.data.datasets): registered
    # when the paper is loaded, prepared by rule prepare_dataset like the built-in ones.
    datasets: tuple[Dataset, ...] = ()
    # the text files its claims quote, relative to the workflow's root (replikit.scoring.quotes; the claims
    # job checks every quote against them); () means sources/<name>.txt
    sources: tuple[str, ...] = ()
    # the cost model of one training job (config block, run name) -> replikit.methods.step_cost.JobPlan,
    # for the plan of the paper scale (python -m replikit.plan; the report's cost section); None: not planned
    cost: Callable[[dict, str], Any] | None = None
    # (key, value): an edit of the paper's config block that changes which runs exist or how they are
    # judged, but not the config of any run that exists both before and after (so Snakemake retrains
    # nothing); a dict value is merged into the key's block. tests/test_interface.py makes the edit.
    retrain_free_edit: tuple[str, Any] | None = None
    # the config block as its deviations from the paper's name it (a setting whose meaning the dataset
    # changes, e.g. a stream named by its dataset); None: each key as configured
    shown_settings: Callable[[dict], dict] | None = None

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

    def source_files(self) -> list[Path]:
        """The text files the paper's claims quote (`sources`, default sources/<name>.txt)."""
        return [CONFIGS.parents[1] / s for s in self.sources or (f"sources/{self.name}.txt",)]

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

    def targets(self, results: str | None = None) -> list[str]:
        """The figures, the scorecard and the benchmark records: what `rule all` asks for; `results`:
        the folder of the figures and scorecard (glue.results_dir: another for another dataset)."""
        results = results or self.results
        bench = [p for s in self.stages if s.benchmark for p in s.outputs.values()]
        return [f"{results}/figures/{f.name}.png" for f in self.figures] + [f"{results}/claims.json"] + bench


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
        from replikit.core.config import SCHEMA_KEY, ConfigError, paper_file

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
