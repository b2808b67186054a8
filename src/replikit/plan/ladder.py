"""The scale ladder: a paper's walk from its default (CPU) block toward its paper block, one knob at
a time, so that a proxy that disagrees with its paper can be traced to the setting that matters.

A paper's config file may declare

    ladder:
      base: default                 # the scale block rung 0 is
      seeds: [0, 1, 2, 3, 4]
      claims: [LL-1, LL-3]          # the rows the ladder is about (the summary shows every row)
      scope: {tasks: [sudoku4]}     # optional: keys set at every rung, rung 0 included
      rungs:
        - name: steps_16x           # rung 1, on top of rung 0
          knob: steps
          reason: one line: why this knob, toward which paper setting
          set: {training: {sudoku4: {epochs: 128}}}      # the knob's keys
          budget: {tasks: [sudoku4]}                     # optional: cuts that fit the CPU budget
          budget_reason: one line
          seeds: [0, 1, 2]                               # optional: fewer seeds, said
          changed: "2026-11-25: ..."                     # a rung changed after its result says so

Rung k's configuration is the base block with the `set` and `budget` of rungs 1..k merged over it,
key by key: a complete configuration whose runs are ordinary runs. Each rung has its own output
tree, `results/ladder/<paper>/<rung>/` (config key `outdir`), and the rungs share one run store
(`replikit.core.run_store`), so a run that two rungs define alike trains once.

    python -m replikit.plan.ladder plan latent_lookahead          # every rung's predicted CPU / GPU hours
    python -m replikit.plan.ladder run latent_lookahead [--rung steps_16x] [--cores 2]
    python -m replikit.plan.ladder summary latent_lookahead       # figure, table, the report's section

Arguments after `--` go to Snakemake as they are, e.g. `run latent_lookahead --rung steps_32x --
--prioritize <target>` to start a rung's longest runs first.

A paper may declare more ladders under `ladder_<name>:` (e.g. `ladder_maze:`, the same walk on another
task): `--ladder <name>` picks one, and its tree is `results/ladder/<paper>.<name>/`.

A rung is also a plain Snakemake target: `snakemake --cores 2 --configfile
results/ladder/<paper>/<rung>/rung.yaml` (the file `run` and `plan` write). The default-scale
verdicts stay what they are: the ladder is evidence beside them.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from replikit.core.config import LADDER_KEY, ConfigError, _merged, is_ladder_key, paper_file
from replikit.plan.ladder_status import HEARTBEAT_S, killed_calls, recorded_calls

ROOT = Path(__file__).resolve().parents[3]
LADDER_ROOT = Path("results/ladder")


@dataclass(frozen=True)
class Rung:
    """One rung: its index (0 = the base block), name, knob and reason, and its complete overrides
    of the base block (every earlier rung's too)."""

    index: int
    name: str
    knob: str
    reason: str
    overrides: dict
    seeds: list[int]
    budget_reason: str = ""
    changed: str = ""
    own: dict = field(default_factory=dict)  # this rung's own keys (set and budget), for the table

    def label(self) -> str:
        return f"{self.index} {self.name}"


def ladder_key(name: str = "") -> str:
    """A ladder's key in its paper's config file: `ladder`, or `ladder_<name>` for another of its ladders."""
    return f"{LADDER_KEY}_{name}" if name else LADDER_KEY


@dataclass(frozen=True)
class Ladder:
    paper: str
    base: str
    claims: list[str]
    rungs: list[Rung]
    name: str = ""  # "" = the paper's `ladder:`; else its `ladder_<name>:`

    @property
    def key(self) -> str:
        """Its key in the paper's config file."""
        return ladder_key(self.name)

    @property
    def ident(self) -> str:
        """Its folder under results/ladder/ and its name in the summary: the paper, with the ladder's
        name after a dot when it is not the paper's main ladder."""
        return f"{self.paper}.{self.name}" if self.name else self.paper

    def rung(self, name: str) -> Rung:
        for r in self.rungs:
            if name in (r.name, str(r.index)):
                return r
        raise ConfigError(
            f"{self.paper}'s ladder has no rung {name!r} (it has: {', '.join(r.name for r in self.rungs)})"
        )

    def outdir(self, rung: Rung) -> Path:
        return LADDER_ROOT / self.ident / rung.name

    def store(self) -> Path:
        return LADDER_ROOT / self.ident / "store"


_RUNG_KEYS = {"name", "knob", "reason", "set", "budget", "budget_reason", "seeds", "changed"}
_LADDER_KEYS = {"base", "seeds", "claims", "scope", "rungs"}


def parse(paper: str, raw: dict, name: str = "") -> Ladder:
    """A ladder declaration (the `ladder:` or `ladder_<name>:` mapping of a paper's config file), checked."""
    where = f"config/papers/{paper}.yaml `{ladder_key(name)}:`"
    if not isinstance(raw, dict):
        raise ConfigError(f"{where} must be a mapping (base, seeds, claims, scope, rungs)")
    extra = set(raw) - _LADDER_KEYS
    if extra:
        raise ConfigError(f"{where}: unknown keys {sorted(extra)} (it takes {sorted(_LADDER_KEYS)})")
    if not isinstance(raw.get("rungs"), list) or not raw["rungs"]:
        raise ConfigError(f"{where} needs `rungs:`, a list of rungs (name, knob, reason, set)")
    seeds = list(raw.get("seeds") or [0, 1, 2, 3, 4])
    base = raw.get("base", "default")
    scope = copy.deepcopy(raw.get("scope") or {})
    rung0 = f"the {base} block as it is" + (" within the ladder's scope" if scope else "")
    rungs = [Rung(0, base, "none", rung0, copy.deepcopy(scope), seeds)]
    overrides: dict = copy.deepcopy(scope)
    for i, r in enumerate(raw["rungs"], start=1):
        extra = set(r) - _RUNG_KEYS
        missing = {"name", "knob", "reason", "set"} - set(r)
        if extra or missing:
            raise ConfigError(
                f"{where} rung {i}: "
                + "; ".join(
                    ([f"unknown keys {sorted(extra)}"] if extra else [])
                    + ([f"missing {sorted(missing)}"] if missing else [])
                )
            )
        if r["name"] in {x.name for x in rungs} or not str(r["name"]).isidentifier():
            raise ConfigError(f"{where} rung {i}: name {r['name']!r} must be a new identifier")
        own = _merged(copy.deepcopy(r["set"]), copy.deepcopy(r.get("budget") or {}))
        overrides = _merged(overrides, copy.deepcopy(own))
        rungs.append(
            Rung(
                i,
                r["name"],
                r["knob"],
                r["reason"],
                copy.deepcopy(overrides),
                list(r.get("seeds") or seeds),
                r.get("budget_reason", ""),
                r.get("changed", ""),
                own,
            )
        )
    return Ladder(paper, base, list(raw.get("claims") or []), rungs, name)


def load(paper: str, path: str | Path | None = None, name: str = "") -> Ladder:
    """The ladder `paper` declares in config/papers/<paper>.yaml, `ladder:` or (`name`) `ladder_<name>:`
    (or in the YAML file `path`, whose top level is the ladder's mapping: e.g. a test's tiny ladder)."""
    if name and not name.isidentifier():
        raise ConfigError(f"ladder name {name!r} must be an identifier (the <name> of `ladder_<name>:`)")
    if path is not None:
        return parse(paper, yaml.safe_load(Path(path).read_text()), name)
    blocks = paper_file(ROOT / "config" / "papers" / f"{paper}.yaml")
    key = ladder_key(name)
    if key not in blocks:
        have = ", ".join(k for k in blocks if is_ladder_key(k))
        raise ConfigError(
            f"config/papers/{paper}.yaml declares no `{key}:` (it has: {have or 'none'}); add one (see "
            "replikit.plan.ladder)" + (", or name one of those with --ladder" if have else "")
        )
    return parse(paper, blocks[key], name)


def rung_config(ladder: Ladder, rung: Rung) -> dict:
    """The --configfile of one rung: the base scale, this paper alone, its seeds, its own output tree
    and the ladder's run store."""
    own = copy.deepcopy(rung.overrides)
    schema = paper_file(ROOT / "config" / "papers" / f"{ladder.paper}.yaml")["schema"]
    if "seeds" in schema.get("properties", {}):  # a paper with its own seeds key (it wins over the global)
        own["seeds"] = rung.seeds
    return {
        "scale": ladder.base,
        "ladder_rung": f"{rung.index} {rung.name}: {rung.knob}",
        "papers": [ladder.paper],
        "seeds": rung.seeds,
        "report": {"cost_plan": False},
        "outdir": str(ladder.outdir(rung)),
        "run_store": str(ladder.store()),
        ladder.paper: own,
    }


def write_rung_config(ladder: Ladder, rung: Rung) -> Path:
    path = ladder.outdir(rung) / "rung.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    head = (
        f"# {ladder.paper} ladder, rung {rung.index} ({rung.name}): knob {rung.knob}. {rung.reason}\n"
        "# Written by python -m replikit.plan.ladder from the paper's config file: edit the ladder there.\n"
    )
    path.write_text(head + yaml.safe_dump(rung_config(ladder, rung), sort_keys=False))
    return path


