"""A run's wall time when it was made in several Snakemake calls (stopped at the end of a session and
resumed in the next) and paused within them (SIGSTOP, so that other work had the cores): the calls'
spans summed, less the pauses that fall inside them (`python -m replikit.tools.publish scorecard
SCALE TREE --log LOG... --pauses FILE`)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from replikit.tools import publish


def _log(path: Path, *stamps: dt.datetime) -> Path:
    path.write_text("".join(f"[{t.strftime('%a %b %d %H:%M:%S %Y')}]\nrule x:\n" for t in stamps))
    return path


def _pauses(path: Path, *pairs: tuple[dt.datetime, dt.datetime]) -> Path:
    lines = [json.dumps(event) for a, b in pairs for event in ({"paused": a.timestamp()},
                                                               {"resumed": b.timestamp()})]
    path.write_text("\n".join(lines) + "\n")
    return path


T0 = dt.datetime(2026, 11, 29, 9, 0, 0)


def _at(minutes: float) -> dt.datetime:
    return T0 + dt.timedelta(minutes=minutes)


def test_two_calls_sum_and_the_pauses_inside_them_are_left_out(tmp_path):
    first = _log(tmp_path / "a.log", _at(0), _at(30), _at(60))  # 60 min
    second = _log(tmp_path / "b.log", _at(200), _at(240))  # 40 min, after a gap between sessions
    # 10 min paused in the first call, 5 in the second, 20 between the calls (not run time at all)
    pauses = _pauses(tmp_path / "p.jsonl", (_at(10), _at(20)), (_at(100), _at(120)), (_at(230), _at(235)))
    wall = publish.calls_wall([first, second], pauses)
    assert wall == {"wall_s": (60 + 40 - 10 - 5) * 60.0, "calls": 2, "paused_s": 15 * 60.0}


def test_a_call_stopped_mid_job_lasts_until_its_last_heartbeat(tmp_path):
    """A call killed at a session's end while a job of hours ran logs nothing after its last job event:
    its heartbeats end it instead. A beat after the next call's start belongs to that call; a beat
    before a call's last log line changes nothing."""
    first = _log(tmp_path / "a.log", _at(0), _at(10))  # logged 10 min, but alive until minute 150
    second = _log(tmp_path / "b.log", _at(300), _at(330))  # finished: its log ends it
    beats = tmp_path / "beats.jsonl"
    beats.write_text("\n".join(json.dumps({"alive": _at(m).timestamp()}) for m in (5, 60, 150, 310, 320))
                     + "\n")
    wall = publish.calls_wall([first, second], heartbeats=beats)
    assert wall == {"wall_s": (150 + 30) * 60.0, "calls": 2, "paused_s": 0.0, "heartbeat_s": 140 * 60.0}
    pauses = _pauses(tmp_path / "p.jsonl", (_at(100), _at(110)))
    assert publish.calls_wall([first, second], pauses, beats)["wall_s"] == (150 + 30 - 10) * 60.0
    assert publish.calls_wall([first, second])["wall_s"] == (10 + 30) * 60.0  # without: the logs alone
    beats.write_text(json.dumps({"when": 1.0}) + "\n")
    with pytest.raises(SystemExit, match="has no 'alive'"):
        publish.calls_wall([first], heartbeats=beats)
    from replikit.reporting import docs

    snap = {"made_by": {"how": "x", "commit": "abc", "code": {}},
            "runtime": {"wall_s": 600, "jobs": 3, "job_s": 100, "calls": 2, "heartbeat_s": 60.0}}
    line = docs.block_runtimes({"scorecard-default": snap})
    assert ("in 2 calls (stopped and resumed), a call stopped mid-job ended at its last heartbeat "
            "(3 jobs") in line
    assert "0.03 job-hours; a resumed job counts its last attempt)" in line


def test_one_call_never_paused_reads_as_before(tmp_path):
    log = _log(tmp_path / "a.log", _at(0), _at(12))
    assert publish.run_time(tmp_path, log)["wall_s"] == 720.0
    assert "calls" not in publish.run_time(tmp_path, log)


