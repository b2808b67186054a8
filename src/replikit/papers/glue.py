"""The Snakemake glue of the papers: what workflow/rules/papers.smk calls to generate each paper's rules
(inputs, params, resources, wildcard constraints), and the three generic jobs its scripts run: a
stage (`run_stage`), a figure (`draw_figure`) and the claims scorecard (`score_claims`)."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from replikit.data.datasets import data_label, subset_title
from replikit.papers.interface import DeclarationError, Job, Paper, Stage, Wildcards, claim_figure_errors
from replikit.papers.registry import get, paper_of_job, stage_of_job


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


def run_stage(sm: Any, device: Any) -> None:
    """A stage job (workflow/scripts/paper_stage.py): run it, then drop its checkpoint or work dir.
    Imports only the paper's run module (no analysis, pandas or plotting)."""
    stage = stage_of_job(sm.log[0])
    job = Job.from_snakemake(sm, device, stage.run.__module__)
    # config key run_store: copy what another output tree ran with the same definition (never a
    # throughput record: a benchmark measures the machine and moment it ran on)
    store = None if stage.benchmark else (sm.config or {}).get("run_store")
    if store:
        from replikit.core import run_store
        from replikit.reporting.provenance import code_hash

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


def score_claims(sm: Any) -> None:
    """A claims job (workflow/scripts/paper_claims.py): judge every claim, write the scorecard."""
    from replikit.core.io import read_json
    from replikit.reporting.provenance import code_hash, record, runs_computed_by, uncommitted_code
    from replikit.scoring.claims import judge, write_scorecard
    from replikit.scoring.quotes import check_quotes

    paper = get(sm.params.paper)
    cfg, seeds = sm.params.cfg, list(sm.params.seeds)
    files = {kind: list(sm.input[kind]) for kind in paper.claim_reads}
    manifest = read_json(sm.input.manifest) if "manifest" in sm.input.keys() else None
    claims = paper.claims(paper.experiments(cfg), cfg)
    errors = claim_figure_errors(paper, claims)
    if errors:
        raise DeclarationError(f"paper {paper.name!r}: " + "; ".join(errors))
    check_quotes(claims, paper.source_files(), paper.name)  # a misquote publishes nothing
    rows = judge(claims, paper.load_results(files), cfg,
                 sm.params.stats, sm.params.settings, seeds, data_label(manifest), sm.params.scale)
    records = [read_json(p) for p in files["metrics"]]
    prov = record(sm.rule, _source(paper.claims), cfg, [r["device"] for r in records])
    prov.update(runs=runs_computed_by(records), analysis_code=code_hash(paper.claims.__module__),
                analysis_uncommitted=uncommitted_code(paper.claims.__module__))
    write_scorecard(sm.output[0], paper.name, paper.title, sm.params.scale, manifest, seeds, rows, prov,
                    paper.arxiv)


def _source(func: Callable) -> str:
    """Where a figure or the claims are computed: module and function, for the provenance record."""
    return f"{func.__module__}.{func.__qualname__}"
