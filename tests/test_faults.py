"""Fault injection (issue 11): each bad input or fault a user can meet gives the correct result or
a clear error naming the file or key, and never costs a finished result."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
import yaml

from replikit.core import io
from replikit.core.config import ConfigError, read_yaml, validate_config
from replikit.core.device import DeviceError
from replikit.core.jobs import JobLockedError, job, lock_path, time_limit_hints
from replikit.core.training import load_checkpoint
from replikit.data import prepare as data
from replikit.data.datasets import MNIST
from replikit.papers.benign_memorization import Run, RunSpec
from replikit.papers.registry import config_errors
from tests.conftest import ROOT, SHARED

SCHEMA = ROOT / "workflow/schemas/config.schema.yaml"
BM_CFG = {
    "n_train": 24, "subset_seed": 0, "probe_fit_size": None, "probe_k": 3,
    "model": {"name": "cnn4", "width": 4, "projector_width": 16},
    "optimizer": {"name": "adam", "lr": 1e-3, "weight_decay": 0.0},
    "epochs": 4, "batch_size": 8, "eval_every": 2, "checkpoint_every": 1, "eval_views_max": 64,
}
BM_RUN = "train_noise-1.0_augmentation-light_n_augs-none_label_per_view-false"


def _bm_run(images: dict) -> Run:
    torch.set_num_threads(1)
    return Run(RunSpec.parse(BM_RUN), BM_CFG, images, 0, torch.device("cpu"))


# ---------------------------------------------------------------- 1. prepared data from verified bytes


def test_damaged_extracted_mnist_is_re_extracted_and_a_cache_is_not_a_download(tmp_path):
    downloads = tmp_path / "dl"
    good = data.prepare("mnist", [str(SHARED)], downloads, ["local"])
    raw = downloads / "MNIST" / "raw"
    labels, images = raw / "train-labels-idx1-ubyte", raw / "train-images-idx3-ubyte"
    with open(labels, "r+b") as f:  # the fault injection's zeroed labels: 903 of 60,000 wrong
        f.seek(8)
        f.write(bytes(1000))
    with open(images, "r+b") as f:  # and a truncated image file
        f.truncate(20_000_000)

    again = data.prepare("mnist", [str(SHARED)], downloads, ["local"])
    assert torch.equal(again.y_train, good.y_train) and torch.equal(again.x_train, good.x_train)
    assert images.stat().st_size == 47_040_016  # re-extracted, no manual deletion needed

    logged: list[str] = []
    offline = data.prepare("mnist", [], downloads, ["local", "torchvision"], log=logged.append)
    # the verified archives in the download folder, by name and checksum (no absolute path)
    assert offline.source.startswith("cache:train-images-idx3-ubyte.gz (md5 ")
    assert str(downloads) not in offline.source
    assert offline.source_files == {str(downloads / f): md5 for f, md5 in MNIST.local_files.items()}
    assert logged[-1] == f"[data] mnist: using {offline.source}"
    assert torch.equal(offline.y_train, good.y_train)


# ---------------------------------------------------------------- 2. checkpoints bound to their data


def test_checkpoint_of_other_input_data_is_not_resumed(tiny_images, tmp_path, capsys):
    ckpt = tmp_path / "run.ckpt"
    _bm_run(tiny_images).train(checkpoint=str(ckpt), progress=False)  # leaves the epoch-3 checkpoint
    assert ckpt.exists()
    other = dict(tiny_images, x_train=tiny_images["x_train"].flip(-1))  # the data re-prepared, changed
    resumed = _bm_run(other).train(checkpoint=str(ckpt), progress=False)
    assert f"ignoring {ckpt}: it belongs to another configuration or other input data; " \
           "training starts from scratch" in capsys.readouterr().err
    assert resumed == _bm_run(other).train(progress=False)


def test_continual_learning_progress_on_other_data_is_not_resumed(monkeypatch, tmp_path):
    from replikit.papers import continual_learning as cl
    from tests.test_continual_learning import CFG, synthetic_stream

    spec, cpu = cl.RunSpec("seq", "pmnist100", "mup", 32), torch.device("cpu")
    cfg = {**CFG, "gammas": [0.5, 1.0]}
    ckpt = tmp_path / "progress.json"
    monkeypatch.setattr(cl, "build_stream", lambda *a, **k: synthetic_stream(seed=0))
    old = cl.run_sweep(spec, cfg, {}, 0, cpu, checkpoint=ckpt)  # leaves the progress of both networks
    monkeypatch.setattr(cl, "build_stream", lambda *a, **k: synthetic_stream(seed=1))  # other data
    resumed = cl.run_sweep(spec, cfg, {}, 0, cpu, checkpoint=ckpt)
    assert resumed == cl.run_sweep(spec, cfg, {}, 0, cpu) and resumed != old


# ---------------------------------------------------------------- 3. device is no rule param


def smk(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"), "--cores", "1",
           "--configfile", str(ROOT / "config/smoke.yaml"), str(workdir / "tiny.yaml"),
           "--directory", str(workdir), *args]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    return subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, timeout=300, env=env)


def _tiny_mnist(workdir: Path) -> None:
    """A 40/20-image stand-in for the prepared MNIST tensors, and a config that trains on it."""
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 256, (60, 1, 28, 28), generator=g, dtype=torch.uint8)
    y = torch.arange(60) % 10
    prepared = data.Prepared(x[:40], y[:40], x[40:], y[40:], [str(i) for i in range(10)], "test", {})
    folder = workdir / "resources/data/mnist"
    data.save(prepared, folder / "tensors.pt", folder / "manifest.json")
    (workdir / "tiny.yaml").write_text(yaml.safe_dump({
        "papers": ["continual_learning"], "data": {"search_paths": [], "sources": ["local"]},
        "outdir": ".",  # the tree at the work folder's top, where the stand-in tensors are
        "continual_learning": {"seeds": [0], "n_tasks": 2, "n_train": 20, "n_test": 20, "epochs": 1,
                               "width_sweep": {"widths": [8, 16], "gamma0": 1.0}}}))


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_device_change_reruns_nothing_and_missing_cuda_deletes_nothing(tmp_path):
    _tiny_mnist(tmp_path)
    target = ("results/continual_learning/runs/seq_stream-pmnist100_mode-ntp_width-none_gamma0-none/seed0/"
              "metrics.json")
    built = smk(tmp_path, target)
    assert built.returncode == 0, built.stderr[-3000:]
    finished = (tmp_path / target).read_bytes()

    plan = smk(tmp_path, "-n", target, "--config", "device=cpu")  # auto -> cpu
    assert plan.returncode == 0 and "Nothing to be done" in plan.stdout + plan.stderr

    rebuild = smk(tmp_path, target, "--forcerun", "cl_train", "--config", "device=cuda")
    assert rebuild.returncode != 0
    assert "config key 'device' is 'cuda' but torch finds no CUDA device on this machine" in rebuild.stderr
    assert "set device: auto or cpu (e.g. --config device=cpu)" in rebuild.stderr
    assert (tmp_path / target).read_bytes() == finished  # the finished result it would rebuild is kept

    job_ = SimpleNamespace(log=[], output=[str(tmp_path / "x.json")], rule="cl_train", threads=1,
                           config={"device": "cuda"})
    threads = torch.get_num_threads()
    with pytest.raises(DeviceError, match="config key 'device' is 'cuda' but torch finds no CUDA"):
        with job(job_):
            pass
    torch.set_num_threads(threads)


# ---------------------------------------------------------------- 4. corrupt checkpoints


def test_truncated_checkpoint_is_named_moved_aside_and_training_restarts(tiny_images, tmp_path, capsys):
    ckpt = tmp_path / "run.ckpt"
    _bm_run(tiny_images).train(checkpoint=str(ckpt), progress=False)
    ckpt.write_bytes(ckpt.read_bytes()[:1000])  # a checkpoint cut short
    history = _bm_run(tiny_images).train(checkpoint=str(ckpt), progress=False)
    err = capsys.readouterr().err
    assert f"checkpoint {ckpt} is unreadable (" in err
    assert f"moved it to {ckpt}.corrupt, training restarts from scratch" in err
    assert (tmp_path / "run.ckpt.corrupt").stat().st_size == 1000
    assert history == _bm_run(tiny_images).train(progress=False)

    progress = tmp_path / "sweep.json"  # continual learning's JSON progress file
    progress.write_text('{"fingerprint": "x", "items": [')
    assert load_checkpoint(progress, io.read_json) is None
    assert f"checkpoint {progress} is unreadable (JSONDecodeError" in capsys.readouterr().err
    assert not progress.exists() and (tmp_path / "sweep.json.corrupt").exists()


# ---------------------------------------------------------------- 5. config errors before any job


@pytest.mark.parametrize("bad, message", [
    ({"cold_posterior": {"epochs": 10, "ramp_start": 12, "sample_start": 18, "cycle_epochs": 6,
                         "samples_per_cycle": 1}},
     "config key 'cold_posterior.epochs' (10) ends the chains before the first posterior sample (epoch 18: "
     "sample_start 18, the last 1 epoch(s) of each 6-epoch cycle); use epochs >= 18 or lower "
     "ramp_start/sample_start"),
    ({"cold_posterior": {"epochs": 30, "ramp_start": 20, "sample_start": 18}},
     "config key 'cold_posterior.ramp_start' (20) is after 'cold_posterior.sample_start' (18)"),
    ({"continual_learning": {"stream": "split_cifar10", "n_tasks": 8}},
     "config key 'continual_learning.n_tasks' is 8 but the split stream of CIFAR-10 has 5 two-class "
     "tasks; use n_tasks <= 5"),
    ({"benign_memorization": {"n_train": 60000}},
     "config key 'benign_memorization.n_train' is 60000 but CIFAR-10 has only 50000 training images; "
     "use at most 50000 (or null for all)"),
    ({"continual_learning": {"similarity": {"permuted_fractions": [1.0, 0.101]}}},
     "config key 'continual_learning.similarity.permuted_fractions': 0.101 is not a whole percentage of "
     "the pixels (run names hold whole percents, so it would run as 0.1); use e.g. 0.1"),
    ({"continual_learning": {"gamma_sweep": {"gammas": [0.00001, 0.1, 1.0]}}},
     "config key 'continual_learning.gamma_sweep.gammas': gamma0 1e-05 is not a plain decimal of at most 6 "
     "significant digits between 0.0001 and 999999, as the figures, claims and runs label gamma0 ('1e-05'; "
     "two values could share a label); use such a value (e.g. 0.0001)"),
    ({"papers": []}, "config key 'papers': [] should be non-empty"),
])
def test_config_constraints_are_checked_before_any_job(bad, message):
    with pytest.raises(ConfigError) as err:
        validate_config(bad, SCHEMA, config_errors)  # as the Snakefile calls it
    assert message in str(err.value)


def test_config_values_from_the_command_line_and_yaml_errors(tmp_path):
    from snakemake.cli import parse_config

    given = parse_config(["seeds=[11,12,13]", "continual_learning={n_tasks: 4, seeds: [5]}"])
    assert given["seeds"] == ["11", "12", "13"]  # what Snakemake hands over
    cfg = validate_config(given, SCHEMA)
    assert cfg["seeds"] == [11, 12, 13] and cfg["continual_learning"]["n_tasks"] == 4
    assert cfg["continual_learning"]["seeds"] == [5]

    broken = tmp_path / "broken.yaml"
    broken.write_text("scale: smoke\nseeds: [0, 1\nthreads: 1\n")
    with pytest.raises(ConfigError) as err:
        read_yaml(broken)
    assert str(err.value) == f"{broken}: invalid YAML at line 3, column 8: expected ',' or ']', but got ':'"
    res = subprocess.run([sys.executable, "-m", "replikit.tools.config_check", str(broken)],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 1 and "invalid YAML at line 3" in res.stderr


def test_more_images_than_the_prepared_data_is_an_error_not_a_clamp(tiny_images):
    with pytest.raises(data.DataError) as err:
        Run(RunSpec.parse(BM_RUN), dict(BM_CFG, n_train=41), tiny_images, 0, torch.device("cpu"))
    assert str(err.value).startswith("config key 'benign_memorization.n_train' asks for 41 training images "
                                     "but the prepared data has only 40")


# ---------------------------------------------------------------- 6. full disk, corrupt local copy first


def test_full_disk_is_reported_as_such(tmp_path):
    target = tmp_path / "model.pt"
    with pytest.raises(io.DiskFullError) as err:  # /dev/full: every write ends in ENOSPC
        io._atomic(target, lambda tmp: torch.save(torch.zeros(100_000), "/dev/full"))
    assert str(err.value).startswith(f"no space left on device while writing {target} (")
    assert "unexpected pos" in str(err.value.__cause__)  # what torch itself says
    assert list(tmp_path.iterdir()) == []  # neither the file nor a temporary is left


def test_corrupt_local_subset_fails_before_any_network_source(tmp_path, monkeypatch):
    bad = tmp_path / "cifar10-subset.npz"
    np.savez(bad, x_train=np.zeros((1, 3, 32, 32), np.uint8))
    tried = []
    monkeypatch.setattr(data, "_download", lambda *a: tried.append("torchvision"))
    monkeypatch.setattr(data, "_huggingface", lambda *a: tried.append("huggingface"))
    start = time.monotonic()
    with pytest.raises(data.ChecksumError) as err:
        data.prepare("cifar10", [str(tmp_path)], tmp_path / "dl")
    assert str(err.value).startswith(f"checksum mismatch for {bad}: md5 is ")
    assert tried == [] and time.monotonic() - start < 5


# ---------------------------------------------------------------- 7. two runs of one job


def test_a_job_that_a_live_process_runs_is_refused(tmp_path):
    log, out = tmp_path / "train.log", tmp_path / "metrics.json"
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import time, types
        from replikit.core.jobs import job
        sm = types.SimpleNamespace(log=[{str(log)!r}], output=[{str(out)!r}], rule="bm_train", threads=1,
                                   config={{"device": "cpu"}})
        with job(sm):
            print("epoch 1 of the first run", flush=True)
            time.sleep(60)
    """)], stdout=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while "epoch 1" not in (log.read_text() if log.exists() else "") and time.monotonic() < deadline:
            time.sleep(0.1)
        second = SimpleNamespace(log=[str(log)], output=[str(out)], rule="bm_train", threads=1,
                                 config={"device": "cpu"})
        with pytest.raises(JobLockedError) as err:
            with job(second):
                pass
        assert str(err.value) == (
            f"another process (pid {holder.pid}) is already running rule bm_train for {out} "
            f"(lock {lock_path(second)}). Two runs of one job would overwrite each other's checkpoint, log "
            "and outputs, so this one stops; wait for the other run to finish, then rerun")
        assert "epoch 1 of the first run" in log.read_text()  # the running job's log is untouched
        assert str(lock_path(second)).startswith(".snakemake/replikit-locks/")
        assert not list(log.parent.glob("*.lock"))  # nothing beside the logs
    finally:
        holder.kill()
        holder.wait()
    threads = torch.get_num_threads()
    with job(second) as device:  # the holder is dead: the kernel released its lock
        assert device.type == "cpu"
    torch.set_num_threads(threads)


