"""The run's heartbeat (replikit.tools.heartbeat): it beats while a Snakemake process works in the tree,
not while that process is paused, for a `--nolock` side call or in another tree."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from replikit.tools import heartbeat


@pytest.fixture()
def fake_snakemake(tmp_path):
    """A process whose command line names a `snakemake` script, working in `tmp_path / "tree"`."""
    script = tmp_path / "snakemake"
    script.write_text("import time\ntime.sleep(60)\n")
    tree = tmp_path / "tree"
    tree.mkdir()
    started = []

    def start(*args: str) -> subprocess.Popen:
        proc = subprocess.Popen([sys.executable, str(script), *args], cwd=tree)
        started.append(proc)
        time.sleep(0.3)
        return proc

    yield tree, start
    for proc in started:
        proc.kill()
        proc.wait()


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc (Linux)")
def test_it_beats_only_while_snakemake_works_in_the_tree(fake_snakemake, tmp_path):
    tree, start = fake_snakemake
    assert not heartbeat.snakemake_working(tree)
    proc = start("--cores", "2")
    assert heartbeat.snakemake_working(tree)
    assert not heartbeat.snakemake_working(tmp_path)  # another tree
    proc.send_signal(signal.SIGSTOP)  # paused: publish leaves pauses out anyway
    time.sleep(0.3)
    assert not heartbeat.snakemake_working(tree)
    proc.send_signal(signal.SIGCONT)
    time.sleep(0.3)
    assert heartbeat.snakemake_working(tree)
    proc.kill()
    proc.wait()
    assert not heartbeat.snakemake_working(tree)
    for side in ("--nolock", "-n", "--unlock"):  # side calls beside the run, not the run
        start("--cores", "2", side)
        assert not heartbeat.snakemake_working(tree), side


def test_a_beat_is_one_json_line_publish_reads():
    from pathlib import Path
    from tempfile import TemporaryDirectory

    from replikit.tools.publish import heartbeat_times

    with TemporaryDirectory() as d:
        out = Path(d) / "logs" / "heartbeats.jsonl"
        heartbeat.beat(out, now=1000.0)
        heartbeat.beat(out, now=1060.0)
        assert [json.loads(line) for line in out.read_text().splitlines()] == [{"alive": 1000.0},
                                                                               {"alive": 1060.0}]
        assert len(heartbeat_times(out)) == 2
