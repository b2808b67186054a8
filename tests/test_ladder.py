"""The scale ladder (replikit.plan.ladder): cumulative rung configurations, the run store that lets rungs
share runs, the sentence each claim part gets, and a tiny two-rung ladder end to end."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from replikit.core import run_store
from replikit.core.config import ConfigError, paper_file
from replikit.plan import ladder as lad
from replikit.plan.bill import load as plan_load
from replikit.reporting.ladder_summary import (
    PART_ALONE,
    claim_sentences,
    panels,
    sentence,
    table,
    tick_labels,
)
from tests.conftest import ROOT

RAW = {
    "base": "smoke",
    "seeds": [0, 1],
    "scope": {"tasks": ["sudoku4"]},
    "rungs": [
        {
            "name": "more_steps",
            "knob": "steps",
            "reason": "r1",
            "set": {"training": {"sudoku4": {"epochs": 4}}},
            "budget": {"eval_max": 10},
            "budget_reason": "fewer evaluations",
        },
        {"name": "wider", "knob": "width", "reason": "r2", "set": {"model": {"n_embd": 128}}, "seeds": [0]},
    ],
}


def test_rungs_are_cumulative_and_rung_zero_is_the_base_block():
    ladder = lad.parse("latent_lookahead", RAW)
    r0, r1, r2 = ladder.rungs
    assert (r0.index, r0.name, r0.overrides) == (0, "smoke", {"tasks": ["sudoku4"]})
    assert r1.overrides == {"tasks": ["sudoku4"], "training": {"sudoku4": {"epochs": 4}}, "eval_max": 10}
    # rung 2 keeps rung 1's knob and budget, and adds its own
    assert r2.overrides == {**r1.overrides, "model": {"n_embd": 128}}
    assert (r1.seeds, r2.seeds) == ([0, 1], [0])
    cfg = lad.rung_config(ladder, r2)
    # latent lookahead has its own seeds key, which wins over the global one: the rung sets both
    assert cfg["seeds"] == [0] and cfg["latent_lookahead"]["seeds"] == [0]
    assert cfg["outdir"] == "results/ladder/latent_lookahead/wider"
    assert cfg["ladder_rung"] == "2 wider: width"  # every figure of the rung says which rung it is
    assert cfg["run_store"] == "results/ladder/latent_lookahead/store" and cfg["papers"] == [
        "latent_lookahead"
    ]


def test_a_finished_rungs_wall_time_is_kept_when_it_is_called_again(tmp_path):
    """Calling a finished rung again (say, to refresh a figure) appends to walls.jsonl but keeps the
    wall time up to the call that finished it; a rung whose first call failed (its training done, its
    claims rule failing) counts that call too."""
    lad.record_wall(tmp_path, {"rc": 1, "wall_s": 50.0, "cores": 2})
    lad.record_wall(tmp_path, {"rc": 0, "wall_s": 1500.0, "cores": 1})
    lad.record_wall(tmp_path, {"rc": 0, "wall_s": 9.0, "cores": 2})
    wall = json.loads((tmp_path / "wall.json").read_text())
    assert (wall["wall_s"], wall["calls"], wall["cores"]) == (1550.0, 2, 2)
    walls = [json.loads(line)["wall_s"] for line in (tmp_path / "walls.jsonl").read_text().splitlines()]
    assert walls == [50.0, 1500.0, 9.0]


def test_a_stopped_call_records_its_wall_time(tmp_path, monkeypatch):
    """A call stopped while Snakemake runs (Ctrl-C; SIGTERM at a session's end, which the command turns
    into an exit) stops Snakemake and still records its wall time, so a rung that spans sessions counts
    every call; before 2026-11-28 such a call left no record."""
    monkeypatch.chdir(tmp_path)
    ladder = lad.parse("latent_lookahead", RAW)

    class Stopped:  # Snakemake, running when the call is stopped
        def __init__(self, cmd):
            self.terminated = False

        def wait(self, timeout=None):
            if not self.terminated:
                raise KeyboardInterrupt
            return -15

        def terminate(self):
            self.terminated = True

    monkeypatch.setattr(lad.subprocess, "Popen", Stopped)
    with pytest.raises(KeyboardInterrupt):
        lad.run_rung(ladder, ladder.rungs[1], 2, [])
    wall = json.loads((ladder.outdir(ladder.rungs[1]) / "wall.json").read_text())
    assert (wall["rc"], wall["calls"], wall["cores"]) == ("stopped", 1, 2) and wall["wall_s"] >= 0


def _dead_pid() -> int:
    """The pid of a process that has exited (reaped): no process has it now."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_call_killed_outright_is_recorded_by_the_next_call(tmp_path):
    """A call killed with SIGKILL (a session's end did so on 2026-11-28, leaving rung 4's first call
    without any record) records nothing itself; its heartbeat, left behind, is recorded by the next
    call as rc "killed", with the wall from its start to its last heartbeat. A heartbeat whose process
    still runs is a running call, left alone."""
    from replikit.plan.ladder_status import killed_calls

    beats = tmp_path / "calls.running"
    beats.mkdir()
    host = lad.socket.gethostname()
    common = {"rung": 4, "name": "lr_paper", "cores": 2, "config": "abc", "host": host}
    dead = {**common, "pid": _dead_pid(), "start": 1000.0, "seen": 9760.0}
    (beats / "dead.json").write_text(json.dumps(dead))
    live = {**common, "pid": lad.os.getpid(), "start": 0.0, "seen": 1.0}
    (beats / "live.json").write_text(json.dumps(live))
    assert [r["wall_s"] for _, r in killed_calls(tmp_path)] == [8760.0]
    assert (beats / "dead.json").is_file()  # reading them writes nothing
    assert [r["rc"] for r in lad.record_killed_calls(tmp_path)] == ["killed"]
    calls = [json.loads(line) for line in (tmp_path / "walls.jsonl").read_text().splitlines()]
    assert [(c["rc"], c["wall_s"], c["config"]) for c in calls] == [("killed", 8760.0, "abc")]
    assert not (beats / "dead.json").exists() and (beats / "live.json").is_file()
    assert lad.record_killed_calls(tmp_path) == []  # recorded once