def test_a_pause_without_its_resume_is_an_error(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"paused": 1.0}) + "\n")
    with pytest.raises(SystemExit, match="no resume"):
        publish.paused_intervals(path)
    path.write_text(json.dumps({"resumed": 1.0}) + "\n")
    with pytest.raises(SystemExit, match="a pause was due"):
        publish.paused_intervals(path)


def test_the_runtime_line_says_when_a_run_was_made_in_several_calls_or_paused():
    from replikit.reporting import docs

    def line(**wall) -> str:
        snap = {"made_by": {"how": "x", "commit": "abc", "code": {}},
                "runtime": {"wall_s": 600, "jobs": 3, "job_s": 100, **wall}}
        return docs.block_runtimes({"scorecard-default": snap}).splitlines()[1]

    assert "10.0 min end to end in 2 calls (stopped and resumed), pauses left out (3 jobs" in line(
        calls=2, paused_s=5.0)
    assert "10.0 min end to end, pauses left out (3 jobs" in line(calls=1, paused_s=5.0)
    assert "10.0 min end to end (3 jobs" in line()
    per = {"data": {"job_s": 90}, "induction_heads": {"job_s": 72}, "rank_collapse": {"job_s": 18}}
    assert "(3 jobs, 0.03 job-hours, of which induction_heads 0.02)" in line(per_paper=per)
    per["rank_collapse"]["job_s"] = 108
    assert "job-hours, of which rank_collapse 0.03 and induction_heads 0.02)" in line(per_paper=per)


def test_the_runtime_line_names_the_commit_it_was_timed_at_when_the_verdicts_are_newer(tmp_path):
    """A smoke reference judged again by newer code keeps its run's time: the line says which run that
    was, and that the tree records the commit its runs were computed at."""
    from replikit.reporting import docs

    card = tmp_path / "results/p/claims.json"
    card.parent.mkdir(parents=True)
    card.write_text(json.dumps({"provenance": {"runs": [{"module": "m", "code": "c", "commit": "f" * 40}]}}))
    assert publish.runs_commit(tmp_path) == "f" * 40
    snap = {"made_by": {"how": "x", "commit": "abc", "code": {}},
            "runtime": {"wall_s": 600, "jobs": 3, "job_s": 100, "timed_at": "f" * 40}}
    line = docs.block_runtimes({"scorecard-default": snap}).splitlines()[1]
    assert "(3 jobs, 0.03 job-hours), timed on a run at commit ffffffffff. " in line
    snap["runtime"]["timed_at"] = "abc"
    assert "timed on" not in docs.block_runtimes({"scorecard-default": snap})


def test_a_jobs_seconds_leave_out_the_pauses_within_it(tmp_path):
    """A job that ran 100 s, ending at t = 1000, while the run was paused from t = 950 to 970 and from
    t = 990 to 2000: 20 + 10 of its seconds were pauses. A pause before it changes nothing."""
    import os

    bench = tmp_path / "logs/benchmarks/p/train/run/seed0.tsv"
    bench.parent.mkdir(parents=True)
    bench.write_text("s\th:m:s\tcpu_time\n100.0\t0:01:40\t60.0\n")
    os.utime(bench, (1000, 1000))
    pauses = tmp_path / "pauses.jsonl"
    pauses.write_text("\n".join(json.dumps(e) for e in (
        {"paused": 100}, {"resumed": 200}, {"paused": 950}, {"resumed": 970}, {"paused": 990},
        {"resumed": 2000})) + "\n")
    expected = {"jobs": 1, "job_s": 100.0, "cpu_s": 60.0, "longest_s": 100.0,
                "longest": "p/train/run/seed0.tsv", "stage_cpu_s": {"train": 60.0},
                "stage_longest_s": {"train": 100.0}}
    assert publish.benchmark_seconds(tmp_path)["p"] == expected
    assert publish.run_time(tmp_path, pauses=pauses)["per_paper"]["p"]["job_s"] == 70.0


