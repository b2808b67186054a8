"""replikit.tools.device_check at smoke size on the CPU: the plan's predictions written, the plan's own
steps timed, and one latent-lookahead arm trained with its evaluations logged up to a deadline."""

from __future__ import annotations

import json
import time

import pytest

from replikit.tools import device_check as dc


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    out = tmp_path_factory.mktemp("check")
    dc.prepare(out, ("config/smoke.yaml",))
    return out


def test_prepare_writes_settings_data_and_the_plans_predictions(folder):
    check = json.loads((folder / "check.json").read_text())
    data = json.loads((folder / "sudoku4.json").read_text())
    assert check["cp"]["run"].startswith("chain_model-plain_augmentation-crop_flip")
    for part in ("burn_in", "chains"):
        pred = check["cp"][part]
        assert pred["h100_step_s"] == max(pred["h100_compute_s"], pred["h100_launch_s"]) > 0
    # the chain step stacks every temperature: more FLOPs than one network's step, as many per chain
    chains = len(check["cp"]["cfg"]["temperatures"]) + bool(check["cp"]["cfg"]["sgd_baseline"])
    assert check["cp"]["chains"]["flops"] == pytest.approx(chains * check["cp"]["burn_in"]["flops"], rel=0.05)
    assert set(check["ll"]["predicted"]) == {"ntp", "pause", "lookahead"}
    assert len(data["prompt"]) == len(data["answer"]) == len(data["split"]) == check["ll"]["cfg"]["data"]["n"]


def test_steps_are_timed_against_the_prediction(folder, tmp_path):
    dc.time_steps(folder, tmp_path, steps=1)
    step = json.loads((tmp_path / "step.json").read_text())
    assert "cp_error" not in step and "ll_error" not in step
    assert step["cp"]["batched"]["measured_s"] > 0 and step["cp"]["burn_in"]["measured_s"] > 0
    assert step["cp"]["chains"] > 1 and step["cp"]["batched_vs_sequential"] > 0
    assert {"ntp", "pause", "lookahead"} <= set(step["ll"]) and step["ll_predicted"]["ntp"]["ops"] > 0


def test_an_arm_logs_every_evaluation_and_stops_at_the_deadline(folder, tmp_path):
    full, cut = tmp_path / "full.jsonl", tmp_path / "cut.jsonl"
    dc.train_one(folder, "lookahead", 0, time.time() + 3600, full)
    rows = [json.loads(line) for line in full.read_text().splitlines()]
    cfg = json.loads((folder / "check.json").read_text())["ll"]["cfg"]
    assert [r["epoch"] for r in rows] == [0, cfg["training"]["epochs"]]  # start and end (eval every 30)
    assert {"exact_match", "fixed_batch_loss", "next_token_loss", "latent_loss", "wall_s"} <= set(rows[-1])
    assert rows[-1]["fixed_batch_loss"] < rows[0]["fixed_batch_loss"]
    dc.train_one(folder, "ntp", 0, time.time() - 1, cut)  # past its deadline: the first evaluation only
    assert [json.loads(line)["epoch"] for line in cut.read_text().splitlines()] == [0]


def test_the_summary_reads_the_committed_gpu_measurements():
    folder = "docs/measurements/2026-11-26-h200"
    table = dc.summary([f"{folder}/run1-ll-all-arms.json", f"{folder}/run2-ll-lookahead.json"], [2100, 9996])
    lines = table.splitlines()
    assert lines[2].startswith("| 2,100 | 83.6 [77.5, 88.0] (5 seeds)") and "89.7 [86.0, 94.0]" in lines[2]
    assert lines[3] == ("| 9,996 | 85.0 [83.5, 87.0] (5 seeds) | 84.3 [82.0, 87.0] (5 seeds) | not reached "
                        "| - |")


def test_prepare_sets_the_evaluation_interval_that_train_uses(tmp_path):
    dc.prepare(tmp_path, ("config/smoke.yaml",), eval_every=1)
    check = json.loads((tmp_path / "check.json").read_text())
    assert check["ll"]["eval_every"] == 1 and check["ll"]["configs"] == ["config/smoke.yaml"]
    log = tmp_path / "ntp.jsonl"
    dc.train_one(tmp_path, "ntp", 0, time.time() + 3600, log)
    epochs = [json.loads(line)["epoch"] for line in log.read_text().splitlines()]
    assert epochs == list(range(check["ll"]["cfg"]["training"]["epochs"] + 1))


