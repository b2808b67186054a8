"""Publish a result as a snapshot under docs/published/, for the documents' generated blocks
(replikit.reporting.docs). Each snapshot records the commit and the code hashes that made it.

    python -m replikit.tools.publish reference [--tree TREE --log LOG]   # smoke: the CI reference
    python -m replikit.tools.publish scorecard SCALE TREE [--log SNAKEMAKE_LOG]   # a finished run
    python -m replikit.tools.publish plan config/paper.yaml    # the plan's totals
    python -m replikit.tools.publish dag config/preflight.yaml # a scale's DAG job count (a dry run)
    python -m replikit.tools.publish rung PAPER RUNG RUNS...   # a ladder rung, from committed run records
    python -m replikit.tools.publish runs SCALE TREE           # commit a finished run's runs (no weights)
    python -m replikit.tools.publish rejudge SCALE [--check]   # judge the committed runs again, no training
    python -m replikit.tools.publish setup CLONE LOG          # install and test times, from .ci/run's log

Then `python -m replikit.reporting.docs`, and commit both with a message that says why.
"""

from __future__ import annotations

import argparse
import collections
import csv
import datetime as dt
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from replikit.core.job_cpu import logged_cpu_seconds
from replikit.reporting.docs import PUBLISHED, SCALES
from replikit.reporting.provenance import REPOSITORY, code_hash, git_state
from replikit.tools import published_runs

REFERENCE = REPOSITORY / "tests" / "reference" / "smoke_scorecard.json"


def _write(path: Path, snapshot: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(snapshot, indent=1) + "\n")  # insertion order: parts as the scorecard has them
    shown = path.relative_to(REPOSITORY) if path.is_relative_to(REPOSITORY) else path
    print(f"wrote {shown}: run python -m replikit.reporting.docs, commit both")


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=REPOSITORY, capture_output=True, text=True,
                          check=True).stdout.strip()


def code_at(commit: str, modules: list[str]) -> dict[str, str]:
    """`code_hash` of each module as it was at `commit` (read from git, the work tree untouched)."""
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "archive", commit, "src/replikit"], cwd=REPOSITORY,
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        root = Path(tmp) / "src" / "replikit"
        return {m: code_hash(m, root=root) for m in modules}


CLAIMS_JOB = "replikit.papers.glue"  # the claims job's own code (score_claims), beside each paper's


def declared_kind(claim) -> str:
    """`background`, `check`, `falsifier not measured` (none declared), `hypothesis`, KNOWN_FROM_PILOT
    (a paper claim whose pilot ran at its verdict settings), SIZED_BY_PILOT
    (a paper claim whose falsifier reads the statistic whose pilot value sized the margin) or `paper`
    (a paper claim with a falsifier), from a claim's declaration (whether it cannot discriminate
    depends on its verdicts: `_claims`)."""
    from replikit.scoring.claims import KNOWN_FROM_PILOT, ORIGIN_STANDINGS, SIZED_BY_PILOT

    if claim.source and claim.source.background:
        return "background"
    if claim.kind == "paper" and claim.check:
        return "check"
    if claim.kind == "paper" and claim.falsifier is None:
        return "falsifier not measured"
    if claim.kind == "paper" and claim.known_from_pilot:
        return KNOWN_FROM_PILOT
    if claim.kind == "paper" and claim.falsifier.origin in ORIGIN_STANDINGS:
        return ORIGIN_STANDINGS[claim.falsifier.origin]
    if claim.kind == "paper" and claim.falsifier.sized_by_pilot:
        return SIZED_BY_PILOT
    return claim.kind


def declarations(scale: str) -> dict[str, dict[str, dict[str, str]]]:
    """paper -> claim id -> its `kind` (`declared_kind`), its `statement` and the digest of its
    `definition` (replikit.scoring.scorecard_reference.definition), from the claims' declarations at
    `scale` (nothing is run)."""
    from replikit.papers import paper_names, registry
    from replikit.plan.bill import load
    from replikit.scoring.scorecard_reference import definition

    config = load([str(REPOSITORY / "config" / f"{scale}.yaml")] if scale != "default" else [])
    out = {}
    for name in paper_names():
        paper = registry.get(name)
        cfg = config[name]
        out[name] = {c.id: {"kind": declared_kind(c), "statement": c.statement,
                            "definition": definition(c.statement, c.statistic, c.rule,
                                                     c.falsifier.setting if c.falsifier else "",
                                                     c.source.quote if c.source else "")}
                     for c in paper.claims(paper.experiments(cfg), cfg)}
    return out


def paper_modules() -> dict[str, list[str]]:
    """paper -> the modules that compute its results (`registry.code_modules`)."""
    from replikit.papers import paper_names, registry

    return {n: registry.code_modules(registry.get(n)) for n in paper_names()}


def _kind(row: dict, declared: str) -> str:
    """A replicated paper claim whose falsifier does not tell the settings apart cannot discriminate or
    has its falsifier inconclusive (replikit.scoring.claims.discrimination_standing); one
    measured here whose falsifier gives no evidence is counted apart, as
    replikit.scoring.claims.standing does; so is a replication judged on seen seeds only
    (replikit.scoring.seed_sets.seen_only). A claim declared SIZED_BY_PILOT is judged as a paper claim
    first (its falsifier may give no evidence, or read replicated too)."""
    from replikit.scoring.claims import (
        KNOWN_FROM_PILOT,
        ORIGIN_STANDINGS,
        SIZED_BY_PILOT,
        discrimination_standing,
        falsifier_measured,
    )
    from replikit.scoring.registration import CHANGED, UNREGISTERED
    from replikit.scoring.seed_sets import SEEN_ONLY

    falsifier = row.get("falsifier")
    apart = (SIZED_BY_PILOT, KNOWN_FROM_PILOT, *ORIGIN_STANDINGS.values())  # judged as a paper claim first
    paper = declared in ("paper", *apart)
    if paper and falsifier and row["parts"] and not falsifier_measured(falsifier):
        return "falsifier not measured"
    told = discrimination_standing(row)
    if paper and told:
        return told
    if declared in apart and not row["parts"]:  # not measured here
        return "paper"
    if declared == "paper" and row.get("seen_only"):
        return SEEN_ONLY
    changed = (row.get("registration") or {}).get("changed") or [UNREGISTERED]
    return CHANGED if declared == "paper" and row["parts"] and UNREGISTERED not in changed else declared


