"""A paper's data is a setting (issue 67): a dataset declared in one config entry, and two image papers
run on it by their config key `dataset` alone, with no code edit."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml

from replikit.core.io import file_digest
from tests.conftest import ROOT, SHARED
from tests.test_workflow import smk

SIZES = (160, 64)  # training and test images in the file


def write_blobs(folder) -> str:
    """A small synthetic image dataset, 3x16x16 in 4 classes (each class a tint), as the .npz a
    dataset record declares; its md5."""
    rng = np.random.default_rng(0)

    def split(n: int) -> tuple[np.ndarray, np.ndarray]:
        y = np.arange(n) % 4
        x = rng.integers(0, 90, (n, 3, 16, 16))
        x[np.arange(n), y % 3] += 120 + 30 * (y // 3)[:, None, None]
        return x.clip(0, 255).astype(np.uint8), y

    (xtr, ytr), (xte, yte) = split(SIZES[0]), split(SIZES[1])
    folder.mkdir(parents=True)
    path = folder / "blobs.npz"
    np.savez(path, x_train=xtr, y_train=ytr, x_test=xte, y_test=yte, classes=np.array(list("abcd")))
    return file_digest(path, "md5")


@pytest.mark.slow
def test_two_papers_run_on_a_dataset_declared_in_the_config(tmp_path):
    md5 = write_blobs(tmp_path / "store")
    entry = {"title": "Blobs", "sizes": list(SIZES), "subset": ["blobs.npz", md5], "shape": [3, 16, 16],
             "n_classes": 4}
    overlay = {
        "papers": ["continual_learning", "benign_memorization"], "seeds": [0],
        "data": {"search_paths": [str(tmp_path / "store"), str(SHARED)], "sources": ["local", "subset"],
                 "datasets": {"blobs": entry}},
        # the only keys that name the data; the rest cut the smoke budgets to keep the test short
        "continual_learning": {"dataset": "blobs", "seeds": [0], "n_tasks": 2, "n_train": 48, "n_test": 24,
                               "epochs": 2, "width_sweep": {"widths": [64, 256], "gamma0": 1.0},
                               "gamma_sweep": {"widths": [64, 128], "gammas": [0.3, 1.0, 3.0]},
                               "similarity": {"permuted_fractions": [1.0, 0.3]}},
        "benign_memorization": {"dataset": "blobs", "n_train": 64, "probe_fit_size": 128, "epochs": 4,
                                "eval_every": 2, "checkpoint_every": 2,
                                "benchmark": {"steps": 2, "batch_size": 32},
                                "capacity": {"n_augs": [1, 4]}},
    }
    (tmp_path / "overlay.yaml").write_text(yaml.safe_dump(overlay))
    res = smk("--cores", "2", "--configfile", str(ROOT / "config/smoke.yaml"), str(tmp_path / "overlay.yaml"),
              "--directory", str(tmp_path), timeout=1200)
    assert res.returncode == 0, res.stderr[-5000:]
    out = tmp_path / "scales/smoke"

    # the data rule prepared the declared file, and the manifest names it
    manifest = json.loads((tmp_path / "resources/data/blobs/manifest.json").read_text())
    assert manifest["dataset_title"] == "Blobs" and manifest["counts"] == {"train": 160, "test": 64}
    # every run's name carries the dataset; no run of the papers' own datasets ran
    runs = {p.name for paper in ("continual_learning", "benign_memorization")
            for p in (out / f"results/{paper}/runs").iterdir()}
    assert runs and all("blobs" in r for r in runs), runs
    assert not any((tmp_path / f"resources/data/{d}").exists() for d in ("mnist", "cifar10"))

    label = "Blobs subset (160 training / 64 test images)"
    for paper in ("continual_learning", "benign_memorization"):
        card = json.loads((out / f"results/{paper}/claims.json").read_text())
        assert card["data_label"] == label
        assert all({"key": "data", "ours": label, "paper": "full dataset"} in c["deviations"]
                   for c in card["claims"] if c["deviations"])
        for prov in (out / f"results/{paper}/figures").glob("*.provenance.json"):
            assert json.loads(prov.read_text())["subset_title"] == "Blobs subset", prov
    # CL-2's and CL-5's margins came from an MNIST pilot: on Blobs their parts say so
    rows = json.loads((out / "results/continual_learning/claims.json").read_text())["claims"]
    card = {c["id"]: c for c in rows}
    for claim in ("CL-2", "CL-5"):
        assert card[claim]["verdict"] == "inconclusive"
        assert any("margin from another dataset's pilot (MNIST, not Blobs)" in p.get("no_evidence", "")
                   for p in card[claim]["parts"]), card[claim]["parts"]
    assert "setting: Permuted Blobs (100% of pixels permuted), MLP" in json.dumps(rows)
    md = (out / "results/report/index.md").read_text()
    assert "**Data is the Blobs subset**" in md
    assert "CIFAR-10 subset" not in md