def test_a_side_calls_jobs_count_whole_and_its_time_is_reported_apart(tmp_path):
    """A side call made while the run was paused (claims judged again, fresh runs trained): its jobs ran
    within the pause, so none of their time is left out, and its span is reported apart, not as the
    run's wall time. A job of the run that the same pause stopped still loses the pause."""
    import os

    from replikit.reporting import docs

    for name, end in (("side", _at(25)), ("run", _at(40))):
        bench = tmp_path / f"logs/benchmarks/p/train/{name}/seed0.tsv"
        bench.parent.mkdir(parents=True)
        bench.write_text("s\th:m:s\tcpu_time\n600.0\t0:10:00\t590.0\n")
        os.utime(bench, (end.timestamp(), end.timestamp()))
    pauses = _pauses(tmp_path / "pauses.jsonl", (_at(12), _at(27)))  # the side call ran 13-25 min
    side = _log(tmp_path / "side.log", _at(13), _at(25))
    got = publish.run_time(tmp_path, pauses=pauses, aside=[side])
    assert got["per_paper"]["p"]["job_s"] == 600.0 + 600.0  # the run's job ran 30-40 min: after the pause
    assert got["aside_calls"] == 1 and got["aside_s"] == 12 * 60.0
    bench = tmp_path / "logs/benchmarks/p/train/run/seed0.tsv"
    os.utime(bench, (_at(30).timestamp(), _at(30).timestamp()))  # ran 20-30 min: 7 of them paused
    got = publish.run_time(tmp_path, pauses=pauses, aside=[side])
    assert got["per_paper"]["p"]["job_s"] == 600.0 + 600.0 - 7 * 60.0
    # without the side call's log, its job (15-25 min, all within the pause) would count nothing
    assert publish.run_time(tmp_path, pauses=pauses)["per_paper"]["p"]["job_s"] == 0.0 + 600.0 - 7 * 60.0
    snap = {"made_by": {"how": "x", "commit": "abc", "code": {}}, "missing_papers": ["q"], "papers": {},
            "runtime": {"wall_s": None, "jobs": 2, "job_s": 780.0, "earlier_parts": 0, **got}}
    line = docs.block_runtimes({"scorecard-default": snap}).splitlines()[1]
    assert "and 1 side call of 12.0 min made while the run was paused, not in its wall time)" in line


def test_a_snapshot_made_at_several_commits_names_each():
    """A default run stopped and resumed at later commits (its run code unchanged) names every commit."""
    from replikit.reporting import docs
    from replikit.reporting.provenance import code_hash

    module = "replikit.papers.continual_learning"
    snap = {"made_by": {"commit": "several: 014944abb4, 33c6ca5ca1", "dirty": False,
                        "code": {module: code_hash(module)}}}
    assert docs.made_by_line(snap, "x") == "Made at commits 014944abb4, 33c6ca5ca1 by today's code."
    snap["made_by"]["commit"] = "f" * 40
    assert docs.made_by_line(snap, "x") == "Made at commit ffffffffff by today's code."


def test_a_run_that_has_not_finished_every_paper_publishes_a_partial_snapshot(tmp_path):
    """Two of the papers' scorecards in a tree: the snapshot names the others as missing, refuses a wall
    time (there is no end to end yet), and every generated line that shows it says it is partial."""
    from replikit.papers import paper_names
    from replikit.reporting import docs

    names = paper_names()
    for name in names[:2]:
        card = tmp_path / f"results/{name}/claims.json"
        card.parent.mkdir(parents=True)
        runs = [{"module": "m", "code": "c", "commit": "a" * 40}]
        card.write_text(json.dumps({"paper": name, "scale": "default", "claims": [], "provenance": {
            "runs": runs, "script": f"replikit.papers.{name}_analysis.claims", "analysis_code": "h",
            "claims_job_code": "g"}}))
    logged = publish.publish_scorecard("default", tmp_path, _log(tmp_path / "x.log", _at(0), _at(5)),
                                       out=tmp_path / "published")  # its logs count resumed jobs' parts only
    assert logged["runtime"]["wall_s"] is None and "calls" not in logged["runtime"]
    assert logged["runtime"]["earlier_parts"] == 0
    snap = publish.publish_scorecard("default", tmp_path, out=tmp_path / "published")
    assert "earlier_parts" not in snap["runtime"]  # not counted without the logs
    assert snap["missing_papers"] == sorted(names[2:]) and snap["runtime"]["wall_s"] is None
    # the code that judged the claims is recorded beside the runs', so a change to it marks the snapshot stale
    assert snap["made_by"]["code"] == {"m": "c", "replikit.papers.glue": "g",
                                       **{f"replikit.papers.{n}_analysis": "h" for n in names[:2]}}
    assert "Stale" in docs.made_by_line(snap, "x")
    want = f"**Partial:** the run has not finished; 2 papers are in it, {len(names) - 2} not yet ("
    snaps = {"scorecard-default": snap}
    assert want in docs.block_runtimes(snaps) and want in docs.block_scorecard_table(snaps, "default")
    complete = {k: v for k, v in snap.items() if k != "missing_papers"}
    assert "Partial" not in docs.block_runtimes({"scorecard-default": complete})