def test_a_running_call_keeps_a_heartbeat_and_removes_it_when_it_ends(tmp_path, monkeypatch, capsys):
    """While Snakemake runs, the call rewrites its heartbeat (its start, the last time it was seen);
    a call that ends records itself and removes it, and a leftover heartbeat of a killed call is
    recorded before the new call starts, with the command that unlocks the lock it left."""
    monkeypatch.chdir(tmp_path)
    ladder = lad.parse("latent_lookahead", RAW)
    rung = ladder.rungs[1]
    where = ladder.outdir(rung)
    (where / "calls.running").mkdir(parents=True)
    config = {"rung": 1, "name": "more_steps", "cores": 2, "config": "old", "host": lad.socket.gethostname()}
    (where / "calls.running" / "x.json").write_text(
        json.dumps({**config, "pid": _dead_pid(), "start": 0.0, "seen": 120.0})
    )
    (where / ".snakemake/locks").mkdir(parents=True)
    (where / ".snakemake/locks/0.input.lock").write_text("")  # the killed call's, left behind
    seen = []

    class Running:  # Snakemake: still running at the first wait, done at the second
        def __init__(self, cmd):
            self.waits = 0

        def wait(self, timeout=None):
            self.waits += 1
            beats = sorted((where / "calls.running").glob("*.json"))
            seen.append([json.loads(b.read_text())["pid"] for b in beats])
            if self.waits == 1:
                raise subprocess.TimeoutExpired("snakemake", timeout)
            return 0

    monkeypatch.setattr(lad.subprocess, "Popen", Running)
    assert lad.run_rung(ladder, rung, 2, []) == 0
    assert seen == [[lad.os.getpid()], [lad.os.getpid()]]  # the killed call's heartbeat went first
    assert list((where / "calls.running").glob("*")) == []
    calls = [json.loads(line) for line in (where / "walls.jsonl").read_text().splitlines()]
    assert [c["rc"] for c in calls] == ["killed", 0] and calls[0]["wall_s"] == 120.0
    said = capsys.readouterr().out
    hint = said[said.index("unlock it with: ") + len("unlock it with: ") :].split("\n")[0].split()
    assert hint[1:5] == ["-m", "snakemake", "--snakefile", str(lad.ROOT / "Snakefile")]
    assert hint[5:] == ["--configfile", str(where / "rung.yaml"), "--unlock"]