# ---------------------------------------------------------------- plan and run


def plan_rungs(ladder: Ladder, rungs: list[Rung], timed: bool = False) -> list[dict]:
    """Each rung's predicted hours (replikit.plan.bill's cost model): CPU on this machine (one thread per
    job) and the reference GPUs, summed over its training jobs. Runs an earlier rung already defines
    alike are counted once, at the first rung that needs them. `timed`: also CPU hours from real steps
    timed here and each job's measured start-up (`cpu_hours_timed`; None when a step was too long
    to time)."""
    from replikit.methods.step_cost import cpu_matmul_flops
    from replikit.plan import bill as plan

    cpu = cpu_matmul_flops()
    peaks = plan.with_cpu(cpu)
    seen: set[str] = set()
    out = []
    for rung in rungs:
        config = plan.load([str(write_rung_config(ladder, rung))])
        jobs = plan.plan(config, {}, peaks, log=None, timed=timed)
        new = []
        for j in jobs:
            ident = f"{j.run}/{j.seed}/{_job_config(config, ladder.paper, j.run)}"
            if ident not in seen:
                seen.add(ident)
                new.append(j)
        hours = {acc: sum(j.hours[acc] for j in new) for acc in peaks}
        out.append(
            {
                "rung": rung.index,
                "name": rung.name,
                "knob": rung.knob,
                "config": config_digest(ladder, rung),  # what `run` checks before it shows this row
                "jobs": len(jobs),
                "new_jobs": len(new),
                "cpu_hours": hours["CPU"],
                "gpu_hours": {a: hours[a] for a in plan.ACCELERATORS},
                "cpu_gflops_measured": cpu / 1e9,  # the 1-thread matmul peak the CPU hours assume
            }
        )
        if timed:
            untimed = [j for j in new if j.cpu_timed_hours is None]
            out[-1]["cpu_hours_timed"] = (None if untimed else sum(j.cpu_timed_hours for j in new))
    return out


