"""The Snakemake glue of the papers: what workflow/rules/papers.smk calls to generate each paper's rules
(inputs, params, resources, wildcard constraints), and the three generic jobs its scripts run: a
stage (`run_stage`), a figure (`draw_figure`) and the claims scorecard (`score_claims`)."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from replikit.core.config import ON_DATASET
from replikit.data.datasets import data_label, subset_title
from replikit.papers.interface import DeclarationError, Job, Paper, Stage, Wildcards, claim_figure_errors
from replikit.papers.registry import get, paper_of_job, register_config_datasets, stage_of_job


def stage_inputs(stage: Stage, cfg: dict) -> Callable[[Wildcards], dict]:
    return lambda w: stage.inputs(cfg, w) if stage.inputs else {}


def stage_params(stage: Stage, cfg: dict) -> dict[str, Callable[[Wildcards], Any]]:
    """`cfg` (the run-defining config) and, where the stage has one, `scratch`: the only params, so
    a job reruns when what defines it changes, not when the wiring does."""
    params = {"cfg": lambda w: stage.config(cfg, w) if stage.config else {}}
    if stage.scratch:
        params["scratch"] = lambda w: stage.scratch.format(**dict(w.items()))
    return params


def stage_resources(paper: Paper, stage: Stage, cfg: dict, n_seeds: int = 1) -> dict[str, int]:
    """The job's memory and runtime (times `n_seeds`, the seeds one batched job runs in turn)."""
    res = cfg["resources"]
    out = {"mem_mb": stage.mem_mb or res["mem_mb"], "runtime": (stage.runtime or res["runtime"]) * n_seeds}
    if not stage.gpu:
        return out
    return {**out, "gpu": res["gpu"], **({"gpu_mem_mb": res["gpu_mem_mb"]} if "gpu_mem_mb" in res else {})}


def wildcard_constraints_of(paper: Paper, stage: Stage) -> dict[str, str]:
    return {"run": paper.run_pattern, **stage.wildcards}


# ---------------------------------------------------------------- seeds batched into one job

SEED = "{seed}"


@dataclass(frozen=True)
class StageRule:
    """One generated rule of a stage (papers.smk): the stage's own, one job per seed; or, with config
    key `batch_seeds`, one job per run that runs the paper's seeds in turn (`seeds`), plus one such
    rule per set of fresh or earlier seeds (`<prefix>_<stage>_seeds<first>`), whose job per run runs
    that set in turn and logs as `seeds<a>-<b>-...`."""

    name: str
    stage: Stage
    seeds: tuple[int, ...] | None  # the seeds one job runs; None: one job per seed ({seed})
    label: str = "seeds"  # a batched job's log name, in place of `seed{seed}`

    def outputs(self) -> dict[str, str | list[str]]:
        if self.seeds is None:
            return dict(self.stage.outputs)
        return {k: [v.replace(SEED, str(s)) for s in self.seeds] for k, v in self.stage.outputs.items()}

    def log(self, paper: str) -> str:
        """The stage's log path, with the batched job's `label` for the seed."""
        path = self.stage.log(paper)
        return path if self.seeds is None else path.replace(f"seed{SEED}", self.label)

    def inputs(self, cfg: dict) -> Callable[[Wildcards], dict]:
        each = stage_inputs(self.stage, cfg)
        if self.seeds is None:
            return each
        return lambda w: merged_inputs([each(with_seed(w, s)) for s in self.seeds])

    def params(self, cfg: dict) -> dict[str, Callable[[Wildcards], Any]]:
        if self.seeds is None:
            return stage_params(self.stage, cfg)
        params = {"cfg": stage_params(self.stage, cfg)["cfg"], "seeds": list(self.seeds)}
        if self.stage.scratch:
            pattern = self.stage.scratch
            params["scratch"] = lambda w: [pattern.format(**vars(with_seed(w, s))) for s in self.seeds]
        return params

    def constraints(self, paper: Paper) -> dict[str, str]:
        return wildcard_constraints_of(paper, self.stage)


