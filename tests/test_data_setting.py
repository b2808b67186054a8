"""A paper's data is a setting (issue 67): a dataset declared in one config entry, and two image papers
run on it by their config key `dataset` alone, with no code edit. Continual learning's run is the
shared continual-learning test DAG (tests/slurm_support.py: the SLURM comparison and the browser test
read it too), so it costs no job of its own; benign memorization's DAG runs here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.slurm_support import blobs_data, local_report, shared_root, smk, write_config

LABEL = "Blobs subset (160 training / 64 test images)"


def check_named(out: Path, paper: str) -> list[dict]:
    """The paper's runs, scorecard and figures in tree `out` name the dataset, and the scorecard and
    figures are in a folder of their own (results/<paper>/on-blobs/); its claim rows."""
    runs = [p.name for p in (out / f"results/{paper}/runs").iterdir()]
    assert runs and all("blobs" in r for r in runs), runs  # a dataset other than the paper's is in every name
    assert not (out / f"results/{paper}/claims.json").exists()  # the paper's own data keeps that path
    card = json.loads((out / f"results/{paper}/on-blobs/claims.json").read_text())
    assert card["data_label"] == LABEL
    assert all({"key": "data", "ours": LABEL, "paper": "full dataset"} in c["deviations"]
               for c in card["claims"] if c["deviations"])
    provenance = list((out / f"results/{paper}/on-blobs/figures").glob("*.provenance.json"))
    assert provenance and all(json.loads(p.read_text())["subset_title"] == "Blobs subset" for p in provenance)
    md = (out / "results/report/index.md").read_text()
    assert "**Data is the Blobs subset**" in md and "CIFAR-10 subset" not in md
    assert f"(../{paper}/on-blobs/figures/" in md  # the Markdown report links the section's own figures
    assert " — on dataset blobs" in md
    return card["claims"]


@pytest.mark.slow
def test_continual_learning_runs_on_a_dataset_declared_in_the_config(tmp_path_factory):
    """The shared CL test DAG runs on the synthetic dataset by config key `dataset` alone; its margins,
    from an MNIST pilot, say so on the rows that need them."""
    work = local_report(shared_root(tmp_path_factory)).parents[2]
    (folder,) = (work / "resources/data").glob("blobs-*")  # keyed by the file's md5 (data.freshness)
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["dataset_title"] == "Blobs" and manifest["counts"] == {"train": 160, "test": 64}
    assert not (work / "resources/data/mnist").exists()  # no run of the paper's own dataset
    rows = {c["id"]: c for c in check_named(work, "continual_learning")}
    assert "setting: Permuted Blobs (100% of pixels permuted), MLP" in json.dumps(rows)
    # the stream is named by the data it permutes, not as the paper's Permuted MNIST
    assert {"key": "stream", "ours": "permuted blobs", "paper": "split_cifar10"} in rows["CL-1"]["deviations"]
    # no seed had been seen on this data, and no claim registered on it (the smoke block's seen_seeds
    # and the lock are MNIST's)
    assert not any(r.get("seen_only") for r in rows.values()), [r["id"] for r in rows.values()]
    assert all(r["registration"]["registered"] is None for r in rows.values())
    for claim in ("CL-2", "CL-5"):
        assert rows[claim]["verdict"] == "inconclusive"
        assert any("margin from another dataset's pilot (MNIST, not Blobs)" in p.get("no_evidence", "")
                   for p in rows[claim]["parts"]), rows[claim]["parts"]


@pytest.mark.slow
def test_benign_memorization_runs_on_a_dataset_declared_in_the_config(tmp_path):
    overlay = {
        "outdir": ".", "papers": ["benign_memorization"], "seeds": [0],
        "data": blobs_data(tmp_path / "store"),
        # the key that names the data; the rest cut the smoke budgets to keep the test short
        "benign_memorization": {"dataset": "blobs", "n_train": 64, "probe_fit_size": 128, "epochs": 4,
                                "eval_every": 2, "checkpoint_every": 2,
                                "benchmark": {"steps": 2, "batch_size": 32}, "capacity": {"n_augs": [1, 4]}},
    }
    path = write_config(tmp_path / "overlay.yaml", overlay)
    res = smk("--cores", "2", "--configfile", str(ROOT / "config/smoke.yaml"), str(path), "--directory",
              str(tmp_path / "work"), timeout=900)
    assert res.returncode == 0, res.stderr[-5000:]
    check_named(tmp_path / "work", "benign_memorization")
    assert not (tmp_path / "work/resources/data/cifar10").exists()