def config_digest(ladder: Ladder, rung: Rung) -> str:
    """A digest of the rung's configuration: a plan made for another one (the rung since changed) is
    not shown as this rung's prediction."""
    return hashlib.sha256(json.dumps(rung_config(ladder, rung), sort_keys=True).encode()).hexdigest()[:16]


def plan_path(ladder: Ladder) -> Path:
    return ladder.outdir(ladder.rungs[0]).parent / "plan.json"


def planned(ladder: Ladder, rungs: list[Rung]) -> tuple[list[dict], list[Rung]]:
    """The plan.json rows made for these rungs as they are now, and the rungs without one."""
    rows = json.loads(plan_path(ladder).read_text()) if plan_path(ladder).is_file() else []
    found = {r["name"]: r for r in rows if "name" in r}
    ok = [found[r.name] for r in rungs
          if r.name in found and found[r.name].get("config") == config_digest(ladder, r)]
    names = {r["name"] for r in ok}
    return ok, [r for r in rungs if r.name not in names]


def merge_plans(ladder: Ladder, kept: list[dict], rows: list[dict]) -> list[dict]:
    """plan.json after planning `rows`: each rung's newest plan, matched by name, so a rung inserted
    into the ladder after others were planned never takes another's prediction; every row gets its
    rung's current index, and a rung no longer in the ladder is dropped."""
    index = {r.name: r.index for r in ladder.rungs}
    planned = {r["name"] for r in rows}
    merged = [r for r in kept if r.get("name") not in planned] + rows
    return sorted(
        [{**r, "rung": index[r["name"]]} for r in merged if r.get("name") in index], key=lambda r: r["rung"]
    )


def _job_config(config: dict, paper: str, run: str) -> str:
    """What defines a training job of `run` (the rule's cfg param), as the run store keys it."""
    from replikit.papers.registry import get

    p = get(paper)
    stage = next(s for s in p.stages if s.config and "{run}" in next(iter(s.outputs.values())))
    wildcards = type("W", (), {"run": run, "seed": "0"})()
    return json.dumps(stage.config(config[paper], wildcards), sort_keys=True)