def test_a_call_before_the_rung_changed_is_not_in_its_wall_time(tmp_path):
    """A rung changed after a call (its `changed:`, so another rung.yaml) counts only the calls of the
    configuration that finished it: the earlier call trained other runs."""
    lad.record_wall(tmp_path, {"rc": 1, "wall_s": 1977.0, "cores": 2, "config": "before"})
    lad.record_wall(tmp_path, {"rc": 1, "wall_s": 60.0, "cores": 2, "config": "after"})
    lad.record_wall(tmp_path, {"rc": 0, "wall_s": 5000.0, "cores": 2, "config": "after"})
    wall = json.loads((tmp_path / "wall.json").read_text())
    assert (wall["wall_s"], wall["calls"]) == (5060.0, 2)


@pytest.mark.parametrize(
    "bad, says",
    [
        ({"rungs": []}, "needs `rungs:`"),
        ({"rungs": [{"name": "a", "knob": "k", "reason": "r"}]}, "missing ['set']"),
        ({"rungs": [{"name": "a b", "knob": "k", "reason": "r", "set": {}}]}, "new identifier"),
        (
            {"rungs": [{"name": "a", "knob": "k", "reason": "r", "set": {}, "sets": {}}]},
            "unknown keys ['sets']",
        ),
        ({"rung": []}, "unknown keys ['rung']"),
    ],
)
def test_a_malformed_ladder_is_named(bad, says):
    with pytest.raises(ConfigError, match=None) as e:
        lad.parse("latent_lookahead", bad)
    assert says in str(e.value)


@pytest.mark.parametrize(
    "paper, name",
    [("latent_lookahead", ""), ("latent_lookahead", "maze"), ("cold_posterior", ""),
     ("depthwise_transfer", ""), ("continual_learning", "")],
)
def test_every_declared_rung_is_a_valid_configuration(paper, name, tmp_path, monkeypatch):
    """Each rung of the ladders in config/papers/ validates against the schema and the paper's
    own checks (a typo in a rung fails here, not hours into a run)."""
    key = "ladder_" + name if name else "ladder"
    assert key in paper_file(ROOT / "config" / "papers" / f"{paper}.yaml")
    ladder = lad.load(paper, name=name)
    assert len(ladder.rungs) >= 2 and all(r.reason and r.knob for r in ladder.rungs)
    monkeypatch.chdir(tmp_path)
    for rung in ladder.rungs:
        cfg = plan_load([str(lad.write_rung_config(ladder, rung))])
        assert cfg["scale"] == ladder.base and cfg["papers"] == [paper]


def test_a_papers_other_ladder_has_its_own_tree_and_is_not_a_scale_block():
    """`ladder_maze:` is latent lookahead's second ladder: its rungs (rung 0 included, named like the
    main ladder's rung 0) live under results/ladder/latent_lookahead.maze/, never in the main
    ladder's folders, and no scale reads it as a block."""
    from replikit.core.config import with_paper_settings

    main, maze = lad.load("latent_lookahead"), lad.load("latent_lookahead", name="maze")
    assert (main.ident, maze.ident, maze.key) == ("latent_lookahead", "latent_lookahead.maze", "ladder_maze")
    assert main.rungs[0].name == maze.rungs[0].name == "default"
    assert str(maze.outdir(maze.rungs[0])) == "results/ladder/latent_lookahead.maze/default"
    assert str(maze.store()) == "results/ladder/latent_lookahead.maze/store"
    assert maze.claims == ["LL-3", "LL-6"] and maze.rungs[0].overrides["tasks"] == ["maze"]
    assert lad.rung_config(maze, maze.rungs[1])["outdir"] == "results/ladder/latent_lookahead.maze/steps_8x"
    schema = ROOT / "workflow" / "schemas" / "config.schema.yaml"
    with pytest.raises(ConfigError, match="no block for scale 'ladder_maze'"):
        with_paper_settings({"scale": "ladder_maze"}, schema)
    with pytest.raises(ConfigError, match="declares no `ladder_mazes:` .*ladder, ladder_maze"):
        lad.load("latent_lookahead", name="mazes")


