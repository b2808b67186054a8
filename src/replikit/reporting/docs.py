"""Every number a reader sees comes from a run: the generated blocks of README.md and docs/*.md.

A result is published as a small JSON snapshot under `docs/published/` (a scale's scorecard and
runtime, the plan of the paper scale, a DAG's job count), each with the commit and the code hashes
that made it (`made_by`). This module writes every table and count the documents show from those
snapshots, between markers:

    <!-- generated:NAME -->
    ...
    <!-- /generated:NAME -->

A snapshot made by code that has changed since is marked stale in every block that shows it
(`provenance.stale` compares its code hashes with today's).

    python -m replikit.reporting.docs            # rewrite the generated blocks
    python -m replikit.reporting.docs --check    # list the documents that differ (exit 1 if any)

`python -m replikit.tools.publish` writes the snapshots (docs/published/README.md says how and when).
Publishing is a deliberate commit, like the smoke reference's update: rerun the generator after it.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path

from replikit.reporting.provenance import REPOSITORY, code_hash, stale
from replikit.scoring.seed_sets import short_name

PUBLISHED = REPOSITORY / "docs" / "published"
DOCUMENTS = ("README.md", "docs/*.md", "docs/published/README.md")
SCALES = ("smoke", "default", "preflight", "paper")
MARK = re.compile(r"<!-- generated:(?P<name>[\w-]+) -->\n(?P<body>.*?)<!-- /generated:(?P=name) -->",
                  re.S)
VERDICTS = ("replicated", "not replicated", "inconclusive", "not measured")


# ---------------------------------------------------------------- snapshots


def load_snapshots(folder: Path = PUBLISHED) -> dict[str, dict]:
    """Every snapshot in `folder`, by file stem (e.g. `scorecard-smoke`, `plan-paper`)."""
    return {p.stem: json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))}


def _short(module: str) -> str:
    return module.rsplit(".", 1)[-1]


def stale_modules(made_by: dict) -> list[str] | None:
    """The modules whose code has changed since the snapshot was made (`provenance.stale` per module);
    None when the snapshot recorded no code hashes (which code made it is unknown)."""
    code = made_by.get("code")
    if not code:
        return None
    out = []
    for module, digest in sorted(code.items()):
        group = {"module": module, "code": digest, "commit": made_by.get("commit"),
                 "dirty": made_by.get("dirty"), "n_runs": 1, "rule": "-"}
        if stale({"runs": [group]}, {module: code_hash(module)}):
            out.append(module)
    return out


def made_by_line(snapshot: dict, republish: str) -> str:
    """One line: the commit that made a snapshot, and whether its code is today's."""
    made = snapshot["made_by"]
    commit = str(made.get("commit", "unknown"))
    # a run stopped and resumed at later commits ("several: a, b"; the same code, or it reads stale)
    where = (f"commits {commit.removeprefix('several: ')}" if commit.startswith("several: ")
             else f"commit {commit[:10]}")
    where += " with uncommitted changes" if made.get("dirty") else ""
    changed = stale_modules(made)
    judged = _judged_line(snapshot)
    if changed is None:
        return f"Made at {where}; which code made it is unknown (republish: `{republish}`).{judged}"
    if not changed:
        return f"Made at {where} by today's code.{judged}"
    names = f" ({', '.join(f'`{_short(m)}`' for m in changed)})" if len(changed) <= 3 else ""
    return (f"**Stale:** made at {where}; the code of {len(changed)} of its {len(made['code'])} "
            f"modules has changed since{names}; republish: `{republish}`.{judged}")


def _judged_line(snapshot: dict) -> str:
    """" Its runs judged again at commit Y ..." for a snapshot rejudged from its committed runs by other
    code than made them (`judged_by`, tools.published_runs); "" else."""
    judged = snapshot.get("judged_by")
    if not judged or str(judged.get("commit")) == str(snapshot["made_by"].get("commit")):
        return ""
    dirty = " with uncommitted changes" if judged.get("dirty") else ""
    return (f" Its committed runs were judged again at commit {str(judged['commit'])[:10]}{dirty} "
            f"(`{judged['how']}`).")


def partial_line(snapshot: dict) -> str:
    """" Partial: ..." for a scorecard snapshot of a run that has not finished every paper; "" else."""
    missing = snapshot.get("missing_papers") or []
    if not missing:
        return ""
    return (f" **Partial:** the run has not finished; {len(snapshot['papers'])} papers are in it, "
            f"{len(missing)} not yet ({', '.join(missing)}).")


def machine_lines(snapshot: dict) -> list[str]:
    """The machine and kernel level the snapshot's runs were computed at (the smoke reference's
    `machine`); [] when none is recorded."""
    where = snapshot.get("machine")
    if not where:
        return []
    return [f"Computed on {where}. Every job pins its kernels (replikit.core.numerics), so another "
            "Intel x86-64 CPU with AVX2 computes the same numbers; another vendor's CPU is marked as of "
            "another kernel level."]


