"""conftest.run_process: the DAG tests' runner keeps the test run's session (so niceness orders them
under autogroup scheduling) and kills its whole process group on timeout."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import run_process

REPORT = "import os; print(os.getsid(0), os.getpgid(0), os.getpid(), os.nice(0))"


def test_a_process_keeps_the_session_gets_its_own_group_and_the_niceness():
    sid, pgid, pid, nice = map(int, run_process([sys.executable, "-c", REPORT], ".", 60, 5).stdout.split())
    assert sid == os.getsid(0) and pgid == pid != os.getpgid(0) and nice == min(os.nice(0) + 5, 19)


def test_a_timeout_kills_the_whole_group(tmp_path):
    marker = tmp_path / "child.pid"
    script = ("import subprocess, sys, time; p = subprocess.Popen([sys.executable, '-c', "
              f"'import time; time.sleep(60)']); open({str(marker)!r}, 'w').write(str(p.pid)); "
              "time.sleep(60)")
    with pytest.raises(subprocess.TimeoutExpired):
        run_process([sys.executable, "-c", script], ".", 3)
    child = int(marker.read_text())
    try:
        os.kill(child, 0)
        alive = open(f"/proc/{child}/stat").read().split()[2] != "Z"
    except ProcessLookupError:
        alive = False
    assert not alive