def _claims(papers: dict, declared: dict) -> dict:
    """Each row with its kind (`_kind`, from the claim's declaration: `declarations`), its statement
    and whether it was measured. A row whose claim the paper no longer declares, or declares otherwise
    (another statement, statistic, rule, falsifier setting or quote: its `definition`), is refused rather
    than published under today's declaration."""
    undeclared = sorted(f"{p} {cid}" for p, claims in papers.items() for cid in claims
                        if cid not in declared.get(p, {}))
    redefined = sorted(f"{p} {cid}" for p, claims in papers.items() for cid, row in claims.items()
                       if cid in declared.get(p, {})
                       and row.get("definition") != declared[p][cid]["definition"])
    fix = ("rerun those papers' claims jobs with today's code (and, for the smoke reference, write it "
           "again) before publishing")
    if undeclared:
        raise SystemExit(f"the results hold claims their papers no longer declare: {', '.join(undeclared)}; "
                         + fix)
    if redefined:
        raise SystemExit("the results hold claims judged under another definition than today's (statement, "
                         f"statistic, rule, falsifier setting or quote), or under an unrecorded one: "
                         f"{', '.join(redefined)}; " + fix)
    return {p: {cid: {**row, "kind": _kind(row, declared[p][cid]["kind"]),
                      "statement": declared[p][cid]["statement"], "measured": bool(row["parts"])}
                for cid, row in claims.items()}
            for p, claims in papers.items()}


def _published_runtime(path: Path) -> dict | None:
    """The runtime a published snapshot holds (its `timed_at` names the run it timed), kept when a
    snapshot is published again without a run's tree: a time is not re-measured each time the claims
    are judged again, and the documents say which run it was (docs.timed_at)."""
    return json.loads(path.read_text()).get("runtime") if path.is_file() else None


def publish_reference(out: Path = PUBLISHED, tree: Path | None = None, log: Path | None = None) -> dict:
    """The smoke snapshot from CI's committed reference: its verdicts and means, the commit whose code
    judged its claims (`claims_by`; for a reference written before it was recorded, the commit that
    last wrote the reference), and the code hashes of that commit; with `tree` (and `log`), what a
    smoke run took, from its benchmark files (and its Snakemake log's wall time); without, the time the
    published snapshot holds, naming the run it timed."""
    ref = json.loads(REFERENCE.read_text())
    judged = ref.get("claims_by", {})
    commit = judged.get("commit") or _git("log", "-1", "--format=%H", "--",
                                          str(REFERENCE.relative_to(REPOSITORY)))
    if commit.startswith("several"):
        raise SystemExit(f"{REFERENCE.name}: its claims were judged at {commit}; rerun every claims job at "
                         "one commit and write the reference again")
    modules = sorted({CLAIMS_JOB} | {m for ms in paper_modules().values() for m in ms})
    snap = {"kind": "scorecard", "scale": ref["scale"],
            "made_by": {"commit": commit, "dirty": bool(judged.get("dirty")),
                        "code": code_at(commit, modules),
                        # after a smoke run:
                        "how": ("python -m replikit.scoring.scorecard_reference write scales/smoke/results/"
                                "*/claims.json && python -m replikit.tools.publish reference"),
                        "from": str(REFERENCE.relative_to(REPOSITORY))},
            "papers": _claims(ref["papers"], declarations("smoke")),
            "runtime": run_time(tree, log) if tree
            else _published_runtime(out / f"scorecard-{ref['scale']}.json")}
    if ref.get("machine"):
        snap["machine"] = ref["machine"]
    _write(out / f"scorecard-{ref['scale']}.json", snap)
    return snap