def test_a_partial_snapshot_times_only_the_papers_it_has_judged(tmp_path):
    """A missing paper's finished jobs are not its time: a partial snapshot's job counts and seconds
    cover the judged papers (and the shared data), and the generated line names no missing paper."""
    from replikit.papers import paper_names
    from replikit.reporting import docs

    judged, missing = paper_names()[:1], paper_names()[1:]
    card = tmp_path / f"results/{judged[0]}/claims.json"
    card.parent.mkdir(parents=True)
    card.write_text(json.dumps({"paper": judged[0], "scale": "default", "claims": [], "provenance": {}}))
    for paper, seconds in ((judged[0], 60.0), (missing[0], 7200.0), ("data", 6.0)):
        bench = tmp_path / f"logs/benchmarks/{paper}/train/run/seed0.tsv"
        bench.parent.mkdir(parents=True)
        bench.write_text(f"s\th:m:s\tcpu_time\n{seconds}\t0:00:00\t1.0\n")
    snap = publish.publish_scorecard("default", tmp_path, out=tmp_path / "published")
    assert set(snap["runtime"]["per_paper"]) == {judged[0], "data"}
    assert snap["runtime"]["jobs"] == 2 and snap["runtime"]["job_s"] == 66.0
    line = docs.block_runtimes({"scorecard-default": snap}).splitlines()[1]
    assert "the 2 jobs of the finished papers took" in line and missing[0] not in line.split("(")[0]


def test_the_runtime_records_the_cores_the_machine_and_the_dates(tmp_path):
    """The cores come from Snakemake's own log ("Provided cores: N"), the dates from its timestamps (or,
    without a log, from when the benchmark files were written); the generated line shows both."""
    import os

    from replikit.reporting import docs

    log = _log(tmp_path / "a.log", _at(0), _at(60 * 24))
    log.write_text(log.read_text() + "Provided cores: 2\n")
    timed = publish.machine_time(tmp_path, [log])
    assert timed == {"cores": 2, "machine_cpus": os.cpu_count(), "dates": ["2026-11-29", "2026-11-30"]}
    bench = tmp_path / "logs/benchmarks/p/train/run/seed0.tsv"
    bench.parent.mkdir(parents=True)
    bench.write_text("s\th:m:s\tcpu_time\n1.0\t0:00:01\t1.0\n")
    os.utime(bench, (_at(0).timestamp(),) * 2)
    assert publish.machine_time(tmp_path, [])["dates"] == ["2026-11-29", "2026-11-29"]
    assert publish.machine_time(tmp_path, [])["cores"] is None  # no log in the tree says
    rt = {"wall_s": 600, "jobs": 3, "job_s": 100, **timed, "machine_cpus": 2}
    line = docs.block_runtimes({"scorecard-default": {"made_by": {"how": "x", "commit": "abc", "code": {}},
                                                      "runtime": rt}}).splitlines()[1]
    assert "(3 jobs, 0.03 job-hours), on 2 cores of a 2-CPU machine, 2026-11-29 to 2026-11-30. " in line