def format_plan(rows: list[dict]) -> str:
    timed = any("cpu_hours_timed" in r for r in rows)
    head = "| rung | knob | jobs (new) | predicted CPU-h (1 thread/job) |"
    head += " timed CPU-h (steps timed here + start-up) |" if timed else ""
    lines = [head + " H100-h | A100-h |", "|---|---|---|---|" + ("---|" if timed else "") + "---|---|"]
    for r in rows:
        cell = ""
        if timed:
            t = r.get("cpu_hours_timed")
            cell = f" {t:.2f} |" if t is not None else " not timed (a step too long) |"
        lines.append(
            f"| {r['rung']} {r['name']} | {r['knob']} | {r['jobs']} ({r['new_jobs']}) | "
            f"{r['cpu_hours']:.2f} |{cell} {r['gpu_hours']['H100']:.3f} | {r['gpu_hours']['A100']:.3f} |"
        )
    return "\n".join(lines)


def record_wall(where: Path, record: dict) -> None:
    """Every invocation of a rung is appended to `walls.jsonl`. `wall.json`, the wall time the summary
    shows, is that of the calls up to and including the first that finished (rc 0), summed: a rung whose
    first call failed (after its training, say) counts both calls, and a later call that only refreshes
    a figure never changes it. Only calls of the same rung configuration count (`config`, the digest of
    its rung.yaml): a call made before the rung was changed (its `changed:`) trained other runs."""
    log = where / "walls.jsonl"
    with open(log, "a") as f:
        f.write(json.dumps(record) + "\n")
    wall = where / "wall.json"
    if wall.is_file() and json.loads(wall.read_text()).get("rc") == 0:
        return
    calls = recorded_calls(where, record.get("config"))
    total = {
        **record,
        "wall_s": round(sum(c["wall_s"] for c in calls), 1),
        "cores": max(c.get("cores", 0) for c in calls) or None,
        "calls": len(calls),
    }
    wall.write_text(json.dumps(total, indent=1))


def run_rung(ladder: Ladder, rung: Rung, cores: int, extra: list[str]) -> int:
    """Build one rung's figures and scorecard with Snakemake; the wall time is recorded beside it."""
    from replikit.papers.registry import get

    cfg = write_rung_config(ladder, rung)
    targets = [t for t in get(ladder.paper).targets() if "benchmark" not in t]
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(ROOT / "Snakefile"),
        "--cores",
        str(cores),
        "--configfile",
        str(cfg),
        "--rerun-incomplete",
        *targets,
        *extra,  # last: an option that takes several values (--prioritize) must not swallow the targets
    ]
    print(f"ladder: rung {rung.label()} ({rung.knob}):", " ".join(cmd), flush=True)
    where, dry = ladder.outdir(rung), "-n" in extra or "--dry-run" in extra
    config = hashlib.sha256(cfg.read_bytes()).hexdigest()[:16]
    locks = where / ".snakemake" / "locks"
    if not dry and record_killed_calls(where) and locks.is_dir() and any(locks.iterdir()):
        print(f"ladder: the rung's last call was killed (its process is gone), so Snakemake's lock on "
              f"{where} is likely stale; if no other Snakemake runs there, unlock it with: "
              f"{' '.join(cmd[:5] + cmd[7:9])} --unlock", flush=True)
    start, rc = time.time(), None
    beat = None if dry else Heartbeat(where, {"rung": rung.index, "name": rung.name, "cores": cores,
                                              "config": config}, start)
    proc = subprocess.Popen(cmd)
    try:
        while rc is None:
            try:
                rc = proc.wait(timeout=HEARTBEAT_S)
            except subprocess.TimeoutExpired:
                if beat:
                    beat.write()
    finally:  # a call stopped (Ctrl-C, SIGTERM: a session's or a job's end) counts its wall time too
        if rc is None:
            proc.terminate()
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
        record = {
            "rung": rung.index,
            "name": rung.name,
            "rc": rc if rc is not None else "stopped",
            "wall_s": round(time.time() - start, 1),
            "finished": time.strftime("%Y-%m-%d %H:%M:%S"),
            "cores": cores,
            "config": config,
        }
        if beat:
            record_wall(where, record)
            beat.path.unlink(missing_ok=True)
    return rc


class Heartbeat:
    """A running call's record, rewritten every HEARTBEAT_S seconds in `where/calls.running/`, so that a
    call killed outright (SIGKILL: a session's end may stop it so, with no chance to record itself)
    still leaves its start and the last time it was seen running; the next call records it
    (`record_killed_calls`)."""

    def __init__(self, where: Path, record: dict, start: float) -> None:
        self.path = where / "calls.running" / f"{socket.gethostname()}-{os.getpid()}.json"
        self.record = {**record, "host": socket.gethostname(), "pid": os.getpid(), "start": start}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.write()

    def write(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({**self.record, "seen": time.time()}))
        tmp.replace(self.path)


