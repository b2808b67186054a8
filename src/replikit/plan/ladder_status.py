"""Where a ladder's rungs stand, for rungs that take more than one call (a session's end, a cluster's
time limit): per rung, its metrics-writing jobs finished, under way with a checkpoint (running now, or
stopped; its epoch or step where the checkpoint says), or not started; whether Snakemake holds a lock
on the rung's tree (a call running now, or a stale lock of a killed one); and the wall time of its
recorded calls, with those of calls killed outright (SIGKILL) counted from the heartbeat each left
(`killed_calls`; the next `run` records them). It reads files only: nothing is trained, written or
deleted."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import socket
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # for type hints only: replikit.plan.ladder imports this module for `status`
    from replikit.plan.ladder import Ladder, Rung


def _checkpoint_note(path: Path) -> str:
    """What a job's checkpoint (a file, or a folder of them) says about how far it got."""
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    if not files:
        return "its checkpoint folder empty"
    newest = max(files, key=lambda p: p.stat().st_mtime)
    when = dt.datetime.fromtimestamp(newest.stat().st_mtime).strftime("%Y-%m-%d %H:%M")
    where = ""
    if newest.suffix == ".ckpt" and newest.stat().st_size < 64 * 2**20:  # large ones: not read
        import torch

        state = torch.load(newest, map_location="cpu", weights_only=False)
        if isinstance(state, dict) and "epoch" in state:
            where = f" at epoch {state['epoch']}"
        elif isinstance(state, dict) and state.get("current"):
            where = f" at step {state['current']['step']} of network {len(state['items']) + 1}"
    return f"checkpoint{where}, written {when}"


def recorded_calls(where: Path, config: str | None) -> list[dict]:
    """The calls of a rung recorded in `where/walls.jsonl` (`replikit.plan.ladder.record_wall`) made
    with the rung configuration whose digest is `config`."""
    log = where / "walls.jsonl"
    if not log.is_file():
        return []
    calls = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    return [c for c in calls if c.get("config") == config]


HEARTBEAT_S = 60  # how often a running call rewrites its heartbeat (`replikit.plan.ladder.Heartbeat`)


def _alive(beat: dict) -> bool:
    """Whether the call that wrote `beat` may still run: its process exists (this host), or its
    heartbeat is recent (another host, a cluster's shared file system). A pid that another process
    has taken since reads as alive: that call stays unrecorded until the other process ends."""
    if beat.get("host") == socket.gethostname():
        try:
            os.kill(beat["pid"], 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    return time.time() - beat["seen"] < 3 * HEARTBEAT_S


def killed_calls(where: Path) -> list[tuple[Path, dict]]:
    """The calls of a rung killed without recording themselves (SIGKILL): each heartbeat left in
    `where/calls.running/` whose call is gone, with the record it stands for (rc "killed", wall from
    its start to its last heartbeat, so up to HEARTBEAT_S short)."""
    out = []
    for path in sorted((where / "calls.running").glob("*.json")):
        beat = json.loads(path.read_text())
        if _alive(beat):
            continue
        record = {k: beat[k] for k in ("rung", "name", "cores", "config")}
        record.update(rc="killed", wall_s=round(beat["seen"] - beat["start"], 1),
                      finished=time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(beat["seen"])))
        out.append((path, record))
    return out


def rung_status(ladder: Ladder, rung: Rung, rung_config: dict) -> dict:
    """One rung (`rung_config`: its configuration, `replikit.plan.ladder.rung_config`): its jobs by state
    and its calls' wall time (`walls.jsonl`, every call of its current configuration, finished or
    stopped)."""
    from replikit.papers.registry import get
    from replikit.plan import bill as plan

    config = plan.load([], rung_config)
    paper, cfg = get(ladder.paper), config[ladder.paper]
    stage = plan.priced_stage(paper)
    root = ladder.outdir(rung)
    done, stopped, waiting = [], {}, []
    for run in paper.runs_of(cfg):
        for seed in paper.seeds(cfg, config["seeds"]):
            job = f"{run}/seed{seed}"
            scratch = root / stage.scratch.format(run=run, seed=seed) if stage.scratch else None
            if (root / paper.run_file("metrics", run, seed)).is_file():
                done.append(job)
            elif scratch is not None and scratch.exists():
                stopped[job] = _checkpoint_note(scratch)
            else:
                waiting.append(job)
    config = root / "rung.yaml"  # as record_wall counts: the calls of the rung's current configuration
    digest = hashlib.sha256(config.read_bytes()).hexdigest()[:16] if config.is_file() else None
    killed = [r for _, r in killed_calls(root) if r["config"] == digest]  # `run` records them next
    calls = recorded_calls(root, digest) + killed
    locks = root / ".snakemake" / "locks"
    return {"rung": rung.label(), "jobs": len(done) + len(stopped) + len(waiting), "done": done,
            "under_way": stopped, "not_started": waiting, "calls": len(calls), "killed": len(killed),
            "locked": locks.is_dir() and any(locks.iterdir()),
            "wall_h": sum(c["wall_s"] for c in calls) / 3600,
            "finished": any(c.get("rc") == 0 for c in calls)}


def format_status(status: dict) -> str:
    lines = [f"rung {status['rung']}: {len(status['done'])} of {status['jobs']} jobs finished, "
             f"{len(status['under_way'])} under way (a checkpoint), "
             f"{len(status['not_started'])} not started; "
             f"calls recorded: {status['calls']}, {status['wall_h']:.2f} h wall"
             + (f" ({status['killed']} killed without a record of its own, counted to its last "
                "heartbeat; the next `run` records it)" if status.get("killed") else "")
             + ("; the rung finished" if status["finished"] else "")
             + ("; Snakemake holds a lock on its tree (a call running now, or a stale lock: "
                "snakemake --unlock)" if status["locked"] else "")]
    lines += [f"  {job}: {note}" for job, note in status["under_way"].items()]
    return "\n".join(lines)