def batch_seeds(config: dict, paper: str) -> bool:
    """Config key `batch_seeds` (true, or a list of papers): one job per run for all of `paper`'s seeds
    (saves a process start and the imports per seed, most of a small job's time; a failing seed fails
    the whole job)."""
    value = config.get("batch_seeds")
    return paper in value if isinstance(value, list) else bool(value)


def stage_rules(paper: Paper, stage: Stage, config: dict, seeds: list[int],
                extra: list[list[int]]) -> list[StageRule]:
    """The rules of one stage: its own, one job per seed; or, with `batch_seeds` and a stage whose
    outputs have a seed, one job per run for `seeds`, plus one job per run for each `extra` seed set
    (fresh and earlier seeds, less those an earlier set or `seeds` already runs)."""
    name = f"{paper.prefix}_{stage.name}"
    if not batch_seeds(config, paper.name) or not all(SEED in v for v in stage.outputs.values()):
        return [StageRule(name, stage, None)]
    rules, taken = [StageRule(name, stage, tuple(seeds))], set(seeds)
    for block in extra:
        rest = tuple(sorted(set(block) - taken))
        if rest:
            label = "seeds" + "-".join(str(s) for s in rest)
            rules.append(StageRule(f"{name}_seeds{rest[0]}", stage, rest, label))
            taken |= set(rest)
    return rules


def extra_seeds(fresh: list[dict], earlier: dict | None) -> list[list[int]]:
    """The fresh and earlier seed sets, in order, which the paper's own batched job does not run."""
    return [list(block["seeds"]) for block in [*fresh, earlier] if block]


def with_seed(w: Wildcards, seed: int) -> SimpleNamespace:
    """Wildcards `w` with `seed` added, as a stage's functions read them (by attribute)."""
    return SimpleNamespace(**dict(w.items()), seed=str(seed))


def merged_inputs(per_seed: list[dict[str, Any]]) -> dict[str, list[str]]:
    """The inputs of several seeds' jobs in one: name -> every seed's path(s), each once, in order."""
    out: dict[str, list[str]] = {}
    for inputs in per_seed:
        for k, v in inputs.items():
            for path in [v] if isinstance(v, str) else list(v):
                if path not in out.setdefault(k, []):
                    out[k].append(path)
    return out


def run_stage(sm: Any, device: Any) -> None:
    """A stage job (workflow/scripts/paper_stage.py): run it, then drop its checkpoint or work dir.
    Imports only the paper's run module (no analysis, pandas or plotting)."""
    register_config_datasets(getattr(sm, "config", None) or {})
    stage = stage_of_job(sm.log[0])
    seeds = sm.params.get("seeds")
    if seeds is None:
        return run_one(sm, stage, Job.from_snakemake(sm, device, stage.run.__module__))
    for job in seed_jobs(sm, stage, device, seeds):
        print(f"[replikit] seed {job.wildcards['seed']} of {seeds}", flush=True)
        run_one(sm, stage, job)


def seed_jobs(sm: Any, stage: Stage, device: Any, seeds: list[int]) -> list[Job]:
    """The per-seed jobs of a batched stage job (`StageRule`): each seed's own wildcards, inputs,
    outputs and scratch, as its own job would have them."""
    cfg = sm.config[paper_of_job(sm.log[0])]
    listed = {k: [v] if isinstance(v, str) else list(v) for k, v in sm.output.items()}
    scratch = sm.params.get("scratch") or [None] * len(seeds)
    jobs = []
    for i, seed in enumerate(seeds):
        w = with_seed(sm.wildcards, seed)
        inputs = stage.inputs(cfg, w) if stage.inputs else {}
        jobs.append(Job(vars(w), dict(inputs), {k: v[i] for k, v in listed.items()}, sm.params.cfg,
                        scratch[i], device, stage.run.__module__, sm.rule))
    return jobs


