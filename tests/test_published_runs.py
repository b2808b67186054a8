"""The runs behind the published snapshots (replikit.tools.published_runs): committed, small, without
weights, each with its provenance, and judged again from them with today's code. CI's check of every
published scale: a change that moves a published row fails here until its snapshot is republished."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from replikit.reporting.docs import PUBLISHED
from replikit.tools import published_runs as pr
from replikit.tools.publish import publish_rung
from tests.conftest import ROOT

WITH_RUNS = sorted(p.name.removesuffix(".jsonl.gz") for p in pr.ARCHIVE.glob("*.jsonl.gz"))


def test_every_published_scale_with_runs_commits_them_small_without_weights_and_with_provenance():
    assert "smoke" in WITH_RUNS
    assert pr.total_size() <= 15_000_000, pr.total_size()
    for scale in WITH_RUNS:
        entries = pr.entries(scale)
        assert not [e["path"] for e in entries if Path(e["path"]).suffix in pr.WEIGHTS]
        runs = [e["json"] for e in entries if "/runs/" in e["path"] and e["path"].endswith("metrics.json")]
        assert runs, scale
        for run in runs:  # what made it: commit, code hash, config, seed, kernels
            made = run["computed_by"]
            assert made["commit"] and made["code"] and made["kernels"] and "config" in run, run.get("run")
            assert "seed" in run or "seeds" in run or "run" in run


def test_the_archive_keeps_what_the_claims_read_and_restores_it_byte_for_byte_in_content(tmp_path):
    entries = pr.entries("smoke")
    written = pr.restore("smoke", tmp_path / "tree")
    assert len(written) == len(entries)
    again = pr.archive("smoke", tmp_path / "tree", out=tmp_path / "again.jsonl.gz")
    assert again.read_bytes() == pr.archive_path("smoke").read_bytes()  # the same files, the same bytes
    with pytest.raises(SystemExit, match="restore into an empty folder"):
        pr.restore("smoke", tmp_path / "tree")


@pytest.fixture(scope="module")
def rejudged_smoke(tmp_path_factory) -> Path:
    """The committed smoke runs judged again with today's code (scorecards only: what CI compares)."""
    return pr.rejudge("smoke", tmp_path_factory.mktemp("rejudge") / "work", targets="claims")


def test_the_committed_smoke_runs_judged_again_give_the_published_snapshot(rejudged_smoke):
    """CI's check: nothing trains, every claims job runs on the committed runs, and every verdict,
    mean, interval and seed count equals the published snapshot's."""
    assert not list(rejudged_smoke.glob("logs/*/train*/**/*.log"))  # no training job ran
    moved = pr.moved_rows("smoke", rejudged_smoke)
    assert not moved, pr.report("smoke", moved)


@pytest.mark.parametrize("scale", [s for s in WITH_RUNS if s != "smoke"])
def test_the_committed_runs_of_every_other_published_scale_judged_again_give_its_snapshot(scale, tmp_path):
    """The same check for the default (and any other scale whose runs are committed): its scorecards
    judged again from its committed runs, nothing trained, equal the published snapshot's."""
    tree = pr.rejudge(scale, tmp_path / "work", targets="claims")
    assert not list(tree.glob("logs/*/train*/**/*.log"))
    moved = pr.moved_rows(scale, tree)
    assert not moved, pr.report(scale, moved)


def test_a_row_that_moves_is_named_with_the_command_that_republishes(rejudged_smoke, capsys):
    """A scoring change that moves a row, seen as a snapshot that no longer matches the rejudged runs."""
    snap = json.loads((PUBLISHED / "scorecard-smoke.json").read_text())
    changed = copy.deepcopy(snap)
    paper, claims = next(iter(changed["papers"].items()))
    cid, row = next(iter(claims.items()))
    label = next(iter(row["parts"]))
    row["verdict"] = "not replicated" if row["verdict"] != "not replicated" else "replicated"
    row["parts"][label]["ci"] = [-9.0, 9.0]
    moved = pr.moved_rows("smoke", rejudged_smoke, changed)
    assert any(line.startswith(f"{paper} {cid}: verdict") for line in moved), moved
    assert any(line.startswith(f"{paper} {cid} [{label}]: interval") for line in moved), moved
    assert pr.report("smoke", moved) == 1
    out = capsys.readouterr().out
    assert "python -m replikit.tools.publish rejudge smoke" in out and f"{paper} {cid}" in out


@pytest.mark.parametrize("name", sorted(p.stem for p in PUBLISHED.glob("rung-*.json")))
def test_a_published_rung_judged_again_from_its_committed_runs_gives_its_snapshot(name, tmp_path):
    snap = json.loads((PUBLISHED / f"{name}.json").read_text())
    again = publish_rung(snap["paper"], snap["name"], [str(ROOT / r) for r in snap["runs"]], snap["ladder"],
                         out=tmp_path)
    assert again["verdicts"] == snap["verdicts"]
    for cid, parts in snap["parts"].items():
        for old, new in zip(parts, again["parts"][cid], strict=True):
            for key in ("verdict", "n_seeds", "n_agree"):
                assert new[key] == old[key], (cid, key)
            for key in ("mean", "ci_low", "ci_high"):
                assert new[key] == pytest.approx(old[key], abs=1e-9), (cid, key)


def test_republishing_keeps_the_runs_commit_and_time_and_names_the_code_that_judged(rejudged_smoke, tmp_path):
    import shutil

    from replikit.reporting import docs
    from replikit.tools.publish import republish

    shutil.copy(PUBLISHED / "scorecard-smoke.json", tmp_path / "scorecard-smoke.json")
    old = json.loads((PUBLISHED / "scorecard-smoke.json").read_text())
    snap = republish("smoke", rejudged_smoke, out=tmp_path)
    kept = ("commit", "dirty", "how")  # the runs' own; its code hashes: the judging code's as it is now
    assert {k: snap["made_by"][k] for k in kept} == {k: old["made_by"][k] for k in kept}
    assert snap["runtime"] == old["runtime"]
    assert snap["papers"] == old["papers"]  # today's code judges the committed runs as they were judged
    assert snap["judged_by"]["how"] == "python -m replikit.tools.publish rejudge smoke"
    later = {**snap, "judged_by": {**snap["judged_by"], "commit": "f" * 40}}
    assert "Its committed runs were judged again at commit ffffffffff" in docs.made_by_line(later, "x")


def test_a_rejudge_never_deletes_a_folder_it_did_not_make(tmp_path):
    precious = tmp_path / "results-of-mine"
    precious.mkdir()
    (precious / "claims.json").write_text("{}")
    with pytest.raises(SystemExit, match="is not a rejudge's folder"):
        pr.rejudge("smoke", precious, targets="claims")
    assert (precious / "claims.json").read_text() == "{}"