def record_killed_calls(where: Path) -> list[dict]:
    """Record, in `walls.jsonl`, every call of this rung that was killed without recording itself (its
    heartbeat left behind, its process gone): rc "killed", wall from its start to its last heartbeat
    (so up to HEARTBEAT_S short)."""
    records = []
    for path, record in killed_calls(where):
        record_wall(where, record)
        path.unlink()
        records.append(record)
    return records


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m replikit.plan.ladder",
        description=__doc__.split("\n\n")[0],
        epilog="Rungs run one after another; a rung's runs shared with an earlier "
        "rung are copied from the ladder's run store. Arguments after `--` go to Snakemake.",
    )
    ap.add_argument(
        "action",
        choices=["plan", "run", "status", "summary"],
        help="plan: predicted hours per rung; run: build rungs; status: each rung's jobs finished, "
        "stopped with a checkpoint or not started (a rung over several calls); summary: figure, "
        "table, report section",
    )
    ap.add_argument("paper", help="a paper whose config file declares `ladder:`")
    ap.add_argument(
        "--rung", action="append", help="only this rung (name or index; repeatable); default: all"
    )
    ap.add_argument("--cores", type=int, default=2, help="Snakemake --cores per rung (default: 2)")
    ap.add_argument("--ladder", default="", metavar="NAME",
                    help="the paper's ladder `ladder_NAME:` instead of its `ladder:` (e.g. maze)")
    ap.add_argument("--ladder-file", help="a YAML file holding a ladder mapping, instead of the paper's own")
    ap.add_argument("--dry-run", action="store_true", help="run: Snakemake's dry run of each rung")
    ap.add_argument(
        "--timed",
        action="store_true",
        help="plan: also time each distinct training step for real here (one thread) and add each "
        "job's measured start-up; closer than the FLOP model for small jobs, and slower to plan",
    )
    argv = list(sys.argv[1:] if argv is None else argv)
    cut = argv.index("--") if "--" in argv else len(argv)
    argv, snakemake_args = argv[:cut], argv[cut + 1 :]
    args = ap.parse_args(argv)
    try:
        ladder = load(args.paper, args.ladder_file, args.ladder)
        rungs = [ladder.rung(r) for r in args.rung] if args.rung else ladder.rungs
    except ConfigError as e:
        print(f"replikit.plan.ladder: {e}", file=sys.stderr)
        return 1
    if args.action == "plan":
        rows = plan_rungs(ladder, rungs, timed=args.timed)
        out = plan_path(ladder)
        kept = json.loads(out.read_text()) if out.is_file() else []  # other rungs' earlier plans stay
        out.write_text(json.dumps(merge_plans(ladder, kept, rows), indent=1))
        print(format_plan(rows))
        print(
            f"CPU: {rows[0]['cpu_gflops_measured']:.1f} GFLOP/s measured (1 thread, fp32 matmul) at the "
            "start; plan on a quiet machine, a loaded one inflates the CPU hours"
        )
        print(f"(written to {out})")
        return 0
    if args.action == "status":
        from replikit.plan.ladder_status import format_status, rung_status

        print("\n".join(format_status(rung_status(ladder, r, rung_config(ladder, r))) for r in rungs))
        return 0
    if args.action == "run":
        # SIGTERM (a session's end, a cluster's time limit) stops a call as Ctrl-C does: its wall time
        # is recorded, and Snakemake stops its jobs (their checkpoints stay, for the next call)
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
        extra = (["-n"] if args.dry_run else []) + snakemake_args
        rows, unplanned = planned(ladder, rungs)  # the prediction, before launch
        if rows:
            print("the plan (python -m replikit.plan.ladder plan):\n" + format_plan(rows), flush=True)
        for r in unplanned:
            print(f"rung {r.label()} has no plan for its current configuration: predict its hours first with "
                  f"python -m replikit.plan.ladder plan {args.paper} --rung {r.name}"
                  + (f" --ladder {args.ladder}" if args.ladder else ""), flush=True)
        rcs = [run_rung(ladder, r, args.cores, extra) for r in rungs]
        if args.dry_run or any(rcs):
            return max(rcs)
    from replikit.reporting.ladder_summary import summarize

    summarize(ladder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