# ---------------------------------------------------------------- blocks


def _counts(claims: dict) -> dict[str, collections.Counter]:
    """kind -> verdict -> count (a claim without parts counts as `not measured`)."""
    out: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for row in claims.values():
        out[row["kind"]][row["verdict"] if row["measured"] else "not measured"] += 1
    return out


def _say(counter: collections.Counter) -> str:
    return ", ".join(f"{counter[v]} {v}" for v in VERDICTS if counter[v]) or "none"


def _all_claims(snap: dict) -> dict:
    return {f"{p}/{cid}": row for p, claims in snap["papers"].items() for cid, row in claims.items()}


def _scorecards(snaps: dict) -> list[tuple[str, dict]]:
    return [(s, snaps[f"scorecard-{s}"]) for s in SCALES if f"scorecard-{s}" in snaps]


KIND_WORDS = {"paper": "the papers' own findings, each with a falsifier (replications)",
              "cannot discriminate": "the papers' findings whose falsifier reads replicated too (cannot "
                                     "discriminate)",
              "falsifier inconclusive": "the papers' findings whose falsifier is inconclusive and not "
                                        "significantly different from them (falsifier inconclusive)",
              "falsifier not measured": "the papers' findings whose falsifier gives no evidence here "
                                        "(falsifier not measured)",
              "falsifier fixed by its pilot": "the papers' findings whose falsifier reads the statistic "
                                              "whose pilot value sized the margin (falsifier fixed by its "
                                              "pilot)",
              "falsifier of our construction": "the papers' findings whose falsifier's setting is ours, "
                                               "not the paper's contrast (falsifier of our construction)",
              "falsifier outcome known before": "the papers' findings whose falsifier's outcome was known "
                                                "before the verdict runs (falsifier outcome known before)",
              "changed after its seeds were seen": "the papers' findings changed since their registration "
                                                   "(changed after its seeds were seen)",
              "known from its pilot": "the papers' findings whose pilot ran at their verdict settings "
                                      "(known from its pilot)",
              "seen seeds only": "the papers' findings judged only on seeds seen before their margin, "
                                 "statistic or settings were fixed (seen seeds only)",
              "check": "checks (hold by construction)",
              "background": "background", "hypothesis": "hypotheses of ours"}