def test_a_row_whose_claim_is_no_longer_declared_is_refused_not_guessed():
    """A snapshot's kinds come from the claims' declarations: a row of a claim that its paper no longer
    declares (dropped or renamed since the run) stops the publish, naming it, instead of being given a
    kind. A declared row carries its statement, for the docs' claims table."""
    row = {"verdict": "replicated", "parts": [{"label": "x"}], "definition": "d1"}
    declared = {"p": {"X-1": {"kind": "paper", "statement": "X grows with Y.", "definition": "d1"}}}
    published = publish._claims({"p": {"X-1": row}}, declared)["p"]["X-1"]
    assert published["kind"] == "paper" and published["statement"] == "X grows with Y."
    with pytest.raises(SystemExit, match="no longer declare: p X-2; rerun"):
        publish._claims({"p": {"X-1": row, "X-2": row}}, declared)
    # a row judged under another definition, or an unrecorded one, is refused too
    for judged in ({**row, "definition": "d0"}, {k: v for k, v in row.items() if k != "definition"}):
        with pytest.raises(SystemExit, match="another definition than today's.*: p X-1; rerun"):
            publish._claims({"p": {"X-1": judged}}, declared)


def test_the_reference_names_a_claim_judged_under_another_definition():
    """A claim's digest covers its statement, statistic, rule and falsifier setting; the guard names a
    row whose definition changed, so a redefined claim cannot pass on its old verdicts."""
    from replikit.scoring.scorecard_reference import compare, definition

    base = definition("X grows.", "slope", "CI > 0", "no X")
    assert len({base, definition("X grows fast.", "slope", "CI > 0", "no X"),
                definition("X grows.", "slope", "CI > 0", "")}) == 3
    def card(digest: str) -> dict:
        return {"scale": "smoke", "papers": {"p": {"X-1": {"verdict": "replicated", "parts": {},
                                                           "definition": digest}}}}

    ref, now = card(base), card("x")
    assert any("p X-1: its statement, statistic, rule, falsifier setting or quote changed" in line
               for line in compare(ref, now))


def test_every_smoke_claim_is_declared_with_a_statement():
    """The declarations the snapshots take their kinds and statements from cover every paper's claims."""
    from replikit.papers import paper_names

    declared = publish.declarations("smoke")
    assert set(declared) == set(paper_names())
    assert all(d["statement"].strip() and d["kind"] for claims in declared.values() for d in claims.values())


def _job(t: dt.datetime, jobid: int, bench: str, output: str) -> str:
    return (f"[{t.strftime('%a %b %d %H:%M:%S %Y')}]\nlocalrule p_train:\n    output: {output}\n"
            f"    log: logs/p/seed0.log\n    jobid: {jobid}\n    benchmark: {bench}\n"
            "    wildcards: seed=0\n    resources: tmpdir=/tmp\nShell command: None\n")


def _event(t: dt.datetime, text: str) -> str:
    return f"[{t.strftime('%a %b %d %H:%M:%S %Y')}]\n{text}\n"


