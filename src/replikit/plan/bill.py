"""The plan of a run: every training job of a configuration, its steps, FLOPs, predicted wall time and
peak memory, summed per paper and overall, with the jobs that would not fit the GPU memory that
`profiles/gpu` requests for them, or an 80 GB GPU, flagged.

    python -m replikit.plan config/paper.yaml [MORE.yaml ...] [--accelerator H100] [--json OUT]

The config files merge as `snakemake --configfile` merges them: on top of config/config.yaml, later
files override earlier ones key by key. Each job's step is counted at its real shapes under
FakeTensorMode (`replikit.methods.step_cost`: FLOPs, peak live memory, dispatched ops) from the papers' own
builders (each paper's cost model, `Paper(cost=...)` in its own module, which says how it counts
steps); nothing is allocated.

Predicted time per step = max(compute, launches): compute = convolution FLOPs / TF32 peak + other
FLOPs / (bf16 peak under bf16 autocast, else fp32 peak), divided by the utilisation; launches = aten
ops x the per-op overhead of eager PyTorch. The peaks are the vendors' dense figures; the CPU's is
a matmul measured here. Utilisation and overhead are assumptions (options), not measurements.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from types import SimpleNamespace

import yaml

from replikit.core.config import ConfigError, read_yaml, validate_config
from replikit.methods.step_cost import (
    JobPlan,
    Piece,
    StepCost,
    cpu_matmul_flops,
    job_startup_seconds,
    measure_step,
    time_step,
)

ROOT = Path(__file__).resolve().parents[3]
SCHEMA = ROOT / "workflow/schemas/config.schema.yaml"
GPU_BYTES = 80e9  # "80 GB": an H100 / A100 80GB
# Dense peak FLOP/s: convolutions in TF32 (cuDNN's default), matrix products in fp32 (PyTorch's
# default: TF32 off for matmuls) or bf16 under autocast. V100 has neither TF32 nor bf16 tensor cores.
ACCELERATORS: dict[str, dict[str, float]] = {
    "H100": {"tf32": 494e12, "fp32": 67e12, "bf16": 989e12},  # SXM
    "A100": {"tf32": 156e12, "fp32": 19.5e12, "bf16": 312e12},  # SXM
    "V100": {"tf32": 15.7e12, "fp32": 15.7e12, "bf16": 15.7e12},  # SXM2
}
UTILISATION = 0.4  # fraction of the peak a large step reaches (assumed)
LAUNCH_S = 10e-6  # seconds of host overhead per dispatched op in eager PyTorch (assumed)


def with_cpu(cpu_flops: float) -> dict[str, dict[str, float]]:
    """The reference accelerators' peaks and this CPU's (its measured matmul FLOP/s for every kind)."""
    return {**ACCELERATORS, "CPU": {"tf32": cpu_flops, "fp32": cpu_flops, "bf16": cpu_flops}}


class PlanError(ValueError):
    """The configuration cannot be planned (no such file, no training job)."""


@dataclass
class Job:
    paper: str
    rule: str
    run: str
    seed: int
    steps: int
    flops: float
    ops_per_step: float
    peak_bytes: int
    hours: dict[str, float]  # accelerator -> predicted wall hours
    request_mb: int | None
    formula: str
    flags: list[str]
    # `plan(..., timed=True)`: this machine's CPU hours from timed real steps plus the job's start-up;
    # None when not timed, or when a step was too long to time (over `max_timed_step_s` modelled)
    cpu_timed_hours: float | None = None


# ---------------------------------------------------------------- config


def load(paths: list[str], overrides: dict | None = None) -> dict:
    """config/config.yaml, then each file key by key over it (as Snakemake merges), then `overrides`
    (as `--config` would: e.g. {"papers": [...]}), validated."""
    from snakemake.utils import update_config

    from replikit.papers.registry import config_errors

    config = read_yaml(ROOT / "config/config.yaml")
    for path in paths:
        if not Path(path).is_file():
            raise PlanError(f"no such config file: {path}")
        update_config(config, read_yaml(path))
    if overrides:
        update_config(config, overrides)
    return validate_config(config, SCHEMA, config_errors)


def gpu_requests(profile: str | Path) -> dict[str, object]:
    """Rule -> its `gpu_mem_mb` in the profile's set-resources (an int or an expression string)."""
    path = Path(profile) / "config.yaml" if Path(profile).is_dir() else Path(profile)
    if not path.is_file():
        raise PlanError(f"no such profile: {profile}")
    resources = (yaml.safe_load(path.read_text()) or {}).get("set-resources") or {}
    return {rule: res["gpu_mem_mb"] for rule, res in resources.items() if "gpu_mem_mb" in res}