def benchmark_seconds(tree: Path, paused: list[tuple[dt.datetime, dt.datetime]] | None = None,
                      earlier: dict[str, list[tuple[dt.datetime, dt.datetime]]] | None = None,
                      aside: list[tuple[dt.datetime, dt.datetime]] | None = None
                      ) -> dict[str, dict[str, float]]:
    """Per paper (the first folder under logs/benchmarks/, `data` for the datasets): jobs, their
    wall seconds (`s`) and CPU seconds, summed over Snakemake's benchmark files (the CPU seconds the job
    wrote to its log where it did, `core.jobs.cpu_line`; else the benchmark's `cpu_time`, which misses
    up to the last 30 s of a job longer than 15 s). With
    `paused` (paused_intervals), a job's wall seconds leave out the time the run was paused while it
    ran: its span ends when Snakemake wrote its benchmark file (the file's mtime, so the tree must be
    the run's own, not a copy) and starts `s` seconds before. A benchmark file holds a job's last
    attempt only; `earlier` (earlier_parts, by the file's path in the tree) adds the spans of the
    attempts a resumed job went on from, less the pauses, and counts them (`earlier_parts`; their
    CPU seconds are not known). A job that ended within one of the `aside` spans (side calls, made
    while the run was paused) ran during the pause, so none of its time is left out. `longest_s` and
    `longest` are the paper's longest job (its wall seconds, its benchmark file under the folder);
    `stage_cpu_s` its CPU seconds per stage (the folder below the paper's), and `train_cpu_s` those of
    the stage the plan prices (`plan.bill.priced_stage`: its training)."""
    out: dict[str, dict[str, float]] = collections.defaultdict(
        lambda: {"jobs": 0, "job_s": 0.0, "cpu_s": 0.0})
    root = tree / "logs" / "benchmarks"
    for path in sorted(root.rglob("*.tsv")):
        rows = list(csv.DictReader(path.open(), delimiter="\t"))
        if not rows:
            continue
        group = out[Path(path.relative_to(root).parts[0]).stem]  # a file at the top (the report's): its stem
        group["jobs"] += 1
        seconds = float(rows[-1]["s"])
        gone = 0.0 if ended_within(path, aside or []) else paused_within(path, seconds, paused or [])
        job_s = seconds - gone
        logged = logged_cpu_seconds(tree / "logs" / path.relative_to(root).with_suffix(".log"))
        cpu = logged if logged is not None else float(rows[-1].get("cpu_time") or 0.0)
        group["cpu_s"] += cpu
        stage = path.relative_to(root).parts[1] if len(path.relative_to(root).parts) > 2 else ""
        group.setdefault("stage_cpu_s", {}).setdefault(stage, 0.0)
        group["stage_cpu_s"][stage] += cpu
        for span in (earlier or {}).get(str(path.relative_to(tree)), []):
            job_s += (span[1] - span[0]).total_seconds() - sum(_overlap(span, p) for p in paused or [])
            group["earlier_parts"] = group.get("earlier_parts", 0) + 1
        group["job_s"] += job_s
        longest = group.setdefault("stage_longest_s", {})
        longest[stage] = max(longest.get(stage, 0.0), job_s)
        if job_s > group.get("longest_s", -1.0):
            group["longest_s"], group["longest"] = job_s, str(path.relative_to(root))
    for name, group in out.items():
        if (stage := _priced_stage(name)) is not None:
            group["train_cpu_s"] = group["stage_cpu_s"].get(stage, 0.0)
    return {k: {**v, "job_s": round(v["job_s"], 1), "cpu_s": round(v["cpu_s"], 1),
                "longest_s": round(v["longest_s"], 1),
                "stage_cpu_s": {st: round(c, 1) for st, c in v["stage_cpu_s"].items()},
                "stage_longest_s": {st: round(c, 1) for st, c in v["stage_longest_s"].items()},
                **({"train_cpu_s": round(v["train_cpu_s"], 1)} if "train_cpu_s" in v else {})}
            for k, v in out.items()}


def _priced_stage(name: str) -> str | None:
    """The stage whose jobs the plan prices for paper `name` (its training); None for another folder."""
    from replikit.papers import paper_names
    from replikit.papers.registry import get
    from replikit.plan.bill import priced_stage

    return priced_stage(get(name)).name if name in paper_names() else None


def paused_within(benchmark: Path, seconds: float, paused: list[tuple[dt.datetime, dt.datetime]]) -> float:
    """Seconds of `paused` within the job whose benchmark file is `benchmark` and which took `seconds`
    (Snakemake writes the file when the job ends)."""
    if not paused:
        return 0.0
    end = dt.datetime.fromtimestamp(benchmark.stat().st_mtime)
    return sum(_overlap((end - dt.timedelta(seconds=seconds), end), p) for p in paused)


def ended_within(benchmark: Path, spans: list[tuple[dt.datetime, dt.datetime]]) -> bool:
    """Whether the job whose benchmark file is `benchmark` ended within one of `spans` (to the
    second, as Snakemake's log stamps them)."""
    end = dt.datetime.fromtimestamp(benchmark.stat().st_mtime)
    return any(a - dt.timedelta(seconds=1) <= end <= b + dt.timedelta(seconds=1) for a, b in spans)


def aside_calls(spans: list[tuple[dt.datetime, dt.datetime]]) -> dict:
    """The side calls' count and wall seconds (`aside_s`, their logs' spans): calls made while the run
    was paused (claims judged again, fresh runs trained), whose jobs count and whose time is not the
    run's wall time."""
    return {"aside_calls": len(spans), "aside_s": round(sum((b - a).total_seconds() for a, b in spans), 1)}


STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]", re.M)


def _stamp(text: str) -> dt.datetime:
    """A Snakemake log timestamp ("Mon Nov 30 14:44:03 2026"), as local time."""
    return dt.datetime.strptime(" ".join(text.split()), "%a %b %d %H:%M:%S %Y")


def log_span(log: Path) -> tuple[dt.datetime, dt.datetime] | None:
    """The first and the last timestamp of a Snakemake log (local time, as it writes them; one for a
    call stopped during its first jobs, which its heartbeats lengthen); None without any (--unlock)."""
    stamps = [_stamp(s) for s in STAMP.findall(log.read_text())]
    return (stamps[0], stamps[-1]) if stamps else None


def log_wall_seconds(log: Path) -> float | None:
    """Seconds between the first and the last timestamp of a Snakemake log; None without two."""
    span = log_span(log)
    return (span[1] - span[0]).total_seconds() if span and span[1] > span[0] else None


def paused_intervals(pauses: Path) -> list[tuple[dt.datetime, dt.datetime]]:
    """The intervals a run was paused (SIGSTOP to SIGCONT, so that other work had the cores), from a
    JSON-lines file of {"paused": unix seconds} and {"resumed": unix seconds} in order; an unmatched
    pause or resume is an error (the file does not describe the run)."""
    out, start = [], None
    for line in pauses.read_text().splitlines():
        if not line.strip():
            continue
        event = json.loads(line)
        if "paused" in event and start is None:
            start = event["paused"]
        elif "resumed" in event and start is not None:
            out.append((start, event["resumed"]))
            start = None
        else:
            expected = "a pause" if start is None else "a resume"
            raise SystemExit(f"{pauses}: {line!r} where {expected} was due; each pause needs its resume, "
                             "in order")
    if start is not None:
        raise SystemExit(f"{pauses}: the last pause has no resume (is the run still paused?)")
    return [(dt.datetime.fromtimestamp(a), dt.datetime.fromtimestamp(b)) for a, b in out]


def _overlap(a: tuple[dt.datetime, dt.datetime], b: tuple[dt.datetime, dt.datetime]) -> float:
    return max(0.0, (min(a[1], b[1]) - max(a[0], b[0])).total_seconds())