def test_the_summary_of_another_ladder_names_it_and_how_to_run_it(tmp_path, monkeypatch):
    from replikit.reporting.ladder_summary import markdown, summarize

    monkeypatch.chdir(tmp_path)
    summarize(lad.load("latent_lookahead", name="maze"))
    record = json.loads((tmp_path / "results/ladder/latent_lookahead.maze/ladder.json").read_text())
    md = markdown(record)
    assert md.startswith("### Ladder: latent_lookahead.maze") and "`ladder_maze:`" in md
    assert "run latent_lookahead --ladder maze --rung NAME" in md and "No rung has run yet" in md
    assert not (tmp_path / "results/ladder/latent_lookahead/ladder.json").exists()


def test_run_store_copies_a_finished_job_and_ignores_an_incomplete_entry(tmp_path):
    out = tmp_path / "a" / "metrics.json"
    out.parent.mkdir()
    out.write_text('{"x": 1}')
    key = run_store.key("p", "train", {"run": "r", "seed": "0"}, {"lr": 1}, "cpu")
    assert key != run_store.key("p", "train", {"run": "r", "seed": "0"}, {"lr": 2}, "cpu")
    assert key != run_store.key("p", "train", {"run": "r", "seed": "0"}, {"lr": 1}, "cpu", code="0123abcd")
    store = tmp_path / "store"
    assert run_store.fetch(store, key, {"metrics": str(out)}) is None
    run_store.put(store, key, {"metrics": str(out)}, {"rule": "p_train"})
    again = tmp_path / "b" / "metrics.json"
    origin = run_store.fetch(store, key, {"metrics": str(again)})
    assert origin["rule"] == "p_train" and json.loads(again.read_text()) == {"x": 1}
    (store / key / run_store.DONE).unlink()  # an entry whose writing never finished
    assert run_store.fetch(store, key, {"metrics": str(tmp_path / "c.json")}) is None


def _row(rung: int, verdict: str, lo: float, hi: float, why: str = "") -> dict:
    return {
        "rung": rung,
        "verdict": verdict,
        "mean": (lo + hi) / 2,
        "ci_low": lo,
        "ci_high": hi,
        "threshold": 0.0,
        "direction": "above",
        "why": why,
    }


def test_each_part_gets_one_sentence_along_the_ladder():
    rungs = {i: lad.Rung(i, f"r{i}", f"knob{i}", "", {}, [0]) for i in range(3)}
    holds = [_row(0, "replicated", 0.1, 0.2), _row(1, "replicated", 0.2, 0.3)]
    assert sentence(holds, rungs) == "holds at every rung: replicated"
    first = [
        _row(0, "inconclusive", -0.1, 0.2),
        _row(1, "inconclusive", -0.1, 0.3),
        _row(2, "replicated", 0.1, 0.3),
    ]
    assert sentence(first, rungs) == "first replicated at rung 2 (knob2)"
    flips = [_row(0, "inconclusive", -0.3, -0.1, "lookahead did not learn"), _row(1, "replicated", 0.1, 0.3)]
    assert sentence(flips, rungs) == "changes sign at rung 1 (knob1)"
    never = [
        _row(0, "inconclusive", -0.3, -0.1, "x did not learn"),
        _row(1, "inconclusive", -0.2, -0.1, "x did not learn"),
    ]
    assert sentence(never, rungs) == "holds at every rung: inconclusive (x did not learn)"
    assert sentence([{"rung": 0, "verdict": "not measured", "why": ""}], rungs).startswith("not measured")
    # one rung that ran is not "every rung"
    assert sentence([_row(0, "replicated", 0.1, 0.2)], rungs) == "only rung 0 measured so far: replicated"
    # a rung whose verdict rests in part on seeds in which the method did not learn says so
    partly = [_row(0, "replicated", 0.1, 0.3), {**_row(1, "not replicated", -0.9, -0.2),
                                                "caveat": "lookahead did not learn in 3 of 5 seeds"}]
    assert sentence(partly, rungs) == ("changes sign at rung 1 (knob1); rung 1: lookahead did not learn in "
                                       "3 of 5 seeds")