def test_a_job_resumed_over_calls_counts_every_part_its_record_names(tmp_path):
    """A job stopped at a session's end and resumed from its checkpoint in the next call: a benchmark
    file holds its last attempt only, so the earlier parts come from the calls' logs, as many as its
    run record's Stopwatch `parts` says (an older attempt of other code, started afresh after, is not
    one), each to its call's end (its last heartbeat), less the pauses inside it."""
    bench, out = "logs/benchmarks/p/train/seed0.tsv", "results/p/runs/seed0/metrics.json"
    (tmp_path / bench).parent.mkdir(parents=True)
    (tmp_path / bench).write_text("s\th:m:s\tcpu_time\n600\t0:10:00\t590\n")
    (tmp_path / out).parent.mkdir(parents=True)
    (tmp_path / out).write_text(json.dumps({"elapsed_s": 2400.0, "parts": 2}))
    logs = [tmp_path / "0.log", tmp_path / "1.log", tmp_path / "2.log"]
    failed = "Error in rule p_train:\n    message: None\n    jobid: 7\n    output: x"
    logs[0].write_text(_job(_at(0), 7, bench, out) + _event(_at(5), failed))
    logs[1].write_text(_job(_at(100), 3, bench, out))  # stopped mid-job: alive until minute 130
    logs[2].write_text(_job(_at(200), 4, bench, out) + _event(_at(210), "Finished jobid: 4 (Rule: p_train)"))
    beats = tmp_path / "beats.jsonl"
    beats.write_text("\n".join(json.dumps({"alive": _at(m).timestamp()}) for m in (110, 130)) + "\n")
    spans = publish.earlier_parts(tmp_path, logs, beats)
    assert spans == {bench: [(_at(100), _at(130))]}
    pauses = _pauses(tmp_path / "p.jsonl", (_at(120), _at(125)))
    rt = publish.run_time(tmp_path, logs, pauses, heartbeats=beats)
    assert rt["per_paper"]["p"] == {"jobs": 1, "job_s": 600 + 25 * 60.0, "cpu_s": 590.0, "earlier_parts": 1,
                                    "longest_s": 600 + 25 * 60.0, "longest": str(Path(bench).relative_to(
                                        "logs/benchmarks")), "stage_cpu_s": {"train": 590.0},
                                    "stage_longest_s": {"train": 600 + 25 * 60.0}}
    assert rt["earlier_parts"] == 1
    (tmp_path / out).write_text(json.dumps({"elapsed_s": 600.0, "parts": 1}))  # started afresh: no part
    assert publish.earlier_parts(tmp_path, logs, beats) == {}
    assert publish.job_attempts(logs[0], _at(9))[0]["end"] == _at(5)  # a failed attempt ends at its error
    from replikit.reporting import docs

    line = docs.block_runtimes({"scorecard-default": {"made_by": {"how": "x", "commit": "abc", "code": {}},
                                                      "runtime": {**rt, "per_paper": {}}}})
    assert "a job resumed from its checkpoint counts every part: 1 earlier part, each until its call " \
        "ended or it failed" in line
    rt["earlier_parts"] = 0
    line = docs.block_runtimes({"scorecard-default": {"made_by": {"how": "x", "commit": "abc", "code": {}},
                                                      "runtime": {**rt, "per_paper": {}}}})
    assert "no job's run record counts a part from an earlier call" in line


def test_a_job_retried_in_one_call_ends_each_attempt_at_its_own_end(tmp_path):
    """Snakemake starts a retried job (`retries`) again under its jobid: each attempt ends at the
    first end of that jobid after its start, not at the last."""
    bench, out = "logs/benchmarks/p/train/seed0.tsv", "results/p/runs/seed0/metrics.json"
    log = tmp_path / "a.log"
    failed = "Error in rule p_train:\n    message: None\n    jobid: 3\n    output: x"
    log.write_text(_job(_at(0), 3, bench, out) + _event(_at(20), failed) + "Trying to restart job 3.\n"
                   + _job(_at(21), 3, bench, out) + _event(_at(50), "Finished jobid: 3 (Rule: p_train)"))
    first, second = publish.job_attempts(log, _at(60))
    assert (first["start"], first["end"]) == (_at(0), _at(20))
    assert (second["start"], second["end"]) == (_at(21), _at(50))


def test_a_restart_ends_the_call_before_it_even_when_its_first_beats_come_first(tmp_path):
    """A new session's heartbeat beats while its first Snakemake builds the DAG, before that call has
    written a timestamp: without the run's restart mark those beats would stretch the last call of
    the session before over the gap between sessions."""
    first = _log(tmp_path / "a.log", _at(0), _at(10))  # alive until minute 50, then the session ended
    second = _log(tmp_path / "b.log", _at(200), _at(230))  # the next session's call
    beats = tmp_path / "beats.jsonl"
    lines = [{"alive": _at(m).timestamp()} for m in (30, 50, 199)] + [{"restarted": _at(198).timestamp()}]
    beats.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    assert publish.calls_wall([first, second], heartbeats=beats)["wall_s"] == (50 + 30) * 60.0
    beats.write_text("\n".join(json.dumps(x) for x in lines[:3]) + "\n")  # without the mark: stretched
    assert publish.calls_wall([first, second], heartbeats=beats)["wall_s"] == (199 + 30) * 60.0