def request_of(requests: dict[str, object], rule: str, run: str, seed: int) -> int | None:
    """The MB a job asks for: the rule's value, an expression evaluated with Snakemake's `wildcards`."""
    value = requests.get(rule)
    if isinstance(value, str):
        value = eval(value, {}, {"wildcards": SimpleNamespace(run=run, seed=str(seed))})  # noqa: S307
    return None if value is None else int(value)


# ---------------------------------------------------------------- the plan


def step_seconds(cost: StepCost, bf16: bool, peaks: dict[str, float], utilisation: float,
                 launch_s: float) -> float:
    """Predicted seconds of one step: the longer of its compute and its op launches."""
    compute = cost.conv_flops / peaks["tf32"] + cost.matmul_flops / peaks["bf16" if bf16 else "fp32"]
    return max(compute / utilisation, cost.ops * launch_s)


def _counted(jp: JobPlan, costs: dict[tuple, StepCost], log,
             cpu: bool = False) -> list[tuple[StepCost, Piece]]:
    """Each piece of a job with its step's cost, counting the steps not counted yet; `cpu`: the step
    as a CPU job runs it (`Piece.on_cpu`)."""
    out = []
    for piece in jp.pieces:
        key, build = piece.on_cpu() if cpu else (piece.key, piece.build)
        if key not in costs:
            start = time.perf_counter()
            costs[key] = measure_step(build)
            if log:
                print(f"counted a step ({key[0]}{', CPU' if key != piece.key else ''}) in "
                      f"{time.perf_counter() - start:.1f} s", file=log, flush=True)
        out.append((costs[key], piece))
    return out


def priced_stage(paper):
    """The stage whose jobs the plan prices (one per run and seed): the one that writes the paper's
    per-run metrics, which every claim reads (training, sampling or measuring)."""
    return next(s for s in paper.stages if paper.run_files["metrics"] in s.outputs.values())


def planner(name: str):
    """Paper `name`'s cost model of one training job: the `cost` its declaration brings (the paper
    contract, `Paper(cost=...)`); None when it has none or is not a paper."""
    from replikit.papers import paper_names
    from replikit.papers.registry import get

    return get(name).cost if name in paper_names() else None


def not_planned(config: dict) -> list[str]:
    """The enabled papers without a cost model (`planner`)."""
    return [name for name in config["papers"] if planner(name) is None]


MAX_TIMED_STEP_S = 10.0  # `timed`: a step the model prices above this on the CPU is not timed


def _timed_cpu_hours(name: str, parts: list[tuple[StepCost, Piece]], peaks: dict[str, dict[str, float]],
                     utilisation: float, launch_s: float, timings: dict, max_step_s: float,
                     log) -> float | None:
    """One job's CPU hours from timed real steps (one thread; each distinct step timed once, as a CPU
    job runs it) and its process start-up; None when a step is priced above `max_step_s` by the model
    (too long to time). `parts`: the job's pieces with their CPU step costs."""
    if ("startup", name) not in timings:
        timings[("startup", name)] = job_startup_seconds(f"replikit.papers.{name}")
    seconds = timings[("startup", name)]
    for cost, piece in parts:
        key, build = piece.on_cpu()
        if key not in timings:
            modelled = step_seconds(cost, False, peaks["CPU"], utilisation, launch_s)
            timings[key] = time_step(build) if modelled <= max_step_s else None
            if log:
                took = timings[key]
                print(f"timed a step ({key[0]}): "
                      + (f"{took:.4f} s" if took is not None else f"not timed, modelled {modelled:.1f} s"),
                      file=log, flush=True)
        if timings[key] is None:
            return None
        seconds += timings[key] * piece.steps
    return seconds / 3600