def block_verdict_summary(snaps: dict) -> str:
    from replikit.scoring.stability import fragile

    lines = []
    for scale, snap in _scorecards(snaps):
        by_kind = _counts(_all_claims(snap))
        total = sum(sum(c.values()) for c in by_kind.values())
        parts = "; ".join(f"{KIND_WORDS[k]}: {_say(by_kind[k])}" for k in KIND_WORDS if by_kind[k])
        lines.append(f"- **{scale.capitalize()}**, {total} claims: {parts}. "
                     + made_by_line(snap, snap["made_by"]["how"]) + partial_line(snap))
    published = {s for s, _ in _scorecards(snaps)}
    for scale in ("smoke", "default"):
        if scale not in published:
            lines.append(f"- **{scale.capitalize()}**: no published scorecard yet "
                         f"(`python -m replikit.tools.publish scorecard {scale} TREE`).")
    lines += ["", "| paper | " + " | ".join(s for s, _ in _scorecards(snaps)) + " |",
              "|---|" + "---|" * len(_scorecards(snaps))]
    papers = sorted({p for _, snap in _scorecards(snaps) for p in snap["papers"]})
    for p in papers:
        cells = []
        for _, snap in _scorecards(snaps):
            claims = snap["papers"].get(p, {})
            groups = collections.defaultdict(list)
            for cid, row in claims.items():
                tags = [row["kind"]] if row["kind"] != "paper" else []
                if row.get("seen_only") and row["kind"] != "seen seeds only":  # counted by its other kind
                    tags.append("seen seeds only")
                if fragile(row_stability(row)):
                    tags.append("fragile")
                tag = f" ({'; '.join(tags)})" if tags else ""
                groups[row["verdict"] if row["measured"] else "not measured"].append(cid + tag)
            cells.append("; ".join(f"{v} {', '.join(groups[v])}" for v in VERDICTS if groups[v]) or "-")
        lines.append(f"| {p} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _fmt_mean(x: float | None) -> str:
    return "n/a" if x is None else f"{x:+.3f}"


BOUND = re.compile(r"\s*[<>]=?\s*[-+]?[\d.]+(?:e[-+]?\d+)?$")


def _evidence(part: dict) -> str:
    """A part's mean, with its interval and agreeing seeds where the snapshot holds them (snapshots from
    before they did hold the mean only; a rung's parts name the interval `ci_low`, `ci_high`), e.g.
    `+0.033 [+0.028, +0.038], 5/5 seeds`."""
    text = _fmt_mean(part["mean"])
    low, high = part.get("ci") or [part.get("ci_low"), part.get("ci_high")]
    if low is not None and high is not None:
        text += f" [{_fmt_mean(low)}, {_fmt_mean(high)}]"
    if part.get("n_seeds"):
        text += f", {part.get('n_agree')}/{part['n_seeds']} seeds"
    return text


def _means(parts: dict) -> list[str]:
    """Each part's mean (and interval: `_evidence`); the two bounds of an equivalence (parts whose labels
    differ only in their trailing "< m" / "> -m") judge one statistic, so their mean is said once,
    "(both bounds)"."""
    out: list[tuple[str, str, int]] = []
    for label, part in parts.items():
        key, text = BOUND.sub("", label), _fmt_mean(part["mean"])
        text = text if BOUND.search(label) else _evidence(part)
        if out and out[-1][:2] == (key, text) and BOUND.search(label):
            out[-1] = (key, text, out[-1][2] + 1)
        else:
            out.append((key, text, 1))
    return [text + (" (both bounds)" if n == 2 else f" ({n} parts)" if n > 2 else "") for _, text, n in out]


def block_scorecard_table(snaps: dict, scale: str) -> str:
    snap = snaps.get(f"scorecard-{scale}")
    if snap is None:
        return (f"No published {scale} scorecard yet: `python -m replikit.tools.publish scorecard "
                f"{scale} TREE` after a finished run, then `python -m replikit.reporting.docs`.")
    lines = [made_by_line(snap, snap["made_by"]["how"]) + partial_line(snap), ""]
    machines = machine_lines(snap)
    if machines:
        lines += [" ".join(machines), ""]
    lines += ["| claim | kind | verdict | ours: mean per part [interval], seeds that agree (an equivalence's "
              "two bounds: the mean, once) |",
              "|---|---|---|---|"]
    for claims in snap["papers"].values():
        for cid, row in claims.items():
            verdict = row["verdict"] if row["measured"] else "not measured"
            if row.get("seed_sets"):  # the headline's seeds, then the other set's with its verdict
                sets = sorted(row["seed_sets"], key=lambda s: not s["headline"])
                named = [f"{short_name(s)} {_seed_range(s['seeds'])}" + ("" if s["headline"] else
                                                                         f": {s['verdict']}") for s in sets]
                verdict += " (" + "; ".join(named) + ")"
            if row.get("seen_only"):  # config key <paper>.seen_seeds: no fresh seeds at this scale
                verdict += " (seen seeds only)"
            means = "; ".join(_means(row["parts"])) or "-"
            lines.append(f"| {cid} | {row['kind']} | {verdict} | {means} |")
    return "\n".join(lines)


def block_claim_statements(snaps: dict) -> str:
    """Every claim of the smoke snapshot (it holds every declared claim) with what it states, by paper."""
    snap = snaps["scorecard-smoke"]
    lines = ["| paper | claim | kind | what it states |", "|---|---|---|---|"]
    for paper, claims in snap["papers"].items():
        for cid, row in claims.items():
            kind = row["kind"] if row["kind"] in ("hypothesis", "background") else "the paper's own"
            lines.append(f"| {paper} | {cid} | {kind} | {row.get('statement') or '-'} |")
    return "\n".join(lines)


def block_claim_counts(snaps: dict) -> str:
    snap = snaps["scorecard-smoke"]
    by_kind = collections.Counter(row["kind"] for row in _all_claims(snap).values())
    own = {"paper": "replications", "cannot discriminate": "that cannot discriminate", "check": "checks",
           "falsifier inconclusive": "with their falsifier inconclusive",
           "falsifier not measured": "with their falsifier not measured",
           "falsifier fixed by its pilot": "with their falsifier fixed by its pilot",
           "known from its pilot": "known from their pilot",
           "changed after its seeds were seen": "changed after their seeds were seen",
           "falsifier of our construction": "with a falsifier of our construction",
           "falsifier outcome known before": "with their falsifier's outcome known before",
           "seen seeds only": "on seen seeds only"}
    split = ", ".join(f"{by_kind[k]} {w}" for k, w in own.items() if by_kind[k])
    return (f"{sum(by_kind.values())} claims: {sum(by_kind[k] for k in own)} state a paper's own finding "
            f"({split}), "
            f"{by_kind['background']} quote background and {by_kind['hypothesis']} are hypotheses of ours "
            "(counted from the published smoke scorecard: kinds from the declarations; \"cannot "
            "discriminate\", \"falsifier inconclusive\" and \"falsifier not measured\" from its verdicts; "
            "\"fixed by its pilot\" from the falsifiers' `sized_by_pilot`; \"known from their pilot\" from "
            "the claims' `known_from_pilot`; the falsifiers' origins from their `origin`; \"on seen seeds "
            "only\" from the smoke scale's `seen_seeds`).")


def _hours(h: float) -> str:
    return f"{h:,.1f}" if h >= 0.1 else "under 0.1"


def block_plan_total(snaps: dict) -> str:
    plan = snaps["plan-paper"]
    t = plan["total"]
    return (f"The paper scale is priced at **{_hours(t['h100_h'])} H100-hours** in all "
            f"({t['h100_h'] / 24:,.1f} days on one H100, one job after another): {t['jobs']:,} "
            f"training jobs of all {len(plan['papers'])} papers, {t['pflop']:,.1f} PFLOP "
            f"(`python -m replikit.plan {plan['config']}`), predicted by its FLOP and launch model. The few "
            "real steps measured on a lent H200 ran slower than predicted, so it is likely an underestimate "
            "([Planning the paper scale](docs/planning-the-paper-scale.md)). "
            + made_by_line(plan, plan["made_by"]["how"]))


def block_plan_table(snaps: dict) -> str:
    plan = snaps["plan-paper"]
    lines = [made_by_line(plan, plan["made_by"]["how"]), "",
             "| paper | jobs | PFLOP | H100-hours | longest job (H100-hours) |", "|---|---|---|---|---|"]
    for name, p in sorted(plan["papers"].items()):
        top = p["longest"]
        lines.append(f"| {name} | {p['jobs']:,} | {p['pflop']:,.1f} | {_hours(p['h100_h'])} | "
                     f"`{top['run']}` seed {top['seed']} ({_hours(top['h100_h'])}) |")
    t = plan["total"]
    lines.append(f"| **all** | {t['jobs']:,} | {t['pflop']:,.1f} | {_hours(t['h100_h'])} | "
                 f"{t['longest']['paper']} ({_hours(t['longest']['h100_h'])}) |")
    return "\n".join(lines)


def block_longest_job(snaps: dict) -> str:
    plan = snaps["plan-paper"]
    longest = plan["total"]["longest"]
    return (f"The plan's longest job is {longest['paper']}'s `{longest['run']}` (seed {longest['seed']}): "
            f"{_hours(longest['h100_h'])} H100-hours predicted. "
            + made_by_line(plan, plan["made_by"]["how"]))


def block_preflight_jobs(snaps: dict) -> str:
    dag = snaps["dag-preflight"]
    jobs = dag["jobs"] - dag.get("rules", {}).get("all", 0)  # as the runtime lines count: the jobs that work
    return (f"The preflight's DAG has {jobs:,} jobs, the `all` target not counted, as the runtime lines "
            f"count (`snakemake -n --configfile {dag['config']}` from an empty tree). "
            + made_by_line(dag, dag["made_by"]["how"]))


def _minutes(s: float) -> str:
    return f"{s / 60:,.1f} min"


def timed_at(snap: dict) -> str:
    """The runtime line's suffix ", timed on a run at commit X" when a snapshot's timing comes from a run
    at another commit than the code that judged its verdicts (a time is not re-measured each time the
    claims are judged again); "" otherwise."""
    when, made = snap["runtime"].get("timed_at"), str(snap["made_by"].get("commit"))
    if not when or when == made:
        return ""
    return f", timed on a run at commit {when[:10]}" if not when.startswith(
        "several") else f", timed on runs at {when}"


def block_runtimes(snaps: dict) -> str:
    lines = []
    for scale in SCALES:
        snap = snaps.get(f"scorecard-{scale}")
        rt = (snap or {}).get("runtime")
        if scale == "paper" and "plan-paper" in snaps:
            plan = snaps["plan-paper"]
            lines.append(f"- **paper**: not run here; planned at {_hours(plan['total']['h100_h'])} "
                         "H100-hours (see [Planning the paper scale](docs/planning-the-paper-scale.md)). "
                         + made_by_line(plan, plan["made_by"]["how"]))
        elif rt and rt.get("wall_s"):
            calls = f" in {rt['calls']} calls (stopped and resumed)" if rt.get("calls", 1) > 1 else ""
            calls += ", pauses left out" if rt.get("paused_s") else ""
            calls += ", a call stopped mid-job ended at its last heartbeat" if rt.get("heartbeat_s") else ""
            resumed = f"; {resumed_words(rt)}" if rt.get("calls", 1) > 1 else ""
            calls += aside_words(rt)
            lines.append(f"- **{scale}**: {_minutes(rt['wall_s'])} end to end{calls} ({rt['jobs']:,} jobs, "
                         f"{rt['job_s'] / 3600:,.2f} job-hours{_longest_paper(rt, snap)}{resumed})"
                         f"{machine_words(rt)}{timed_at(snap)}.{predicted_words(rt)} "
                         + made_by_line(snap, snap["made_by"]["how"]))
        elif rt:
            finished = " of the finished papers" if snap.get("missing_papers") else ""
            lines.append(f"- **{scale}**: not yet timed end to end; the {rt['jobs']:,} jobs{finished} took "
                         f"{rt['job_s'] / 3600:,.2f} job-hours{_longest_paper(rt, snap)} "
                         f"({resumed_words(rt)}{aside_words(rt)}){machine_words(rt)}. "
                         + made_by_line(snap, snap["made_by"]["how"]) + partial_line(snap))
        else:
            lines.append(f"- **{scale}**: not yet timed end to end in a published run.")
    return "\n".join([*lines, block_setup(snaps)])


def predicted_words(runtime: dict) -> str:
    """" Predicted from its jobs' times: 2 cores 50-70 min, 8 cores ..." (publish.predicted_wall: at
    least the longest chain and the work shared evenly, at most their sum); "" without them."""
    walls = runtime.get("predicted_wall_s")
    if not walls:
        return ""
    return (" Predicted from its jobs' times, between the longest chain of jobs and the work shared "
            "evenly (and their sum): " + ", ".join(f"{c} cores {lo / 60:,.0f}-{hi / 60:,.0f} min"
                                                 for c, (lo, hi) in walls.items()) + ".")


def resumed_words(runtime: dict) -> str:
    """How a job stopped at a session's end and resumed in a later call is counted: every part its
    run record says it went on from (publish.earlier_parts), or, in a snapshot that predates that, its
    last attempt only (a benchmark file holds one)."""
    if "earlier_parts" not in runtime:
        return "a resumed job counts its last attempt"
    n = runtime["earlier_parts"]
    if not n:
        return "no job's run record counts a part from an earlier call"
    parts = f"{n:,} earlier part{'s' if n != 1 else ''}"
    return (f"a job resumed from its checkpoint counts every part: {parts}, each until its call ended "
            "or it failed")


def aside_words(runtime: dict) -> str:
    """", and 2 side calls of 9.3 min made while the run was paused, not in its wall time": the side
    calls (publish.aside_calls) whose jobs the job-hours count; "" for none."""
    n = runtime.get("aside_calls")
    if not n:
        return ""
    calls = f"{n} side call{'s' if n != 1 else ''} of {_minutes(runtime['aside_s'])}"
    return f", and {calls} made while the run was paused, not in its wall time"


def machine_words(runtime: dict) -> str:
    """", on 2 cores of a 2-CPU machine, 2026-11-29 to 2026-11-30": the cores the run was given, the
    machine's CPUs and the run's dates, as far as the snapshot records them ("" for none)."""
    cores, cpus, dates = runtime.get("cores"), runtime.get("machine_cpus"), runtime.get("dates")
    words = []
    if cores:
        given = (f"{cores} cores" if isinstance(cores, int)
                 else f"{'/'.join(map(str, cores))} cores (calls differ)")
        words.append(given + (f" of a {cpus}-CPU machine" if cpus else ""))
    if dates:
        words.append(dates[0] if dates[0] == dates[1] else f"{dates[0]} to {dates[1]}")
    return ", on " + ", ".join(words) if words else ""


def _longest_paper(runtime: dict, snap: dict) -> str:
    """The paper whose jobs took the most job-hours, as ", of which <paper> <job-hours>", and
    induction heads' where it is not that paper (IH-1's runs, hours a seed on one core: issue 64 asks
    for their time here); "" without a per-paper breakdown. A paper a partial snapshot misses is left
    out: its finished jobs are not its time."""
    papers = {path.stem for path in (REPOSITORY / "config" / "papers").glob("*.yaml")}
    papers -= set(snap.get("missing_papers") or [])
    per = {p: r for p, r in (runtime.get("per_paper") or {}).items() if p in papers}
    if not per:
        return ""
    name = max(per, key=lambda p: per[p]["job_s"])
    text = f", of which {name} {per[name]['job_s'] / 3600:,.2f}"
    if name != "induction_heads" and "induction_heads" in per:
        text += f" and induction_heads {per['induction_heads']['job_s'] / 3600:,.2f}"
    return text


def block_default_cost(snaps: dict) -> str:
    """Per paper, what the published default run cost (its jobs' CPU-hours, the longest job) and how
    fast its training jobs computed: the plan's training FLOPs at the default (plan-config) over the
    CPU seconds of the stage the plan prices (`train_cpu_s`), against the CPU's one-thread matmul peak
    the plan measured. The training jobs' time also holds evaluation and start-up, so the rate is a
    floor on the step's."""
    run = (snaps.get("scorecard-default") or {}).get("runtime") or {}
    per = run.get("per_paper") or {}
    plan = snaps.get("plan-config") or {}
    peak = plan.get("cpu_peak_flops")
    if not per or "longest_s" not in next(iter(per.values())):
        return "No published default run records its jobs' longest time yet."
    lines = ["| paper | jobs | CPU-hours | longest job (min) | training PFLOP (plan) | training GFLOP/s | "
             "of the CPU's peak |", "|---|---|---|---|---|---|---|"]
    for name in sorted(per):
        r = per[name]
        flop = (plan.get("papers") or {}).get(name, {}).get("pflop")
        train_s = r.get("train_cpu_s")
        rate = flop * 1e15 / train_s if flop is not None and train_s else None
        lines.append(f"| {name} | {r['jobs']} | {r['cpu_s'] / 3600:,.2f} | {r['longest_s'] / 60:,.1f} | "
                     + (f"{flop:,.3f}" if flop is not None else "-") + " | "
                     + (f"{rate / 1e9:,.2f}" if rate else "-") + " | "
                     + (f"{rate / peak:.1%}" if rate and peak else "-") + " |")
    lines.append("")
    lines.append("The CPU's peak: " + (f"{peak / 1e9:,.1f} GFLOP/s (fp32 matmul, one thread, measured by "
                                       f"`{plan['made_by']['how']}`)" if peak else "not yet measured")
                  + ". Training FLOPs count the training steps only; their time also holds evaluation "
                  "and each job's start-up, so the rate is a floor. CPU-hours: each job's own CPU seconds "
                  "where its log records them (`replikit.core.job_cpu`), else Snakemake's `cpu_time`, "
                  "sampled every 30 s after a job's first 15 s, which misses up to the last 30 s of each "
                  "job.")
    return "\n".join(lines)


def _rungs() -> list[dict]:
    """Every rung declared in config/papers/*.yaml: paper, ladder, number, name, knob, seeds."""
    import yaml

    out = []
    for path in sorted((REPOSITORY / "config" / "papers").glob("*.yaml")):
        data = yaml.safe_load(path.read_text())
        for key in sorted(k for k in data if k == "ladder" or k.startswith("ladder_")):
            ladder = data[key]
            seeds = ladder.get("seeds", [])
            name = key.removeprefix("ladder").removeprefix("_")
            out.append({"paper": path.stem, "ladder": name, "rung": 0, "name": ladder["base"], "knob": "-",
                        "seeds": seeds, "claims": ladder.get("claims", [])})
            for i, r in enumerate(ladder.get("rungs", []), 1):
                out.append({"paper": path.stem, "ladder": name, "rung": i, "name": r["name"],
                            "knob": r["knob"], "seeds": r.get("seeds", seeds),
                            "claims": ladder.get("claims", [])})
    return out


def _seed_range(seeds: list[int]) -> str:
    return f"{seeds[0]}-{seeds[-1]}" if seeds and seeds == list(range(seeds[0], seeds[-1] + 1)) else \
        ", ".join(map(str, seeds))


def block_ladder_rungs(snaps: dict) -> str:
    lines = ["| paper | ladder | rung | knob | seeds | claims | verdicts |", "|---|---|---|---|---|---|---|"]
    for r in _rungs():
        snap = snaps.get(f"rung-{r['paper']}{'.' + r['ladder'] if r['ladder'] else ''}-{r['name']}")
        if snap:
            verdicts = "; ".join(
                f"{cid} {v} (" + ", ".join(f"{_fmt_mean(p['mean'])} [{p['ci_low']:+.3f}, {p['ci_high']:+.3f}]"
                                           for p in snap["parts"][cid]) + ")"
                for cid, v in snap["verdicts"].items())
            verdicts += "; " + made_by_line(snap, snap["made_by"]["how"])
        else:
            verdicts = "no published result"
        lines.append(f"| {r['paper']} | {r['ladder'] or 'main'} | {r['rung']} {r['name']} | {r['knob']} | "
                     f"{_seed_range(r['seeds'])} | {', '.join(r['claims'])} | {verdicts} |")
    return "\n".join(lines)


def block_published_runs(snaps: dict) -> str:
    """The committed runs behind the snapshots (docs/published/runs/, tools.published_runs): their
    files, size per scale and in all, measured from the files themselves."""
    import gzip

    archives = sorted((PUBLISHED / "runs").glob("*.jsonl.gz"))
    if not archives:
        return "No runs committed yet."
    lines = ["| runs of | files | size (MB, compressed) | judged again by |", "|---|---|---|---|"]
    for path in archives:
        with gzip.open(path, "rt") as f:
            n = sum(1 for line in f if line.strip())
        scale = path.name.removesuffix(".jsonl.gz")
        lines.append(f"| {scale} | {n:,} | {path.stat().st_size / 1e6:.2f} | "
                     f"`python -m replikit.tools.publish rejudge {scale}` |")
    total = sum(p.stat().st_size for p in archives) / 1e6
    rung_runs = sorted({r for snap in snaps.values() if snap.get("kind") == "rung"
                        for r in snap.get("runs", [])})
    rung_mb = sum((REPOSITORY / r).stat().st_size for r in rung_runs if (REPOSITORY / r).is_file()) / 1e6
    lines += ["", f"In all {total:.2f} MB, of a budget of 15 MB; the published rungs' runs, committed as "
              f"their records under docs/measurements/, add {len(rung_runs)} files of {rung_mb:.2f} MB."]
    return "\n".join(lines)


def _cell(row: dict | None) -> str:
    if row is None:
        return "-"
    verdict = row["verdict"] if row.get("measured", True) else "not measured"
    kind = row.get("kind")
    return verdict + (f" ({kind})" if kind and kind != "paper" else "")


def _first_part(parts: dict | list) -> str:
    """The evidence of a row's first part (a scorecard's parts by label, a rung's as a list)."""
    return _evidence(next(iter(parts.values())) if isinstance(parts, dict) else parts[0])


def across_scales(snaps: dict) -> tuple[list[str], list[list[str]]]:
    """One table across scales (the columns, then a row per claim): each claim's paper and id, its
    verdict and standing at every published scale and rung, and its strongest evidence: the published
    result nearest the paper's own settings that measured it (a rung before the default, the default
    before smoke), with its first part's mean and interval and where it comes from."""
    scales = _scorecards(snaps)
    rungs = [(name.removeprefix("rung-"), snap) for name, snap in sorted(snaps.items())
             if snap.get("kind") == "rung"]
    head = ["paper", "claim", *(s for s, _ in scales), *(f"rung {n}" for n, _ in rungs), "strongest evidence"]
    papers: dict[str, list[str]] = {}
    for _, snap in scales:
        for paper, claims in snap["papers"].items():
            papers.setdefault(paper, [])
            papers[paper] += [c for c in claims if c not in papers[paper]]
    rows = []
    for paper, ids in papers.items():
        for cid in ids:
            cells = [_cell(snap["papers"].get(paper, {}).get(cid)) for _, snap in scales]
            cells += [snap["verdicts"][cid] if snap["paper"] == paper and cid in snap["verdicts"] else "-"
                      for _, snap in rungs]
            rows.append([paper, cid, *cells, _strongest(paper, cid, scales, rungs)])
    return head, rows


def _strongest(paper: str, cid: str, scales: list, rungs: list) -> str:
    for name, snap in reversed(rungs):
        if snap["paper"] == paper and cid in snap["verdicts"]:
            return f"rung {name}: {snap['verdicts'][cid]}, {_first_part(snap['parts'][cid])}"
    for scale, snap in reversed(scales):
        row = snap["papers"].get(paper, {}).get(cid)
        if row and row.get("measured", True) and row["parts"]:
            return f"{scale}: {row['verdict']}, {_first_part(row['parts'])}"
    return "not measured at any published scale"


def block_across_scales(snaps: dict) -> str:
    head, rows = across_scales(snaps)
    made = [f"- {scale}: " + made_by_line(snap, snap["made_by"]["how"]) for scale, snap in _scorecards(snaps)]
    made += [f"- rung {name.removeprefix('rung-')}: " + made_by_line(snap, snap["made_by"]["how"])
             for name, snap in sorted(snaps.items()) if snap.get("kind") == "rung"]
    return "\n".join(["| " + " | ".join(head) + " |", "|" + "---|" * len(head),
                      *("| " + " | ".join(r) + " |" for r in rows), "", *made])


def block_margins(snaps: dict) -> str:
    """Every equivalence margin and tolerance at the smoke and default scales, read from
    config/papers/*.yaml (keys `margins` and `*_tolerance`), with the pilot file named beside it."""
    import yaml

    lines = ["| paper | key | smoke | default |", "|---|---|---|---|"]
    for path in sorted((REPOSITORY / "config" / "papers").glob("*.yaml")):
        data = yaml.safe_load(path.read_text())
        keys = sorted({k for scale in ("smoke", "default") for k in (data.get(scale) or {})
                       if k == "margins" or k.endswith("_tolerance")})
        for key in keys:
            cells = []
            for scale in ("smoke", "default"):
                value = (data.get(scale) or {}).get(key)
                cells.append("-" if value is None else ", ".join(f"{k} {v:g}" for k, v in value.items())
                             if isinstance(value, dict) else f"{value:g}")
            lines.append(f"| {path.stem} | `{key}` | {cells[0]} | {cells[1]} |")
    pilots = sorted(p.name for p in (REPOSITORY / "config" / "pilots").glob("*.json"))
    lines += ["", "The pilots that fixed them: " + ", ".join(f"`config/pilots/{p}`" for p in pilots) + "."]
    return "\n".join(lines)


def row_stability(row: dict) -> float | None:
    """A published row's stability: its own, drawn jointly (replikit.scoring.claims.row_stability), or,
    in a snapshot written before rows had one, its least stable part's."""
    if "stability" in row:
        return row["stability"]
    known = [p["stability"] for p in row["parts"].values() if p.get("stability") is not None]
    return min(known, default=None)


def block_fragile(snaps: dict) -> str:
    """Every row of a published scorecard whose stability (the chance that 5 fresh seeds leave it where
    it stands, replikit.scoring.stability) is below the fragile line."""
    from replikit.scoring.stability import FRAGILE_BELOW, fragile

    lines = []
    for scale in SCALES:
        snap = snaps.get(f"scorecard-{scale}")
        if snap is None:
            continue
        rows = [f"| {scale} | {cid} | {row['verdict']} | {row['kind']} | {row_stability(row):.2f} |"
                for claims in snap["papers"].values() for cid, row in claims.items()
                if fragile(row_stability(row))]
        known = any(row_stability(row) is not None for claims in snap["papers"].values()
                    for row in claims.values())
        if not known:
            lines.append(f"The published {scale} scorecard holds no stability yet.")
        elif rows:
            lines += [f"Rows whose stability is below {FRAGILE_BELOW:g} at the {scale} scale:", "",
                      "| scale | claim | verdict | standing | stability |", "|---|---|---|---|---|", *rows,
                      ""]
        else:
            lines.append(f"No row of the {scale} scale is fragile.")
    return "\n".join(lines).strip() or "No published scorecard yet."


def block_setup(snaps: dict) -> str:
    """What a fresh machine takes to install and to run the test command (the `setup` snapshot, from
    .ci/run's log on a fresh clone)."""
    s = snaps.get("setup")
    if not s:
        return "- **install and tests**: not yet measured on a fresh clone."
    made = s["made_by"]
    where = f"commit {str(made['commit'])[:10]}" + (" with uncommitted changes" if made.get("dirty") else "")
    return (f"- **install and tests**: on a fresh clone at {where} ({s['date']}, a {s['cpus']}-CPU machine), "
            "the install (a fresh venv, torch from local disk, the package with its test extras) took "
            f"{_minutes(s['install_s'])} and its tests {_minutes(s['tests_s'])} ({s['tests']}); "
            f"CI took {_minutes(s['ci_s'])} in all, of which {_minutes(s['slurm_s'])} set up the SLURM "
            f"test cluster and Chromium (`.ci/run`; `{made['how']}`).")


BLOCKS: dict[str, Callable[[dict], str]] = {
    "fragile": block_fragile,
    "verdict-summary": block_verdict_summary,
    "smoke-verdicts": lambda s: block_scorecard_table(s, "smoke"),
    "default-verdicts": lambda s: block_scorecard_table(s, "default"),
    "claim-counts": block_claim_counts,
    "claim-statements": block_claim_statements,
    "plan-total": block_plan_total,
    "plan-table": block_plan_table,
    "longest-job": block_longest_job,
    "preflight-jobs": block_preflight_jobs,
    "runtimes": block_runtimes,
    "default-cost": block_default_cost,
    "ladder-rungs": block_ladder_rungs,
    "margins": block_margins,
    "published-runs": block_published_runs,
    "across-scales": block_across_scales,
}


def documents(root: Path = REPOSITORY) -> list[Path]:
    return [p for pattern in DOCUMENTS for p in sorted(root.glob(pattern))]


def render(text: str, snaps: dict, where: str = "") -> str:
    """`text` with every generated block rewritten from `snaps`; an unknown block name is an error."""
    def body(m: re.Match) -> str:
        name = m.group("name")
        if name not in BLOCKS:
            raise KeyError(f"{where}: unknown generated block {name!r}; known: {', '.join(BLOCKS)}")
        content = BLOCKS[name](snaps)
        if where.startswith("docs/"):
            content = content.replace("](docs/", "](")
        return f"<!-- generated:{name} -->\n{content}\n<!-- /generated:{name} -->"

    return MARK.sub(body, text)


def differing(root: Path = REPOSITORY, published: Path = PUBLISHED) -> dict[Path, str]:
    """path -> what the generator would write, for each document whose generated blocks differ."""
    snaps = load_snapshots(published)
    out = {}
    for path in documents(root):
        text = path.read_text()
        new = render(text, snaps, str(path.relative_to(root)))
        if new != text:
            out[path] = new
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m replikit.reporting.docs",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="list the documents that differ; write nothing")
    args = ap.parse_args(argv)
    diff = differing()
    for path, text in diff.items():
        if args.check:
            print(f"{path.relative_to(REPOSITORY)}: stale; run python -m replikit.reporting.docs")
        else:
            path.write_text(text)
            print(f"rewrote {path.relative_to(REPOSITORY)}")
    return 1 if args.check and diff else 0


if __name__ == "__main__":
    sys.exit(main())