def test_one_bound_of_an_equivalence_passing_is_not_the_claim_replicated():
    """A claim of two parts (the bounds of an equivalence): at rung 1 the lower bound passes and the
    upper does not, so the claim stays inconclusive; its own row says so, and the part's sentence is
    marked as the part alone."""
    rungs = {i: lad.Rung(i, f"r{i}", f"knob{i}", "", {}, [0]) for i in range(2)}
    rows = []
    for rung, (low_v, high_v, claim_v) in enumerate(
        [("inconclusive", "inconclusive", "inconclusive"), ("replicated", "inconclusive", "inconclusive")]
    ):
        for part, verdict in enumerate((low_v, high_v)):
            row = _row(rung, verdict, -0.1 + 0.2 * rung, 0.3)
            rows.append(
                {
                    **row,
                    "claim": "X-1",
                    "part": part,
                    "label": f"bound {part}",
                    "paper_value": None,
                    "claim_verdict": claim_v,
                    "n_parts": 2,
                    "knob": f"knob{rung}",
                    "rung_name": f"r{rung}",
                }
            )
    said = claim_sentences(rows, rungs)
    assert said == {"X-1": "holds at every rung: inconclusive"}
    record = {
        "rows": rows,
        "claims": ["X-1"],
        "rungs": [{"index": i, "name": f"r{i}"} for i in range(2)],
        "sentences": [
            {"claim": "X-1", "part": p, "sentence": PART_ALONE + "first replicated at rung 1 (knob1)"}
            for p in range(2)
        ],
        "claim_sentences": [{"claim": c, "sentence": s} for c, s in said.items()],
    }
    first, *parts = table(record)["parts"]
    assert first["part"] == "the claim (every part must pass)"
    assert [c["verdict"] for c in first["cells"]] == ["inconclusive", "inconclusive"]
    assert first["sentence"] == "holds at every rung: inconclusive"
    assert all(p["sentence"].startswith("this part alone: ") for p in parts) and len(parts) == 2


def test_an_equivalence_is_drawn_in_one_panel_coloured_by_the_claims_verdict():
    """The two bounds of an equivalence (one statistic) share a panel with both thresholds, coloured by
    the claim's verdict: the bound that passes alone is not drawn green. Parts of different
    statistics keep a panel each."""
    rows = []
    for part, (threshold, verdict) in enumerate([(0.1, "replicated"), (-0.1, "not replicated")]):
        row = {**_row(0, verdict, 0.15, 0.25), "threshold": threshold}
        rows.append(
            {**row, "claim": "X-1", "part": part, "label": f"bound {part}", "claim_verdict": "not replicated"}
        )
    other = [
        {
            **_row(0, v, lo, lo + 0.1),
            "claim": "Y-1",
            "part": i,
            "label": f"p{i}",
            "claim_verdict": "inconclusive",
        }
        for i, (v, lo) in enumerate([("replicated", 0.1), ("inconclusive", -0.05)])
    ]
    shown = panels(rows + other, ["X-1"])
    assert [p["title"] for p in shown] == [
        "X-1, the claim (every part must pass): bound 0 and bound 1",
        "Y-1: p0",
        "Y-1: p1",
    ]
    assert shown[0]["thresholds"] == [0.1, -0.1]
    assert [r["verdict"] for r in shown[0]["seq"]] == ["not replicated"]
    assert [p["seq"][0]["verdict"] for p in shown[1:]] == ["replicated", "inconclusive"]


def test_neighbouring_rung_names_never_share_a_line_of_the_axis():
    names = [r.name for r in lad.load("latent_lookahead", name="maze").rungs]
    lines = [label.split("\n") for label in tick_labels(names)]
    assert [line[0] for line in lines] == [str(i) for i in range(len(names))]
    row = [len(line) - 1 for line in lines]  # the line each name sits on
    assert len(names) == 9 and all(a != b for a, b in zip(row, row[1:], strict=False))
    assert tick_labels(["default", "steps"]) == ["0\ndefault", "1\nsteps"]  # a short ladder: one line