def heartbeat_times(heartbeats: Path, key: str = "alive") -> list[dt.datetime]:
    """The signs of life of a run, from a JSON-lines file of {"alive": unix seconds} written while its
    Snakemake was running, and {"restarted": unix seconds} where the run was started again (a new
    session: no earlier call lasted past it); `key` picks which (other keys, such as the evidence of
    a line reconstructed afterwards, are kept in the file for the reader)."""
    out = []
    for i, line in enumerate(heartbeats.read_text().splitlines(), 1):
        if line.strip():
            event = json.loads(line)
            if "alive" not in event and "restarted" not in event:
                raise SystemExit(f"{heartbeats}:{i}: {line!r} has no 'alive' (unix seconds); each line is "
                                 "one sign of life of the run, or 'restarted' where it was started again")
            if key in event:
                out.append(dt.datetime.fromtimestamp(event[key]))
    return sorted(out)


def extended_spans(spans: list[tuple[dt.datetime, dt.datetime]], beats: list[dt.datetime],
                   restarts: list[dt.datetime] = ()) -> list[tuple[dt.datetime, dt.datetime]]:
    """Each call's span, ended at its last heartbeat where that is later than its log's last line: a
    call stopped mid-job (at a session's end) writes nothing after its last job event. A beat belongs
    to the call it follows, up to the next call's start or the run's next restart (a new session's
    first beats come before its first call has written a timestamp)."""
    spans = sorted(spans)
    nexts = [s[0] for s in spans[1:]] + [dt.datetime.max]
    nexts = [min([nxt] + [r for r in restarts if a < r]) for (a, _), nxt in zip(spans, nexts, strict=True)]
    return [(a, max([b] + [t for t in beats if a <= t < nxt]))
            for (a, b), nxt in zip(spans, nexts, strict=True)]


def lengthened(spans: list[tuple[dt.datetime, dt.datetime]], heartbeats: Path | None
               ) -> list[tuple[dt.datetime, dt.datetime]]:
    """`spans` (sorted), each call ended at its last heartbeat (`extended_spans`), with `heartbeats`."""
    if not heartbeats:
        return sorted(spans)
    return extended_spans(spans, heartbeat_times(heartbeats), heartbeat_times(heartbeats, "restarted"))


JOB_STARTED = re.compile(r"^\[([^\]\n]+)\]\n(?:local)?rule \w+:\n((?: {4}.*(?:\n|$))+)", re.M)
JOB_ENDED = re.compile(r"^\[([^\]\n]+)\]\n(?:Finished jobid: (\d+)|Finished job (\d+)\.|Error in rule \w+:\n"
                       r"(?: {4}.*\n)*? {4}jobid: (\d+))", re.M)
JOB_FIELD = re.compile(r"^ {4}(\w+): (.*)$", re.M)


def job_attempts(log: Path, call_end: dt.datetime) -> list[dict]:
    """Every job a Snakemake call started: its benchmark file, outputs, start, and end (when it
    finished or failed; `call_end` for one still running when the call was stopped). Jobs without a
    benchmark file are left out."""
    text = log.read_text()
    # (position, jobid, when): a retried job (`retries`) is started again under its jobid, so each
    # start ends at the first end of its jobid after it
    ended = [(m.start(), next(g for g in m.groups()[1:] if g), _stamp(m[1]))
             for m in JOB_ENDED.finditer(text)]
    out = []
    for m in JOB_STARTED.finditer(text):
        fields = dict(JOB_FIELD.findall(m[2]))
        if "benchmark" in fields and "jobid" in fields:
            jobid = fields["jobid"].strip()
            end = next((t for at, j, t in ended if j == jobid and at > m.start()), call_end)
            out.append({"benchmark": fields["benchmark"].strip(), "start": _stamp(m[1]), "end": end,
                        "outputs": [o.strip() for o in fields.get("output", "").split(",") if o.strip()]})
    return out


def run_parts(tree: Path, outputs: list[str]) -> int:
    """How many processes a job's run record says its result took (`parts`: replikit.core.training's
    Stopwatch, checkpointed with the run, counts each resume); 1 when no JSON output says."""
    parts = [1]
    for name in outputs:
        path = tree / name
        if path.suffix == ".json" and path.is_file():
            try:
                parts.append(int(json.loads(path.read_text()).get("parts", 1)))
            except (ValueError, AttributeError, TypeError):
                continue
    return max(parts)


def earlier_parts(tree: Path, logs: list[Path], heartbeats: Path | None = None
                  ) -> dict[str, list[tuple[dt.datetime, dt.datetime]]]:
    """Per benchmark file (its path in the tree): the spans of the attempts its job resumed from, the
    `parts` - 1 attempts before its last in the calls' logs (run_parts), each from its start until it
    failed or its call was stopped (the call's span, ended at its last heartbeat with `heartbeats`,
    before the run's next restart). An older attempt (a run of other code, started afresh) is not
    among them, as its record counts only the parts it went on from. An attempt is counted to its
    end, so the work redone after its last checkpoint is counted too."""
    spanned = sorted((span, log) for log in logs if (span := log_span(log)))
    ends = [s[1] for s in lengthened([s for s, _ in spanned], heartbeats)]
    tries: dict[str, list[dict]] = collections.defaultdict(list)
    for (_, log), end in zip(spanned, ends, strict=True):
        for attempt in job_attempts(log, end):
            tries[attempt["benchmark"]].append(attempt)
    out = {}
    for bench, attempts in tries.items():
        attempts.sort(key=lambda a: a["start"])
        k = run_parts(tree, attempts[-1]["outputs"])
        if k > 1 and len(attempts) > 1:
            out[bench] = [(a["start"], a["end"]) for a in attempts[-k:-1]]
    return out