CL_RUN = "seq_stream-pmnist100_mode-mup_width-none_gamma0-1.0"
SLURM_TIMEOUT_LOG = f"""\
[Mon Nov 23 11:02:10 2026]
Error in rule cl_train:
    message: SLURM-job '17' failed, SLURM status is: 'TIMEOUT'. Reason: Step 0: None.
    jobid: 0
    output: results/continual_learning/runs/{CL_RUN}/seed0.json
    log: logs/continual_learning/train/{CL_RUN}/seed0.log, .snakemake/slurm_logs/x.log
Error in rule cl_claims:
    message: SLURM-job '18' failed, SLURM status is: 'FAILED'. Reason: Step 0: NonZeroExitCode.
    jobid: 3
Error in rule prepare_dataset:
    message: SLURM-job '19' failed, SLURM status is: 'TIMEOUT'.
    jobid: 4
"""


def test_slurm_time_limit_names_the_runtime_key_to_raise():
    """The plugin only says TIMEOUT; the onerror hook names the config key (tests/test_slurm.py runs
    it for real). Failures other than TIMEOUT get no hint."""
    hints = time_limit_hints(SLURM_TIMEOUT_LOG, {"cl": "continual_learning"})
    assert len(hints) == 2, hints
    assert "rule cl_train" in hints[0] and "`continual_learning.resources.runtime`" in hints[0]
    assert "--set-resources cl_train:runtime=MINUTES" in hints[0]
    assert "rule prepare_dataset" in hints[1]
    assert "--set-resources prepare_dataset:runtime=MINUTES" in hints[1]
    assert not any("cl_claims" in h for h in hints)
    failed = SLURM_TIMEOUT_LOG.replace("TIMEOUT", "FAILED")
    assert time_limit_hints(failed, {"cl": "continual_learning"}) == []