def plan(config: dict, requests: dict[str, object], peaks: dict[str, dict[str, float]],
         utilisation: float = UTILISATION, launch_s: float = LAUNCH_S, log=None, timed: bool = False,
         max_timed_step_s: float = MAX_TIMED_STEP_S) -> list[Job]:
    """One Job per training job (run x seed) of every enabled paper that has a cost model; a paper
    without one is skipped with a line on `log` (stderr when None). `timed` (needs "CPU" in `peaks`):
    also each job's `cpu_timed_hours`, from real steps timed on this CPU (one thread) and the measured
    start-up of a job's process; evaluation and data loading are still not counted."""
    from replikit.papers.registry import get

    if timed and "CPU" not in peaks:
        raise PlanError("a timed plan needs the CPU among the accelerators (with_cpu)")
    costs: dict[tuple, StepCost] = {}  # steps of equal shapes are counted once
    timings: dict[tuple, float | None] = {}  # and timed once
    jobs: list[Job] = []
    skipped = not_planned(config)
    for name in skipped:
        print(f"no cost model for {name}: not planned "
              "(declare Paper(cost=...), see replikit.methods.step_cost)",
              file=log or sys.stderr, flush=True)
    for name in config["papers"]:
        if name in skipped:
            continue
        paper, cfg = get(name), config[name]
        stage = priced_stage(paper)
        rule = f"{paper.prefix}_{stage.name}"
        for run in paper.runs_of(cfg):
            jp = planner(name)(cfg, run)
            parts = _counted(jp, costs, log)
            cpu_parts = _counted(jp, costs, log, cpu=True) if "CPU" in peaks else parts
            steps = sum(p.steps for _, p in parts)
            flops = sum(c.flops * p.steps for c, p in parts)
            hours = {acc: sum(step_seconds(c, p.bf16, pk, utilisation, launch_s) * p.steps
                              for c, p in (cpu_parts if acc == "CPU" else parts)) / 3600
                     for acc, pk in peaks.items()}
            peak = max(c.peak_bytes for c, _ in parts)
            ops = sum(c.ops * p.steps for c, p in parts) / steps
            timed_hours = (_timed_cpu_hours(name, cpu_parts, peaks, utilisation, launch_s, timings,
                                            max_timed_step_s, log) if timed else None)
            for seed in paper.seeds(cfg, config["seeds"]):
                request = request_of(requests, rule, run, seed)
                if request is None:  # no profiles/gpu entry: the paper's own request, if it declares one
                    request = cfg.get("resources", {}).get("gpu_mem_mb")
                jobs.append(Job(name, rule, run, seed, steps, flops, ops, peak, hours, request, jp.formula,
                                memory_flags(peak, request, rule, jp.memory_setting), timed_hours))
    if not jobs:
        raise PlanError("the configuration has no training job (check `papers` and the experiment lists)")
    return jobs


def memory_flags(peak: int, request_mb: int | None, rule: str, setting: str) -> list[str]:
    """Why a job's peak would not fit: over an 80 GB GPU, over (or without) its profile request."""
    flags = []
    if peak > GPU_BYTES:
        flags.append(f"needs {peak / 1e9:.1f} GB, more than an 80 GB GPU: lower {setting}")
    if request_mb is None:
        flags.append(f"no gpu_mem_mb requested for {rule} (in profiles/gpu or the paper's "
                     "resources.gpu_mem_mb)")
    elif peak > request_mb * 1e6:
        flags.append(f"needs {peak / 1e9:.1f} GB, over the {request_mb} MB requested: raise gpu_mem_mb of "
                     f"{rule} (profiles/gpu, or the paper's resources.gpu_mem_mb), or lower {setting}")
    return flags


# ---------------------------------------------------------------- output


def document(config: dict, sources: list[str], jobs: list[Job], peaks: dict[str, dict[str, float]],
             utilisation: float, launch_s: float) -> dict:
    """The plan as one JSON-able record (what the report's "Cost of the paper scale" reads): the
    config files planned, the papers planned and those without a cost model, the assumptions, the jobs."""
    return {"sources": list(sources), "scale": config["scale"], "seeds": list(config["seeds"]),
            "papers": [p for p in config["papers"] if p not in not_planned(config)],
            "not_planned": not_planned(config),
            "assumptions": {"utilisation": utilisation, "launch_us": launch_s * 1e6,
                            "peaks_tflops": {a: {k: v / 1e12 for k, v in pk.items()}
                                             for a, pk in peaks.items()},
                            "gpu_gb": GPU_BYTES / 1e9},
            "jobs": [asdict(j) for j in jobs]}


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.rjust(w) if i >= 3 else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths,
                                                                                                   strict=True)))
                     for r in rows)