def calls_wall(logs: list[Path], pauses: Path | None = None, heartbeats: Path | None = None) -> dict:
    """The wall time of a run made in one or more Snakemake calls (one log each; a run stopped and
    resumed), summed over the calls, less the time it was paused within them (`pauses`); with
    `heartbeats`, each call lasts until its last sign of life (`extended_spans`)."""
    logged = [span for log in logs if (span := log_span(log))]
    spans = lengthened(logged, heartbeats) if heartbeats else logged
    paused = paused_intervals(pauses) if pauses else []
    gone = sum(_overlap(s, p) for s in spans for p in paused)
    wall = sum((s[1] - s[0]).total_seconds() for s in spans)
    out = {"wall_s": round(wall - gone, 1) if spans else None, "calls": len(spans),
           "paused_s": round(gone, 1)}
    if heartbeats:
        out["heartbeat_s"] = round(sum((b - s[1]).total_seconds() for s, (_, b) in zip(
            sorted(logged), spans, strict=True)), 1)
    return out


def run_time(tree: Path, log: Path | list[Path] | None = None, pauses: Path | None = None,
             papers: set[str] | None = None, heartbeats: Path | None = None,
             aside: list[Path] | None = None) -> dict:
    """What a run took: per paper and in all, jobs, job and CPU seconds (its benchmark files; job
    seconds less the pauses, and with its logs a resumed job's earlier parts, earlier_parts; with
    `papers`, only theirs and the shared data's), its wall time (its Snakemake logs, when given:
    summed over the calls, each ended at its last heartbeat, less the pauses), the cores it was
    given and its dates (`machine_time`); with `aside` (side calls' logs), their count and seconds
    (aside_calls), their jobs counted whole."""
    logs = [log] if isinstance(log, Path) else list(log or [])
    aside_spans = [s for s in (log_span(p) for p in aside or []) if s]
    per_paper = benchmark_seconds(tree, paused_intervals(pauses) if pauses else None,
                                  earlier_parts(tree, logs, heartbeats) if logs else None, aside_spans)
    if papers is not None:
        per_paper = {k: v for k, v in per_paper.items() if k in papers or k == "data"}
    wall = calls_wall(logs, pauses, heartbeats) if logs else {"wall_s": None}
    if wall.get("calls") == 1 and not wall["paused_s"] and not wall.get("heartbeat_s"):
        wall = {"wall_s": wall["wall_s"]}  # one call, never paused: as before
    return {"per_paper": per_paper, "jobs": sum(v["jobs"] for v in per_paper.values()),
            "predicted_wall_s": {str(c): predicted_wall(per_paper, c) for c in PREDICTED_CORES},
            "job_s": round(sum(v["job_s"] for v in per_paper.values()), 1),
            "cpu_s": round(sum(v["cpu_s"] for v in per_paper.values()), 1),
            **({"earlier_parts": sum(v.get("earlier_parts", 0) for v in per_paper.values())} if logs else {}),
            **wall, **(aside_calls(aside_spans) if aside else {}),
            "timed_at": runs_commit(tree), **machine_time(tree, logs, papers, heartbeats)}


PREDICTED_CORES = (2, 8, 16)


def critical_path(per_paper: dict[str, dict]) -> float:
    """A bound on the run's longest chain of jobs from its jobs' times: each paper's stages run one
    after another (the sum of each stage's longest job), the longest paper's chain, plus the longest
    job of every folder that is no paper's (the datasets before, the report after)."""
    from replikit.papers import paper_names

    chains = {k: sum(v.get("stage_longest_s", {}).values()) for k, v in per_paper.items()}
    papers = set(paper_names())
    return (max((c for k, c in chains.items() if k in papers), default=0.0)
            + sum(c for k, c in chains.items() if k not in papers))


def predicted_wall(per_paper: dict[str, dict], cores: int) -> list[float]:
    """The wall seconds a run of these jobs takes on `cores` one-thread jobs, as [low, high]: at
    least the longest chain and the job seconds shared evenly; at most their sum (a greedy
    scheduler's bound)."""
    path, work = critical_path(per_paper), sum(v["job_s"] for v in per_paper.values()) / cores
    return [round(max(path, work), 1), round(path + work, 1)]


CORES = re.compile(r"^Provided cores: (\d+)$", re.M)


def machine_time(tree: Path, logs: list[Path], papers: set[str] | None = None,
                 heartbeats: Path | None = None) -> dict:
    """The cores Snakemake was given (`cores`: from the run's logs, else every log in the tree's
    .snakemake/log; None when none says), the machine's CPU count (`machine_cpus`: the machine that
    publishes, which must be the run's, as its benchmark files' times are read) and the run's dates
    (`dates`: first and last day, from the calls' spans, each ended at its last heartbeat, else from
    when its benchmark files were written; with `papers`, only theirs)."""
    found = logs or sorted((tree / ".snakemake" / "log").glob("*.log"))
    cores = sorted({int(n) for path in found for n in CORES.findall(path.read_text())})
    if logs:
        spans = [span for span in map(log_span, logs) if span]
        spans = lengthened(spans, heartbeats)
        days = [t for span in spans for t in span]
    else:
        root = tree / "logs" / "benchmarks"
        days = [dt.datetime.fromtimestamp(path.stat().st_mtime) for path in root.rglob("*.tsv")
                if papers is None or path.relative_to(root).parts[0] in papers]
    return {"cores": (cores[0] if len(cores) == 1 else cores) if cores else None,
            "machine_cpus": os.cpu_count(),
            "dates": [min(days).date().isoformat(), max(days).date().isoformat()] if days else None}


def runs_commit(tree: Path) -> str | None:
    """The commit at which a tree's runs were computed (its scorecards' run provenance): the commit its
    timing measures, which may be older than the code that judges a snapshot's verdicts; "several: ..."
    when they differ, None when no scorecard records one."""
    commits = {g["commit"] for p in sorted((tree / "results").glob("*/claims.json"))
               for g in (json.loads(p.read_text()).get("provenance") or {}).get("runs") or []
               if isinstance(g, dict) and g.get("commit")}
    if len(commits) > 1:
        return "several: " + ", ".join(sorted(c[:10] for c in commits))
    return commits.pop() if commits else None