def test_the_predicted_wall_is_bounded_by_the_longest_chain_and_the_shared_work():
    """Two papers: induction heads' chain is its training's longest job then its figure's (600 + 60 s),
    the datasets' (30 s) come before every chain; 4,000 job-seconds in all. On 2 cores the work shared
    evenly bounds it (2,000 s); on 16 the chain does (690 s); at most their sum."""
    per = {"data": {"job_s": 30.0, "stage_longest_s": {"cifar10": 30.0}},
           "induction_heads": {"job_s": 1970.0, "stage_longest_s": {"train": 600.0, "figure": 60.0}},
           "rank_collapse": {"job_s": 2000.0, "stage_longest_s": {"train": 200.0}}}
    assert publish.critical_path(per) == 690.0
    assert publish.predicted_wall(per, 2) == [2000.0, 2690.0]
    assert publish.predicted_wall(per, 16) == [690.0, 940.0]


def test_the_default_cost_table_rates_training_against_the_cpus_peak():
    """A paper's training GFLOP/s: the plan's training FLOPs over its training stage's CPU seconds,
    and that as a share of the peak the plan measured; a paper the plan does not price reads "-"."""
    from replikit.reporting import docs

    per = {"rank_collapse": {"jobs": 12, "cpu_s": 7200.0, "longest_s": 120.0, "train_cpu_s": 5000.0},
           "data": {"jobs": 2, "cpu_s": 60.0, "longest_s": 40.0}}
    snaps = {"scorecard-default": {"runtime": {"per_paper": per}},
             "plan-config": {"papers": {"rank_collapse": {"pflop": 0.05}}, "cpu_peak_flops": 1e11,
                             "made_by": {"how": "python -m replikit.tools.publish plan config/config.yaml"}}}
    table = docs.block_default_cost(snaps)
    assert "| rank_collapse | 12 | 2.00 | 2.0 | 0.050 | 10.00 | 10.0% |" in table
    assert "| data | 2 | 0.02 | 0.7 | - | - | - |" in table
    assert "100.0 GFLOP/s" in table
    assert docs.block_default_cost({}).startswith("No published default run")


def test_a_benchmark_file_at_the_top_is_named_by_its_stem(tmp_path):
    """The report's benchmark file sits beside the papers' folders: its group reads `report`."""
    (tmp_path / "logs/benchmarks").mkdir(parents=True)
    (tmp_path / "logs/benchmarks/report.tsv").write_text("s\th:m:s\tcpu_time\n5.0\t0:00:05\t4.0\n")
    assert list(publish.benchmark_seconds(tmp_path)) == ["report"]


def test_a_jobs_cpu_seconds_come_from_its_own_log_where_it_wrote_them(tmp_path, monkeypatch):
    """Snakemake samples a job's CPU every 30 s after its first 15 s, so `cpu_time` misses the job's
    tail; the job writes its own CPU seconds at its end (core.jobs.job), and publishing reads them."""
    import types

    from replikit.core.jobs import job

    monkeypatch.chdir(tmp_path)
    log = tmp_path / "logs/p/train/r/seeds.log"
    log.parent.mkdir(parents=True)
    sm = types.SimpleNamespace(log=[str(log)], output=["out"], rule="p_train", threads=1,
                               config={"device": "cpu"})
    with job(sm):
        sum(i * i for i in range(200_000))
    written = [ln for ln in log.read_text().splitlines() if ln.startswith("[replikit] cpu seconds")]
    assert len(written) == 1 and float(written[0].rsplit(" ", 1)[1]) > 0
    bench = tmp_path / "logs/benchmarks/p/train/r/seeds.tsv"
    bench.parent.mkdir(parents=True)
    bench.write_text("s\th:m:s\tcpu_time\n40.0\t0:00:40\t12.0\n")
    log.write_text("[replikit] rule p_train\n[replikit] cpu seconds of this job: 38.50\n")
    assert publish.benchmark_seconds(tmp_path)["p"]["cpu_s"] == 38.5
    log.unlink()  # a job that wrote none (an older run): the benchmark's own
    assert publish.benchmark_seconds(tmp_path)["p"]["cpu_s"] == 12.0