def report(jobs: list[Job], accelerator: str, accelerators: list[str], utilisation: float,
           launch_s: float, cpu_peak: float | None) -> str:
    """The per-job table, the sums per paper and overall, the flags and the assumptions."""
    head = ["paper", "run", "seed", "steps", "GFLOP/step", "PFLOP", "ops/step", f"h {accelerator}",
            "peak GB", "request GB"]
    rows = [head] + [[j.paper, j.run, str(j.seed), f"{j.steps:,}", f"{j.flops / j.steps / 1e9:,.1f}",
                      f"{j.flops / 1e15:,.2f}", f"{j.ops_per_step:,.0f}", f"{j.hours[accelerator]:,.2f}",
                      f"{j.peak_bytes / 1e9:.2f}",
                      "-" if j.request_mb is None else f"{j.request_mb / 1e3:.1f}"]
                     for j in jobs]
    out = [_table(rows), ""]
    sums = [["paper", "jobs", "PFLOP", *[f"h {a}" for a in accelerators], "max peak GB", "flagged"]]
    for paper in [*dict.fromkeys(j.paper for j in jobs), None]:
        sel = [j for j in jobs if paper is None or j.paper == paper]
        sums.append([paper or "TOTAL", str(len(sel)), f"{sum(j.flops for j in sel) / 1e15:,.1f}",
                     *[f"{sum(j.hours[a] for j in sel):,.0f}" for a in accelerators],
                     f"{max(j.peak_bytes for j in sel) / 1e9:.1f}", str(sum(bool(j.flags) for j in sel))])
    out += [_table(sums), ""]
    flagged = {}
    for j in jobs:
        for f in j.flags:
            flagged.setdefault((j.rule, f), []).append(f"{j.run}/seed{j.seed}")
    out.append(f"FLAGGED: {sum(bool(j.flags) for j in jobs)} of {len(jobs)} jobs" if flagged
               else f"no job over its profiles/gpu request or 80 GB ({len(jobs)} jobs)")
    for (rule, flag), names in flagged.items():
        runs = sorted({n.split("/")[0] for n in names})
        out.append(f"  {rule} {', '.join(runs)} ({len(names)} jobs): {flag}")
    out += ["", f"Assumptions: {utilisation:.0%} of the dense peak, {launch_s * 1e6:.0f} us per dispatched "
            "op; peaks (TFLOP/s, tf32 / fp32 / bf16): "
            + "; ".join(f"{a} {p['tf32'] / 1e12:g} / {p['fp32'] / 1e12:g} / {p['bf16'] / 1e12:g}"
                        for a, p in ACCELERATORS.items())
            + ("" if cpu_peak is None
               else f"; CPU (this machine, 1 thread, fp32 matmul measured) {cpu_peak / 1e9:.1f} GFLOP/s")
            + ". "
            "Peak memory: live tensors of one steady-state step (MemTracker under FakeTensorMode), "
            "without the CUDA context, workspaces or fragmentation. Training steps only (no evaluation)."]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    import torch

    ap = argparse.ArgumentParser(
        prog="python -m replikit.plan", formatter_class=argparse.RawDescriptionHelpFormatter,
        description=__doc__,
        epilog="example: python -m replikit.plan config/paper.yaml --json results/plan/paper.json\n"
               "Counting every step of config/paper.yaml takes about 10 minutes on one core (each distinct\n"
               "step is counted once under FakeTensorMode; nothing is allocated or trained).")
    ap.add_argument("configs", nargs="+", help="config files, merged in order over config/config.yaml")
    ap.add_argument("--profile", default=str(ROOT / "profiles/gpu"),
                    help="profile whose gpu_mem_mb requests each job is checked against "
                         "(default: %(default)s)")
    ap.add_argument("--accelerator", default="H100", choices=[*ACCELERATORS, "CPU"],
                    help="the accelerator whose hours the table shows first; every one is in --json "
                         "(default: %(default)s; CPU: this machine's measured 1-thread matmul peak)")
    ap.add_argument("--utilisation", type=float, default=UTILISATION,
                    help="fraction of the accelerator's peak FLOP/s a large step reaches, an assumption "
                         "(default: %(default)s)")
    ap.add_argument("--launch-us", type=float, default=LAUNCH_S * 1e6,
                    help="host overhead per dispatched op in eager PyTorch, microseconds, an assumption: "
                         "a step takes at least ops x this (default: %(default)s)")
    ap.add_argument("--json", help="also write every job as JSON to this file (default: none)")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    try:
        config = load(args.configs)
        requests = gpu_requests(args.profile)
    except (PlanError, ConfigError) as e:
        print(f"replikit.plan: {e}", file=sys.stderr)
        return 1
    cpu = cpu_matmul_flops()
    peaks = with_cpu(cpu)
    try:
        jobs = plan(config, requests, peaks, args.utilisation, args.launch_us * 1e-6, log=sys.stderr)
    except PlanError as e:
        print(f"replikit.plan: {e}", file=sys.stderr)
        return 1
    print(report(jobs, args.accelerator, list(peaks), args.utilisation, args.launch_us * 1e-6, cpu))
    for name in not_planned(config):
        print(f"no cost model for {name}: not planned")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps([asdict(j) for j in jobs], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