@pytest.mark.slow
def test_a_two_rung_ladder_end_to_end(tmp_path):
    """A tiny latent-lookahead ladder at smoke size: two rung configurations, the runs they define
    alike trained once (the second rung copies them from the run store), the figure, the table and
    the report's Ladder section."""
    ladder_file = tmp_path / "ladder.yaml"
    ladder_file.write_text(
        yaml.safe_dump(
            {
                "base": "smoke",
                "seeds": [0],
                "claims": ["LL-1", "LL-4"],
                "scope": {
                    "tasks": ["sudoku4"],
                    "data": {"sudoku4": {"n": 120}},
                    "training": {"sudoku4": {"epochs": 1}},
                    "eval_max": 8,
                },
                "rungs": [
                    {
                        "name": "tau_grid",
                        "knob": "tau grid",
                        "reason": "tau scaling on {2, 3}",
                        "set": {"tau_scaling": {"taus": [2, 3]}},
                    }
                ],
            }
        )
    )
    cmd = [
        sys.executable,
        "-m",
        "replikit.plan.ladder",
        "run",
        "latent_lookahead",
        "--ladder-file",
        str(ladder_file),
    ]
    res = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=1200)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "rung 1 tau_grid has no plan for its current configuration" in res.stdout  # said before launch
    where = tmp_path / "results/ladder/latent_lookahead"
    for rung in ("smoke", "tau_grid"):
        assert (where / rung / "rung.yaml").is_file()
        assert (where / rung / "results/latent_lookahead/claims.json").is_file()
        calls = [json.loads(line) for line in (where / rung / "walls.jsonl").read_text().splitlines()]
        assert [c["rc"] for c in calls] == [0]  # the call recorded itself, and left no heartbeat
        assert not list((where / rung / "calls.running").glob("*"))
    # rung 1 shares every run but lookahead at tau 3: those were copied, not trained again
    logs = sorted((where / "tau_grid/logs/latent_lookahead/train").rglob("*.log"))
    copied = [p for p in logs if "run store: outputs copied" in p.read_text()]
    trained = [p for p in logs if p not in copied]
    assert [p.parent.name for p in trained] == ["train_task-sudoku4_method-lookahead_tau-3_mask-bidir"], logs
    assert len(copied) == len(logs) - 1 >= 4
    # each rung's figures say which rung they are, beside the scale
    prov = sorted((where / "tau_grid/results/latent_lookahead/figures").glob("*.provenance.json"))
    assert prov and all(
        json.loads(p.read_text())["scale"] == "smoke + ladder rung 1 tau_grid: tau grid" for p in prov
    )
    record = json.loads((where / "ladder.json").read_text())
    assert [r["ran"] for r in record["rungs"]] == [True, True]
    assert {s["claim"] for s in record["sentences"]} >= {"LL-1", "LL-4"}
    assert (where / "ladder.png").stat().st_size > 10_000
    md = (where / "ladder.md").read_text()
    assert "| LL-1 |" in md and "rung 1 tau_grid" in md and "along the ladder" in md
    # the report's Ladder section renders this summary (as rule report does)
    from replikit.reporting.report import load_inputs, render

    card = where / "tau_grid/results/latent_lookahead/claims.json"
    inputs = load_inputs([str(card)], [], [], [], None, [str(where / "ladder.json")])
    render(str(ROOT / "reports"), inputs, str(tmp_path / "index.html"), str(tmp_path / "index.md"))
    assert "## Ladder" in (tmp_path / "index.md").read_text()
    html = (tmp_path / "index.html").read_text()
    assert 'id="ladder"' in html and "along the ladder" in html


def test_a_rung_inserted_after_the_plan_never_takes_a_neighbours_prediction(tmp_path, monkeypatch):
    """plan.json rows are matched to rungs by name: after a rung is inserted, the rungs after it keep
    their own predictions (under their new index), the new rung has none until it is planned, and
    planning it adds its row without touching the others."""
    from replikit.reporting.ladder_summary import _hours

    monkeypatch.chdir(tmp_path)
    old = lad.parse("latent_lookahead", RAW)
    inserted = {"name": "longer", "knob": "steps", "reason": "r",
                "set": {"training": {"sudoku4": {"epochs": 8}}}}
    new = lad.parse("latent_lookahead", {**RAW, "rungs": [RAW["rungs"][0], inserted, RAW["rungs"][1]]})
    assert [r.name for r in new.rungs] == ["smoke", "more_steps", "longer", "wider"]

    def row(rung: lad.Rung, hours: float) -> dict:
        return {"rung": rung.index, "name": rung.name, "cpu_hours": hours, "gpu_hours": {"H100": hours / 100}}

    kept = [row(r, h) for r, h in zip(old.rungs, (0.1, 0.2, 0.3), strict=True)]
    plan = tmp_path / "results/ladder/latent_lookahead/plan.json"
    plan.parent.mkdir(parents=True)
    plan.write_text(json.dumps(kept))
    predicted = {i: h.get("predicted_cpu_h") for i, h in _hours(new).items()}
    assert predicted == {0: 0.1, 1: 0.2, 2: None, 3: 0.3}

    merged = lad.merge_plans(new, kept, [row(new.rungs[2], 0.9)])
    assert [(r["rung"], r["name"], r["cpu_hours"]) for r in merged] == [
        (0, "smoke", 0.1), (1, "more_steps", 0.2), (2, "longer", 0.9), (3, "wider", 0.3)]
    assert lad.merge_plans(old, merged, []) == kept  # a rung no longer declared is dropped