def cards_code(cards: list[dict]) -> tuple[dict[str, str], str, bool]:
    """What computed a set of scorecards: module -> code hash (the runs' modules as their runs record
    them, then the verdicts' own code and the claims job's), the runs' commit ("several: ..." when they
    differ) and whether any of it was uncommitted."""
    code, commits, dirty = {}, set(), False
    for card in cards:
        prov = card.get("provenance") or {}
        for g in prov.get("runs") or []:
            if isinstance(g, dict) and g.get("module") and g.get("code"):
                code[g["module"]] = g["code"]
                commits.add(g.get("commit"))
                dirty |= bool(g.get("dirty"))
        # the verdicts' own code, and the claims job's: a snapshot whose claims code changed since is
        # stale too (a paper whose claims live in its run module keeps the runs' entry, the older)
        if prov.get("script") and prov.get("analysis_code"):
            code.setdefault(prov["script"].rpartition(".")[0], prov["analysis_code"])
            dirty |= bool(prov.get("analysis_uncommitted"))
        if prov.get("claims_job_code"):
            code[CLAIMS_JOB] = prov["claims_job_code"]
    commit = sorted(c for c in commits if c)[0] if len(commits) == 1 else "several: " + ", ".join(
        sorted(str(c)[:10] for c in commits))
    return code, commit, dirty


def publish_scorecard(scale: str, tree: Path, log: Path | list[Path] | None = None, out: Path = PUBLISHED,
                      pauses: Path | None = None, heartbeats: Path | None = None,
                      aside: list[Path] | None = None) -> dict:
    """A scale's snapshot from a run's tree: every scorecard (results/*/claims.json), the code that
    computed its runs and judged its claims (the scorecards' provenance), and what the run took (its
    benchmark files; wall time from its Snakemake log when given). A run that has not finished every
    paper gives a partial snapshot: it names the papers still missing, and it has no wall time (its
    logs, when given, count only the earlier parts of resumed jobs: earlier_parts). `aside`: the logs
    of side calls made while the run was paused (run_time)."""
    from replikit.papers import paper_names
    from replikit.scoring.scorecard_reference import summarize

    cards = [json.loads(p.read_text()) for p in sorted((tree / "results").glob("*/claims.json"))]
    if not cards:
        raise SystemExit(f"no results/*/claims.json under {tree}")
    missing = sorted(set(paper_names()) - {c["paper"] for c in cards})
    code, commit, dirty = cards_code(cards)
    # a partial run's figures cover the papers it has judged (a missing paper's finished jobs would
    # read as its time)
    runtime = run_time(tree, log, pauses, {c["paper"] for c in cards} if missing else None, heartbeats, aside)
    if missing:  # no end to end yet: the logs count a resumed job's earlier parts, not a wall time
        runtime = {k: v for k, v in runtime.items() if k not in ("calls", "paused_s", "heartbeat_s")}
        runtime["wall_s"] = None
    snap = {"kind": "scorecard", "scale": scale,
            "made_by": {"commit": commit, "dirty": dirty, "code": code,
                        "how": f"python -m replikit.tools.publish scorecard {scale} TREE"},
            "papers": _claims(summarize(cards)["papers"], declarations(scale)), "runtime": runtime}
    if missing:
        snap["missing_papers"] = missing
    _write(out / f"scorecard-{scale}.json", snap)
    return snap


def republish(scale: str, tree: Path, out: Path = PUBLISHED) -> dict:
    """A scale's snapshot judged again (`published_runs.rejudge`): its rows from the rejudged tree's
    scorecards, its runs' commit and runtime kept (`made_by`, `runtime`: nothing trained; its code
    hashes: the runs' modules as they ran, the judging code as it is now, so that only a change since
    marks it stale), and the commit that judged them (`judged_by`), named apart when it is not the
    runs' own."""
    from replikit.scoring.scorecard_reference import summarize

    path = out / f"scorecard-{scale}.json"
    old = json.loads(path.read_text())
    cards = [json.loads(p.read_text()) for p in sorted((tree / "results").glob("*/claims.json"))]
    judged = sorted({(c.get("provenance") or {}).get("git_commit") for c in cards} - {None})
    code, _, _ = cards_code(cards)  # the runs' modules as they ran, the judging code as it is now
    made = {**old["made_by"], "code": {**old["made_by"].get("code", {}), **code}}
    snap = {**old, "made_by": made, "papers": _claims(summarize(cards)["papers"], declarations(scale)),
            "judged_by": {"commit": judged[0] if len(judged) == 1 else "several: " + ", ".join(judged),
                          "dirty": any(j.endswith("+dirty") for j in judged),
                          "how": f"python -m replikit.tools.publish rejudge {scale}"}}
    _write(path, snap)
    return snap


def plan_modules() -> list[str]:
    from replikit.papers import paper_names, registry

    return sorted({"replikit.plan.bill"} | {registry.get(n).cost.__module__ for n in paper_names()
                                            if registry.get(n).cost})


def publish_plan(config: str, plan_json: Path | None = None, made_at: str | None = None,
                 out: Path = PUBLISHED) -> dict:
    """The plan's totals per paper and overall (H100 hours, PFLOP, jobs, the longest job) from
    `python -m replikit.plan CONFIG --json` (run here unless `plan_json` holds its output; `made_at`:
    the commit the tree that wrote it was at, which then counts as dirty, its code hashes read from git)."""
    if plan_json is None:
        plan_json = Path(tempfile.mkdtemp()) / "plan.json"
        subprocess.run([sys.executable, "-m", "replikit.plan", config, "--json", str(plan_json)],
                       cwd=REPOSITORY, check=True, stdout=subprocess.DEVNULL)
    jobs = json.loads(plan_json.read_text())
    papers: dict[str, dict] = {}
    for j in jobs:
        p = papers.setdefault(j["paper"], {"jobs": 0, "pflop": 0.0, "h100_h": 0.0, "longest": None})
        p["jobs"] += 1
        p["pflop"] += j["flops"] / 1e15
        p["h100_h"] += j["hours"]["H100"]
        if p["longest"] is None or j["hours"]["H100"] > p["longest"]["h100_h"]:
            p["longest"] = {"run": j["run"], "seed": j["seed"], "h100_h": j["hours"]["H100"]}
    longest = max((dict(p["longest"], paper=n) for n, p in papers.items()), key=lambda x: x["h100_h"])
    total = {"jobs": sum(p["jobs"] for p in papers.values()),
             "pflop": sum(p["pflop"] for p in papers.values()),
             "h100_h": sum(p["h100_h"] for p in papers.values()), "longest": longest}
    modules = plan_modules()
    made = ({"commit": made_at, "dirty": True, "code": code_at(made_at, modules)} if made_at
            else {**git_state(), "code": {m: code_hash(m) for m in modules}})
    snap = {"kind": "plan", "config": config, "accelerator": "H100",
            "made_by": {**made, "how": f"python -m replikit.tools.publish plan {config}"},
            "papers": papers, "total": total, "cpu_peak_flops": round(_cpu_peak())}
    _write(out / f"plan-{Path(config).stem}.json", snap)
    return snap