@pytest.mark.slow
def test_run_trains_the_arms_of_every_folder_at_once_each_into_its_own_file(folder, tmp_path):
    other = tmp_path / "other_rung"
    dc.prepare(other, ("config/smoke.yaml",), eval_every=1)
    out = tmp_path / "out"
    dc.run_all(folder, out, deadline_s=0, steps=0, methods=("ntp",), also=(other,))  # past the deadline
    for path, every in ((out / "ll.json", 30), (out / "other_rung" / "ll.json", 1)):
        got = json.loads(path.read_text())
        assert got["eval_every_epochs"] == every  # each folder's own settings
        assert sorted((r["method"], r["seed"]) for r in got["runs"]) == [("ntp", s) for s in dc.LL_SEEDS]
        assert all(r["returncode"] == 0 and [h["epoch"] for h in r["history"]] == [0] for r in got["runs"])


def test_two_extra_folders_of_one_name_are_refused_before_anything_runs(folder, tmp_path):
    with pytest.raises(SystemExit, match="distinct names"):
        dc.run_all(folder, tmp_path / "out", 0, 0, ("ntp",), also=(tmp_path / "a/x", tmp_path / "b/x"))
    assert not (tmp_path / "out").exists()


def test_a_maze_folder_trains_the_maze_task(tmp_path):
    """`prepare --task maze` writes the maze data and its settings; an arm trained from it reads them."""
    dc.prepare(tmp_path, ("config/smoke.yaml",), task="maze")
    check = json.loads((tmp_path / "check.json").read_text())
    data = json.loads((tmp_path / "maze.json").read_text())
    assert check["ll"]["task"] == "maze" and not (tmp_path / "sudoku4.json").exists()
    assert "task-maze_" in check["ll"]["predicted"]["lookahead"]["run"]
    assert len(data["prompt"]) == check["ll"]["cfg"]["data"]["n"]
    log = tmp_path / "ntp.jsonl"
    dc.train_one(tmp_path, "ntp", 0, time.time() + 3600, log)
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert rows[-1]["epoch"] == check["ll"]["cfg"]["training"]["epochs"] and "exact_match" in rows[-1]


def test_the_summary_reads_the_committed_maze_measurements():
    """The rung-7 table of the maze ladder's GPU runs (docs/measurements/2026-11-28-docs-before-issue-62/
    scale-ladder.md, "The maze ladder's top on a GPU") from its raw files."""
    folder = "docs/measurements/2026-11-27-h200-maze"
    table = dc.summary([f"{folder}/run2-ntp-pause-batch_128.json", f"{folder}/run1-lookahead-batch_128.json"],
                       [448, 1120])
    lines = table.splitlines()
    assert lines[2] == ("| 448 | 41.9 [38.0, 45.0] (5 seeds) | 30.1 [25.0, 33.0] (5 seeds) "
                        "| 16.5 [10.0, 24.0] (5 seeds) | -28.5, -19.5, -30.0, -21.0, -28.0 |")
    assert "54.3 [52.5, 58.0] (3 seeds) | +4.0, -9.0, -3.5 |" in lines[3]


@pytest.mark.parametrize("daemon_running", [True, False])
def test_mps_joins_a_running_daemon_or_starts_one(monkeypatch, tmp_path, daemon_running):
    """On a warm machine the daemon of the call before still runs and a second `-d` would fail, so the
    runs join it (2026-11-27: a second call ran without MPS for this reason); on a fresh machine no
    daemon answers the query, and one is started before the client check."""
    calls = []

    def fake_run(cmd, **kw):
        calls.append(cmd)
        if cmd == ["nvidia-cuda-mps-control", "-d"] and daemon_running:
            raise dc.subprocess.CalledProcessError(1, cmd)  # "An instance of this daemon is already running"
        query = kw.get("input") == b"get_server_list\n"
        return dc.subprocess.CompletedProcess(cmd, 0 if daemon_running or not query else 1)

    monkeypatch.setattr(dc.subprocess, "run", fake_run)
    monkeypatch.setattr(dc.os, "environ", {})
    with (tmp_path / "log.txt").open("w") as log:
        assert dc.start_mps(log)
    assert (["nvidia-cuda-mps-control", "-d"] in calls) is not daemon_running
    assert calls[0] == ["nvidia-cuda-mps-control"]  # the query comes first
    assert dc.os.environ["CUDA_MPS_PIPE_DIRECTORY"] == "/tmp/mps"