def test_run_shows_a_rungs_plan_only_for_its_current_configuration(tmp_path, monkeypatch):
    """Before launch `run` prints each rung's prediction from plan.json; a rung changed since it was
    planned (or never planned) is named instead, with the command that plans it."""
    monkeypatch.chdir(tmp_path)
    ladder = lad.parse("latent_lookahead", RAW)
    rows = [{"rung": r.index, "name": r.name, "knob": r.knob, "config": lad.config_digest(ladder, r),
             "jobs": 2, "new_jobs": 2, "cpu_hours": 0.5, "gpu_hours": {"H100": 0.01, "A100": 0.02}}
            for r in ladder.rungs[:2]]
    lad.plan_path(ladder).parent.mkdir(parents=True)
    lad.plan_path(ladder).write_text(json.dumps(rows))
    changed = lad.parse("latent_lookahead", {**RAW, "rungs": [
        {**RAW["rungs"][0], "set": {"training": {"sudoku4": {"epochs": 6}}}}, RAW["rungs"][1]]})
    ok, missing = lad.planned(changed, changed.rungs)
    assert [r["name"] for r in ok] == ["smoke"] and [r.name for r in missing] == ["more_steps", "wider"]
    out = []
    monkeypatch.setattr(lad, "run_rung", lambda *a: 0)
    monkeypatch.setattr(lad.signal, "signal", lambda *a: None)  # the test process keeps its handlers
    monkeypatch.setattr("builtins.print", lambda *a, **k: out.append(" ".join(map(str, a))))
    monkeypatch.setattr(lad, "load", lambda *a: changed)
    monkeypatch.setattr("replikit.reporting.ladder_summary.summarize", lambda ladder: None)
    assert lad.main(["run", "latent_lookahead", "--rung", "smoke", "--rung", "more_steps"]) == 0
    text = "\n".join(out)
    assert "| 0 smoke |" in text and "| 1 more_steps |" not in text
    assert "rung 1 more_steps has no plan for its current configuration" in text
    assert "plan latent_lookahead --rung more_steps" in text


def test_the_plan_table_shows_timed_hours_only_when_timed():
    """`plan --timed` adds a column of CPU hours from timed steps; a rung with a step too long to
    time says so instead of a number; an untimed plan keeps its six columns."""
    row = {
        "rung": 1,
        "name": "wider",
        "knob": "width",
        "jobs": 4,
        "new_jobs": 2,
        "cpu_hours": 0.5,
        "gpu_hours": {"H100": 0.01, "A100": 0.02},
    }
    plain = lad.format_plan([row])
    assert "timed" not in plain and plain.splitlines()[2].count("|") == 7
    timed = lad.format_plan([{**row, "cpu_hours_timed": 1.75}, {**row, "rung": 2, "cpu_hours_timed": None}])
    lines = timed.splitlines()
    assert "timed CPU-h" in lines[0] and all(line.count("|") == 8 for line in lines)
    assert "| 0.50 | 1.75 |" in lines[2] and "not timed (a step too long)" in lines[3]


def test_arguments_after_a_double_dash_reach_snakemake_and_the_ladders_own_do_not(tmp_path, monkeypatch):
    """`run ... -- --prioritize X` hands `--prioritize X` to Snakemake (to start a rung's longest runs
    first); the ladder's own options before `--` are never passed on."""
    ladder_file = tmp_path / "ladder.yaml"
    ladder_file.write_text(yaml.safe_dump(RAW))
    calls: list[list[str]] = []
    monkeypatch.chdir(tmp_path)

    class Snakemake:  # records the command, exits 3
        def __init__(self, cmd):
            calls.append(cmd)

        def wait(self, timeout=None):
            return 3

    monkeypatch.setattr(lad.subprocess, "Popen", Snakemake)
    monkeypatch.setattr(lad.signal, "signal", lambda *a: None)  # the test process keeps its handlers
    rc = lad.main(
        ["run", "latent_lookahead", "--ladder-file", str(ladder_file), "--rung", "wider", "--cores", "1",
         "--", "--prioritize", "a/metrics.json"]
    )
    assert rc == 3 and len(calls) == 1
    cmd = calls[0]
    assert cmd[cmd.index("--prioritize") + 1 :] == ["a/metrics.json"]  # after the targets, none swallowed
    assert any(t.endswith("claims.json") for t in cmd[: cmd.index("--prioritize")])
    assert "--ladder-file" not in cmd and "--rung" not in cmd and "--" not in cmd
    assert cmd[cmd.index("--cores") + 1] == "1"