def _cpu_peak() -> float:
    """This CPU's fp32 matmul FLOP/s on one thread, as the plan measures it (its CPU hours' peak)."""
    from replikit.methods.step_cost import cpu_matmul_flops

    return cpu_matmul_flops()


def publish_dag(config: str, out: Path = PUBLISHED) -> dict:
    """The number of jobs of a scale's whole DAG, from `snakemake -n --configfile CONFIG` (a dry run
    from an empty tree: every job)."""
    with tempfile.TemporaryDirectory() as tmp:
        run = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--snakefile",
                              str(REPOSITORY / "Snakefile"), "--configfile", str(REPOSITORY / config),
                              "--directory", tmp], cwd=REPOSITORY, capture_output=True, text=True, check=True)
    stats = run.stdout.split("Job stats")[-1]
    rows = {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)\s*$", stats, re.M)}
    modules = sorted({"replikit.papers.glue"} | {m for ms in paper_modules().values() for m in ms})
    snap = {"kind": "dag", "config": config, "jobs": rows.pop("total"), "rules": rows,
            "made_by": {**git_state(), "code": {m: code_hash(m) for m in modules},
                        "how": f"python -m replikit.tools.publish dag {config}"}}
    _write(out / f"dag-{Path(config).stem}.json", snap)
    return snap


# The lines of .ci/run's log that time a CI run (publish_setup): its own two, and pytest's summary.
CI_SLURM = re.compile(r"^CI: SLURM test cluster and chromium ready after (\d+) s$", re.M)
CI_DONE = re.compile(r"^CI: finished after (\d+) s \(exit (\d+)\)$", re.M)
PYTEST_DONE = re.compile(r"^(?:=+ )?(?P<summary>\d+ (?:passed|failed|error)[^=\n]*?) in (?P<s>[\d.]+)s"
                         r"(?: \([\d:]+\))?(?: =+)?$", re.M)  # with -q, without its rules


def publish_setup(clone: Path, log: Path, out: Path = PUBLISHED) -> dict:
    """What a fresh machine takes, from the log of `.ci/run` on a fresh clone (`clone`, still at the
    commit it ran): setting up the SLURM test cluster and Chromium, the install (a fresh venv, torch
    and the package with its test extras: CI's time less the other two) and the README's test command
    (pytest's own time)."""
    text = log.read_text()
    slurm, done, tests = CI_SLURM.search(text), CI_DONE.search(text), list(PYTEST_DONE.finditer(text))
    if not (slurm and done and tests):
        raise SystemExit(f"{log} is not the log of a finished .ci/run: it needs the lines 'CI: SLURM test "
                         "cluster and chromium ready after N s', pytest's summary and 'CI: finished after "
                         "N s (exit 0)'")
    if done.group(2) != "0":
        raise SystemExit(f"{log}: that CI run failed (exit {done.group(2)}); publish a run that passed")
    total, slurm_s, tests_s = int(done.group(1)), int(slurm.group(1)), float(tests[-1]["s"])
    when = dt.datetime.fromtimestamp(log.stat().st_mtime, dt.timezone.utc).date().isoformat()
    snap = {"kind": "setup", "ci_s": total, "slurm_s": slurm_s, "install_s": round(total - slurm_s - tests_s),
            "tests_s": round(tests_s), "tests": tests[-1]["summary"], "date": when, "cpus": os.cpu_count(),
            "made_by": {**git_state(clone), "how": "python -m replikit.tools.publish setup CLONE LOG"}}
    _write(out / "setup.json", snap)
    return snap


def snapshot_name(paper: str, ladder: str, rung: str) -> str:
    """`rung-<paper>-<rung>` for a paper's `ladder:`, `rung-<paper>.<name>-<rung>` for `ladder_<name>:`."""
    return f"rung-{paper}{'.' + ladder if ladder else ''}-{rung}"


RUNG_PART_KEYS = ("label", "verdict", "mean", "ci_low", "ci_high", "n_agree", "n_seeds", "p_value")