def run_one(sm: Any, stage: Stage, job: Job) -> None:
    """One seed's job of a stage: its outputs copied from the run store where stored, else run."""
    # config key run_store: copy what another output tree ran with the same definition (never a
    # throughput record: a benchmark measures the machine and moment it ran on)
    store = None if stage.benchmark else (sm.config or {}).get("run_store")
    if store:
        from replikit.core import run_store
        from replikit.reporting.provenance import code_hash

        entry = run_store.key(paper_of_job(sm.log[0]), stage.name, job.wildcards, job.cfg, job.device.type,
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
    register_config_datasets(getattr(sm, "config", None) or {})
    from replikit.core.io import read_json
    from replikit.reporting import plotting
    from replikit.reporting.provenance import code_hash, runs_computed_by, write_figure_record

    paper = get(sm.params.paper)
    fig, cfg, runs = paper.figure(sm.wildcards.figure), sm.params.cfg, list(sm.input.runs)
    manifest = read_json(sm.input.manifest) if "manifest" in sm.input.keys() else None
    seeds = {m.group(1) for r in runs if (m := re.search(r"seed(\d+)", r))}
    plotting.set_drawn(seeds=len(seeds) or None, images=images_used(cfg), data=data_label(manifest))
    table = fig.draw(paper.load_results({fig.reads: runs}), paper.experiments(cfg)[fig.name],
                     Path(sm.output.figure), sm.params.scale, bool(subset_title(manifest)), cfg)
    table.to_csv(sm.output.table, index=False)
    records = [read_json(p) for p in runs]
    write_figure_record(sm.output.provenance, sm.rule, _source(fig.func), cfg,
                        [r["device"] for r in records], fig.caption, sm.params.scale, subset_title(manifest),
                        runs,
                        paper.name, runs_computed_by(records), code_hash(fig.func.__module__),
                        fig.func.__module__)


# The claims job's inputs of the fresh seeds (config key <paper>.fresh_seeds): fresh_<kind> for each
# kind of per-run file the claims read (claim_inputs; fresh_inputs checks them).
FRESH = "fresh_"


def own_dataset(paper: str, scale: str) -> str | None:
    """The dataset paper `paper` reads by its own block at `scale` (config/papers/<paper>.yaml, no
    user's keys over it): the data its seed sets (fresh, earlier, seen) and its registrations were
    declared on. None for a paper that reads none."""
    from replikit.core.config import scale_block
    from replikit.papers import CONFIGS

    try:
        return get(paper).dataset(scale_block(CONFIGS / f"{paper}.yaml", scale), None)
    except KeyError:  # a block that leaves the key to the schema's default
        return None


def on_own_data(config: dict, paper: str) -> bool:
    """Whether `paper` reads at this config the data its own block names at its scale; on another
    dataset no seed of its seed sets has been seen and no claim is registered (issue 86)."""
    return get(paper).dataset(config[paper], None) == own_dataset(paper, config.get("scale", "default"))


def results_dir(config: dict, paper: Paper) -> str:
    """Where `paper`'s figures, tables and scorecard go at this config: results/<paper> on the data its
    own block names (`on_own_data`), results/<paper>/on-<dataset> on another, so that a run on another
    dataset never replaces the scorecard or figures of the paper's own data (its runs' names carry the
    dataset already). A ladder rung keeps results/<paper>: its tree is its own, and a rung that walks to
    the paper's dataset (continual learning's split_cifar10) is the paper's setting, not another's."""
    if paper.name not in config or config.get("ladder_rung") or on_own_data(config, paper.name):
        return paper.results
    return f"{paper.results}/{ON_DATASET}{paper.dataset(config[paper.name], None)}"


def fresh_seeds(config: dict, paper: str) -> list[dict]:
    """Config key <paper>.fresh_seeds as a list of seed sets, each {"seeds": [...], "claims": [...]}:
    claims whose margin, statistic or settings were fixed after the paper's seeds (and, for a later
    set, an earlier set's) had been seen, judged again on seeds never seen before (their rows'
    headline). The key holds one set or a list. [] where the block has none, in a ladder rung, which
    runs the seeds its ladder declares, not its base block's fresh ones, and on another dataset than
    the block's own (`on_own_data`), where no seed was seen."""
    if config.get("ladder_rung") or not on_own_data(config, paper):
        return []
    return as_sets((config.get(paper) or {}).get("fresh_seeds"))


def as_sets(fresh: dict | list | None) -> list[dict]:
    """Config key fresh_seeds (one seed set, a list of them, or none) as a list of seed sets."""
    return [fresh] if isinstance(fresh, dict) else list(fresh or [])


def fresh_claims(fresh: list[dict]) -> list[str]:
    """Every claim that one of the fresh seed sets `fresh` lists."""
    return [c for block in fresh for c in block["claims"]]


def fresh_seeds_errors(paper: Paper, config: dict) -> list[str]:
    """What is wrong with config key <paper>.fresh_seeds (the workflow stops on it before any job): each
    set's seeds must be none of the paper's seeds (those were seen), its claims the paper's own, its
    `runs_with` part of some run's name, and a claim is in one set only."""
    fresh = fresh_seeds(config, paper.name)
    errors = [e for block in fresh for e in seed_set_errors(
        paper, config, "fresh_seeds", block, "are among the paper's seeds, which were seen; fix: fresh seeds "
        "that no run of this paper has used")]
    claims = fresh_claims(fresh)
    twice = sorted({c for c in claims if claims.count(c) > 1})
    if twice:
        errors.append(f"config key '{paper.name}.fresh_seeds': {', '.join(twice)} in more than one seed set, "
                      "and a row has one headline; fix: list each claim in one set")
    cfg = config[paper.name]
    errors += [f"config key '{paper.name}.fresh_seeds.runs_with': {block['runs_with']!r} is in no run's "
               "name; fix: part of the names of the runs the claims read (runs: "
               f"{', '.join(paper.runs_of(cfg))})"
               for block in fresh if block.get("runs_with") and not earlier_runs(paper, cfg, block)]
    seeds = [s for block in fresh for s in block["seeds"]]
    shared = sorted({s for s in seeds if seeds.count(s) > 1})
    if shared:
        errors.append(f"config key '{paper.name}.fresh_seeds': seeds {shared} in more than one seed set; a "
                      "later set exists because an earlier one had been seen; fix: seeds no set has used")
    return errors


def seed_set_errors(paper: Paper, config: dict, name: str, block: dict, shared: str) -> list[str]:
    """What both seed-set keys (`fresh_seeds`, `earlier_seeds`) check: none of the key's seeds is among
    the paper's own (`shared`: what the message says of those), and its claims are the paper's."""
    key, cfg, errors = f"{paper.name}.{name}", config[paper.name], []
    own = sorted(set(block["seeds"]) & set(paper.seeds(cfg, config["seeds"])))
    if own:
        errors.append(f"config key '{key}.seeds': seeds {own} {shared}")
    ids = [c.id for c in paper.claims(paper.experiments(cfg), cfg)]
    unknown = [c for c in block["claims"] if c not in ids]
    if unknown:
        errors.append(f"config key '{key}.claims': {', '.join(unknown)} not a claim of {paper.name}; fix: "
                      f"one of {', '.join(ids)}")
    return errors


def seen_seeds_errors(paper: Paper, config: dict) -> list[str]:
    """What is wrong with config key <paper>.seen_seeds (claims judged on seen seeds only at this
    scale): its claims must be the paper's own. One also in `fresh_seeds` takes its headline from the
    fresh seeds instead (score_claims)."""
    seen = (config.get(paper.name) or {}).get("seen_seeds")
    if not seen:
        return []
    key, cfg = f"{paper.name}.seen_seeds.claims", config[paper.name]
    ids = [c.id for c in paper.claims(paper.experiments(cfg), cfg)]
    unknown = [c for c in seen["claims"] if c not in ids]
    return [f"config key '{key}': {', '.join(unknown)} not a claim of {paper.name}; fix: one of "
            f"{', '.join(ids)}"] if unknown else []


# The claims job's inputs of the earlier seeds (config key <paper>.earlier_seeds): earlier_<kind>.
EARLIER = "earlier_"


def earlier_seeds(config: dict, paper: str) -> dict | None:
    """Config key <paper>.earlier_seeds, {"seeds": [...], "claims": [...], "runs_with": "..." or [...]}:
    claims whose rows were judged on other seeds before the paper's seeds changed (the settings of the
    runs they read did not). They are judged there again and shown beside the headline, which stays
    the paper's own seeds'; only the runs whose name contains `runs_with` (those the claims read) are
    trained at them. None where the block has none, in a ladder rung and on another dataset (as
    `fresh_seeds`)."""
    if config.get("ladder_rung") or not on_own_data(config, paper):
        return None
    return (config.get(paper) or {}).get("earlier_seeds") or None


def earlier_runs(paper: Paper, cfg: dict, earlier: dict, figure: str | None = None) -> list[str]:
    """The runs (of `figure`; None: of every figure) trained at a seed set's seeds (`earlier_seeds`, or a
    set of `fresh_seeds`): those whose name contains the set's `runs_with` (one string, or any of a
    list); every run where the set has none."""
    parts = earlier.get("runs_with") or [""]
    parts = [parts] if isinstance(parts, str) else parts
    return [r for r in paper.runs_of(cfg, figure) if any(p in r for p in parts)]


def earlier_seeds_errors(paper: Paper, config: dict) -> list[str]:
    """What is wrong with config key <paper>.earlier_seeds: its seeds must not be the paper's (those
    judge the headline), its claims must be the paper's own and not also in `fresh_seeds`, and
    `runs_with` must name some run."""
    earlier = earlier_seeds(config, paper.name)
    if not earlier:
        return []
    key, cfg = f"{paper.name}.earlier_seeds", config[paper.name]
    errors = seed_set_errors(paper, config, "earlier_seeds", earlier,
                             "are the paper's own, which judge the headline; fix: the seeds the rows were "
                             "judged on before the paper's seeds changed")
    both = sorted(set(earlier["claims"]) & set(fresh_claims(fresh_seeds(config, paper.name))))
    if both:
        errors.append(f"config key '{key}.claims': {', '.join(both)} also in '{paper.name}.fresh_seeds', "
                      "whose headline is another seed set; fix: list each claim under one of the two keys")
    if not earlier_runs(paper, cfg, earlier):
        errors.append(f"config key '{key}.runs_with': {earlier.get('runs_with')!r} is in no run's name; "
                      "fix: part of the names of the runs the claims read (runs: "
                      f"{', '.join(paper.runs_of(cfg))})")
    return errors


def claim_inputs(paper: Paper, cfg: dict, seeds: list[int], fresh: list[dict],
                 earlier: dict | None = None) -> dict[str, Any]:
    """The claims job's inputs: its per-run files at `seeds` and, with `fresh` (seed sets), the runs
    each set names (`runs_with`; absent: every run the claims read) at its seeds too (as fresh_<kind>);
    with `earlier`, the runs it names at the earlier seeds (as earlier_<kind>); so the training jobs run
    them."""
    files = paper.claim_inputs(cfg, seeds)
    for prefix, extra in ((FRESH, fresh), (EARLIER, earlier)):
        if extra and any(k.startswith(prefix) for k in files):
            raise DeclarationError(f"paper {paper.name!r}: a kind of claim_reads starts with {prefix!r}, "
                                   "which names the claims job's inputs of another seed set; fix: rename it")
    if fresh:
        files.update({FRESH + kind: list(dict.fromkeys(
            p for block in fresh for p in earlier_files(paper, cfg, block, kind, figure)))
            for kind, figure in paper.claim_reads.items()})
    if earlier:
        files.update({EARLIER + kind: earlier_files(paper, cfg, earlier, kind, figure)
                      for kind, figure in paper.claim_reads.items()})
    return files


def earlier_files(paper: Paper, cfg: dict, earlier: dict, kind: str, figure: str | None) -> list[str]:
    """The per-run files of kind `kind` of the runs `earlier_runs` names, at the seed set's seeds."""
    return [paper.run_file(kind, run, s) for run in earlier_runs(paper, cfg, earlier, figure)
            for s in earlier["seeds"]]


# Config keys that say which seeds judge a row: no setting, so no deviation from the paper's.
SEED_SET_KEYS = ("fresh_seeds", "earlier_seeds", "seen_seeds")


def judged_config(cfg: dict) -> dict:
    """The paper's config block as the claims read it: which seeds judge a row (`fresh_seeds`,
    `earlier_seeds`, `seen_seeds`) is no setting, so no deviation from the paper's."""
    return {k: v for k, v in cfg.items() if k not in SEED_SET_KEYS}


def score_claims(sm: Any) -> None:
    """A claims job (workflow/scripts/paper_claims.py): judge every claim, write the scorecard. With
    config key <paper>.fresh_seeds (param `fresh`: its seed sets), the claims each set lists are judged
    again on its seeds, and their rows' headline is that set's (replikit.scoring.seed_sets); with
    <paper>.seen_seeds, the claims it lists are marked as judged on seen seeds only."""
    register_config_datasets(getattr(sm, "config", None) or {})
    from replikit.core.io import read_json
    from replikit.reporting.provenance import code_hash, record, runs_computed_by, uncommitted_code
    from replikit.scoring.claims import MissingResult, judge, write_scorecard
    from replikit.scoring.quotes import check_quotes
    from replikit.scoring.registration import read_lock, registered
    from replikit.scoring.seed_sets import named, printed, seen_only, with_earlier_seeds, with_seed_sets

    paper = get(sm.params.paper)
    cfg, seeds = sm.params.cfg, list(sm.params.seeds)
    fresh = as_sets(getattr(sm.params, "fresh", None))  # a workflow parsed by older code passes one set
    earlier = getattr(sm.params, "earlier", None)
    files = {kind: list(sm.input[kind]) for kind in paper.claim_reads}
    manifest = read_json(sm.input.manifest) if "manifest" in sm.input.keys() else None
    claims = paper.claims(paper.experiments(cfg), cfg)
    errors = claim_figure_errors(paper, claims)
    if errors:
        raise DeclarationError(f"paper {paper.name!r}: " + "; ".join(errors))
    check_quotes(claims, paper.source_files(), paper.name)  # a misquote publishes nothing
    subset = data_label(manifest)  # what the data is when it is a subset file, else ""
    judged = judged_config(cfg)
    rows = named(judge(claims, paper.load_results(files), judged, sm.params.stats, sm.params.settings, seeds,
                       subset, sm.params.scale, shown=paper.shown_settings), seeds)
    config = getattr(sm, "config", None) or {}
    own = on_own_data(config, paper.name) if paper.name in config else True
    seen = cfg.get("seen_seeds") if own else None  # seen on the block's own data, not on another
    if seen:  # judged on seen seeds only at this scale: marked (before any seed set copies the row), and a
        # replication among them counted apart; a claim with fresh seeds takes its headline from them
        rows = seen_only(rows, [c for c in seen["claims"] if c not in fresh_claims(fresh)])
    records = [read_json(p) for p in files["metrics"]]
    for block in fresh:  # each set's claims judged again on its seeds: their rows' headline
        fresh_files = fresh_inputs(paper, cfg, block, dict(sm.input.items()))
        ids = fresh_claim_ids(paper, claims, block)
        try:
            fresh_rows = judge([c for c in claims if c.id in ids], paper.load_results(fresh_files), judged,
                               sm.params.stats, sm.params.settings, block["seeds"], subset, sm.params.scale,
                               shown=paper.shown_settings)
        except MissingResult as e:
            raise MissingResult(f"config key '{paper.name}.fresh_seeds.runs_with' leaves out a run that "
                                f"its claims read ({e}); fix: add a part of that run's name") from e
        rows = with_seed_sets(rows, fresh_rows, seeds, block["seeds"])
        records += [read_json(p) for p in fresh_files["metrics"]]
    if earlier:  # the listed claims judged again on their earlier seeds: shown beside, not counted
        earlier_input = {kind: [str(p) for p in sm.input[EARLIER + kind]] for kind in paper.claim_reads}
        listed = [c for c in claims if c.id in earlier["claims"]]
        try:
            earlier_rows = judge(listed, paper.load_results(earlier_input), judged, sm.params.stats,
                                 sm.params.settings, earlier["seeds"], subset, sm.params.scale,
                                 shown=paper.shown_settings)
        except MissingResult as e:
            raise MissingResult(f"config key '{paper.name}.earlier_seeds.runs_with' leaves out a run that "
                                f"its claims read ({e}); fix: add a part of that run's name") from e
        rows = with_earlier_seeds(rows, earlier_rows, seeds, earlier["seeds"])
        records += [read_json(p) for p in earlier_input["metrics"]]
    locks = Path(sm.input.registration).parent if "registration" in sm.input.keys() else None
    # none before the paper's first registration; none on another dataset than the block's own
    lock = read_lock(paper.name, locks) if locks and own else {}
    rows = registered(rows, fingerprints(paper, claims, cfg), lock, sm.params.scale)
    prov = record(sm.rule, _source(paper.claims), cfg, [r["device"] for r in records])
    prov.update(runs=runs_computed_by(records), analysis_code=code_hash(paper.claims.__module__),
                analysis_uncommitted=uncommitted_code(paper.claims.__module__),
                claims_job_code=code_hash(__name__))
    # the card names every seed set: `seeds` (the paper's own) and these (fresh_seeds: a list of sets)
    def card_set(block: dict) -> dict:
        return {"seeds": sorted(int(s) for s in block["seeds"]), "claims": list(block["claims"])}

    seed_sets = {"fresh_seeds": [card_set(b) for b in fresh]} if fresh else {}
    if earlier:
        seed_sets["earlier_seeds"] = card_set(earlier)
    write_scorecard(sm.output[0], paper.name, paper.title, sm.params.scale, manifest, seeds, rows, prov,
                    paper.arxiv, seed_sets)
    if seed_sets:
        print("\n".join(printed(rows)))


def fingerprints(paper: Paper, claims: list, cfg: dict) -> dict[str, dict]:
    """Claim id -> what the claim is now (replikit.scoring.registration.fingerprint), from the function
    that builds it (the analysis module's CLAIMS)."""
    import sys

    from replikit.scoring.registration import claim_functions, fingerprint

    functions = claim_functions(sys.modules[paper.claims.__module__], [c.id for c in claims])
    return {c.id: fingerprint(functions[c.id], c, cfg) for c in claims}


class FreshRunsMissing(DeclarationError):
    """A claim listed in config key <paper>.fresh_seeds lacks runs at the fresh seeds, or is not a
    claim of the paper: it is never judged on the seen seeds instead."""


def fresh_claim_ids(paper: Paper, claims: list, fresh: dict) -> list[str]:
    """The ids `fresh` (config key <paper>.fresh_seeds) lists, each a claim of the paper."""
    ids = [c.id for c in claims]
    unknown = [c for c in fresh["claims"] if c not in ids]
    if unknown:
        raise FreshRunsMissing(f"config key '{paper.name}.fresh_seeds.claims' names {', '.join(unknown)}, "
                               f"not a claim of {paper.name}; fix: one of {', '.join(ids)}")
    return list(fresh["claims"])


def fresh_inputs(paper: Paper, cfg: dict, fresh: dict, inputs: dict[str, Any]) -> dict[str, list[str]]:
    """The per-run files of the fresh seeds by kind, from the claims job's inputs (fresh_<kind>,
    `claim_inputs`). Every run the claims read must be there at every fresh seed, and exist: a claim
    listed in `fresh_seeds` is never judged on the seen seeds alone (FreshRunsMissing names the config
    key and the fix)."""
    key = f"{paper.name}.fresh_seeds"
    out, missing = {}, []
    for kind, figure in paper.claim_reads.items():
        given = inputs.get(FRESH + kind) or []
        given = [given] if isinstance(given, str) else [str(p) for p in given]
        out[kind] = earlier_files(paper, cfg, fresh, kind, figure)
        missing += [p for p in out[kind] if p not in given or not Path(p).is_file()]
    if missing:
        raise FreshRunsMissing(
            f"paper {paper.name!r}: config key '{key}' judges {', '.join(fresh['claims'])} on seeds "
            f"{', '.join(map(str, fresh['seeds']))}, but {len(missing)} of their run files are missing "
            f"(first: {missing[0]}); those rows are never judged on the seen seeds instead. Fix: let the "
            f"workflow train them (`snakemake {paper.results}/claims.json` asks for every one), or remove "
            f"the claims from '{key}'")
    return out


def _source(func: Callable) -> str:
    """Where a figure or the claims are computed: module and function, for the provenance record."""
    return f"{func.__module__}.{func.__qualname__}"