def test_the_rung_table_says_which_seeds_each_rung_ran(tmp_path, monkeypatch):
    """A rung on fresh seeds (e.g. one added after others' results) shows them, not only their count."""
    from replikit.reporting.ladder_summary import markdown, seed_list, summarize

    assert seed_list([5, 6, 7, 8, 9]) == "5-9" and seed_list([4, 0, 2]) == "0, 2, 4"
    assert seed_list([0, 1, 3, 4, 5]) == "0, 1, 3-5" and seed_list([7]) == "7"
    monkeypatch.chdir(tmp_path)
    summarize(lad.parse("latent_lookahead", RAW))
    md = markdown(json.loads((tmp_path / "results/ladder/latent_lookahead/ladder.json").read_text()))
    rows = {ln.split(" | ")[0]: ln.split(" | ")[4] for ln in md.splitlines() if ln.startswith("| ")}
    assert rows["| 1 more_steps"] == "0, 1" and rows["| 2 wider"] == "0"


def test_status_says_which_jobs_finished_are_under_way_or_not_started(tmp_path, monkeypatch):
    """A rung over several calls: `status` reads its tree (nothing written) and names each job's state,
    the epoch its checkpoint holds, the lock of a running call and the recorded calls' wall time."""
    import torch

    from replikit.plan.ladder_status import format_status, rung_status

    monkeypatch.chdir(tmp_path)
    ladder = lad.parse("latent_lookahead", RAW)
    rung = ladder.rungs[2]  # one seed
    root = ladder.outdir(rung)
    empty = rung_status(ladder, rung, lad.rung_config(ladder, rung))
    assert empty["done"] == [] and empty["under_way"] == {} and empty["calls"] == 0 and not empty["locked"]
    assert not root.exists()  # status writes nothing
    jobs = empty["not_started"]
    assert len(jobs) == empty["jobs"] > 2 and all(j.endswith("/seed0") for j in jobs)
    first, second = (j.split("/") for j in jobs[:2])
    metrics = root / "results/latent_lookahead/runs" / first[0] / first[1] / "metrics.json"
    metrics.parent.mkdir(parents=True)
    metrics.write_text("{}")
    ckpt = root / "results/latent_lookahead/checkpoints" / f"{second[0]}_{second[1]}.ckpt"
    ckpt.parent.mkdir(parents=True)
    torch.save({"epoch": 3, "history": []}, ckpt)
    (root / ".snakemake/locks").mkdir(parents=True)
    (root / ".snakemake/locks/0.input.lock").write_text("")
    lad.record_wall(root, {"rc": "stopped", "wall_s": 3600.0, "cores": 2})
    status = rung_status(ladder, rung, lad.rung_config(ladder, rung))
    assert status["done"] == [jobs[0]] and list(status["under_way"]) == [jobs[1]]
    assert status["not_started"] == jobs[2:] and status["locked"] and not status["finished"]
    assert (status["calls"], status["wall_h"]) == (1, 1.0)
    text = format_status(status)
    assert "1 of" in text and "checkpoint at epoch 3" in text and "lock" in text
    beats = root / "calls.running"  # a call killed outright: counted to its last heartbeat, not written
    beats.mkdir()
    dead = {"rung": 2, "name": "wider", "cores": 2, "config": None, "host": lad.socket.gethostname()}
    (beats / "x.json").write_text(json.dumps({**dead, "pid": _dead_pid(), "start": 0.0, "seen": 1800.0}))
    status = rung_status(ladder, rung, lad.rung_config(ladder, rung))
    assert (status["calls"], status["killed"], status["wall_h"]) == (2, 1, 1.5)
    assert "1 killed" in format_status(status) and (beats / "x.json").is_file()