def publish_rung(paper_name: str, rung_name: str, files: list[str], ladder_name: str = "",
                 out: Path = PUBLISHED) -> dict:
    """A ladder rung's verdicts of its ladder's claims, judged by the pipeline's own claim code from
    committed run records (`metrics.json` copies), at the rung's configuration."""
    from replikit.papers import registry
    from replikit.plan import ladder as lad_mod
    from replikit.plan.bill import load
    from replikit.scoring.claims import evaluate

    ladder = lad_mod.load(paper_name, name=ladder_name)
    rung = next(r for r in ladder.rungs if r.name == rung_name)
    cfg = load([], lad_mod.rung_config(ladder, rung))
    pcfg = cfg[paper_name]
    paper = registry.get(paper_name)
    claims = [c for c in paper.claims(paper.experiments(pcfg), pcfg) if c.id in ladder.claims]
    rows = evaluate(claims, paper.load_results({"metrics": files}), cfg["stats"]["ci_level"],
                    cfg["stats"]["min_seeds"], pcfg)
    records = [json.loads(Path(f).read_text()) for f in files]
    runs = {(r["computed_by"]["module"], r["computed_by"]["code"], r["computed_by"]["commit"])
            for r in records}
    if len(runs) != 1:
        raise SystemExit(f"the runs were computed by more than one code or commit: {sorted(runs)}")
    module, code, commit = runs.pop()
    snap = {"kind": "rung", "paper": paper_name, "ladder": ladder_name, "rung": rung.index, "name": rung.name,
            "knob": rung.knob, "seeds": list(rung.seeds),
            "verdicts": {r["id"]: r["verdict"] for r in rows},
            "parts": {r["id"]: [{k: p.get(k) for k in RUNG_PART_KEYS} for p in r["parts"]] for r in rows},
            "runs": sorted(str(Path(f).resolve().relative_to(REPOSITORY)) for f in files),
            "job_s": round(sum(r.get("elapsed_s", 0.0) for r in records), 1),
            "made_by": {"commit": commit, "dirty": any(r["computed_by"].get("dirty") for r in records),
                        "code": {module: code, paper.claims.__module__: code_hash(paper.claims.__module__)},
                        "how": f"python -m replikit.tools.publish rung {paper_name} {rung_name} RUNS..."
                               + (f" --ladder {ladder_name}" if ladder_name else "")}}
    _write(out / f"{snapshot_name(paper_name, ladder_name, rung_name)}.json", snap)
    return snap


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m replikit.tools.publish",
                                 description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="action", required=True)
    rf = sub.add_parser("reference", help="the smoke snapshot from tests/reference/smoke_scorecard.json")
    rf.add_argument("--tree", type=Path, help="a finished smoke run's output tree: what it took")
    rf.add_argument("--log", type=Path, help="that run's Snakemake log: its wall time")
    sc = sub.add_parser("scorecard", help="a scale's snapshot from a finished run's tree")
    sc.add_argument("scale", choices=SCALES)
    sc.add_argument("tree", type=Path, help="the run's output tree (holds results/ and logs/)")
    sc.add_argument("--log", type=Path, nargs="+", help="the run's Snakemake log (.snakemake/log/...): its "
                    "wall time; a run made in several calls (stopped and resumed) gives each call's log")
    sc.add_argument("--pauses", type=Path, help="JSON lines of {paused: t} / {resumed: t} (unix seconds): "
                    "time the run was paused (SIGSTOP) within its calls, left out of its wall time")
    sc.add_argument("--heartbeats", type=Path, help="JSON lines of {alive: t} (unix seconds), written while "
                    "the run's Snakemake was alive: a call stopped mid-job lasts until its last beat")
    sc.add_argument("--aside", type=Path, nargs="+", help="the Snakemake logs of side calls made while the "
                    "run was paused (--pauses): their jobs count whole, their time is reported apart")
    pl = sub.add_parser("plan", help="the plan's totals")
    pl.add_argument("config")
    pl.add_argument("--plan-json", type=Path, help="reuse `python -m replikit.plan CONFIG --json` output")
    pl.add_argument("--made-at", help="with --plan-json: the commit of the tree that wrote it (counted "
                                      "dirty)")
    dg = sub.add_parser("dag", help="a scale's DAG job count (a dry run)")
    dg.add_argument("config")
    rg = sub.add_parser("rung", help="a ladder rung's verdicts from committed run records")
    rg.add_argument("paper")
    rg.add_argument("rung", help="the rung's name")
    rg.add_argument("runs", nargs="+", help="the rung's runs' metrics.json files (committed copies)")
    rg.add_argument("--ladder", default="", help="a `ladder_<name>:` ladder's name")
    ru = sub.add_parser("runs", help="a finished run's per-run records, committed as "
                                     "docs/published/runs/SCALE.jsonl.gz (tools.published_runs)")
    ru.add_argument("scale", choices=sorted(published_runs.CONFIGS))
    ru.add_argument("tree", type=Path, help="the run's output tree (holds results/)")
    st = sub.add_parser("setup", help="what a fresh machine takes: install and the test command, from the "
                                      "log of .ci/run on a fresh clone")
    st.add_argument("clone", type=Path, help="the fresh clone CI ran in (at the commit it ran)")
    st.add_argument("log", type=Path, help="the output of its .ci/run")
    rj = sub.add_parser("rejudge", help="judge a scale's committed runs again with today's code, redraw its "
                                        "figures and report, and publish its snapshot (trains nothing)")
    rj.add_argument("scale", choices=sorted(published_runs.CONFIGS))
    rj.add_argument("--check", action="store_true", help="publish nothing: list the rows whose verdict, mean "
                    "or interval moved (exit 1 if any)")
    rj.add_argument("--work", type=Path, default=None, help="where to lay the runs out (default: "
                    "scales/rejudge-SCALE/ here; a folder an earlier rejudge made is replaced, any other "
                    "is refused)")
    args = ap.parse_args(argv)
    if args.action == "reference":
        publish_reference(tree=args.tree, log=args.log)
    elif args.action == "scorecard":
        publish_scorecard(args.scale, args.tree, args.log, pauses=args.pauses, heartbeats=args.heartbeats,
                          aside=args.aside)
    elif args.action == "plan":
        publish_plan(args.config, args.plan_json, args.made_at)
    elif args.action == "dag":
        publish_dag(args.config)
    elif args.action == "rung":
        publish_rung(args.paper, args.rung, args.runs, args.ladder)
    elif args.action == "runs":
        published_runs.archive(args.scale, args.tree)
    elif args.action == "setup":
        publish_setup(args.clone, args.log)
    else:
        work = args.work or REPOSITORY / "scales" / f"rejudge-{args.scale}"
        if args.check:
            return published_runs.check(args.scale, work)
        republish(args.scale, published_runs.rejudge(args.scale, work))
    return 0


if __name__ == "__main__":
    sys.exit(main())
