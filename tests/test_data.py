import json

import numpy as np
import pytest
import torch

from replikit.data import prepare as data
from tests.conftest import SHARED


def test_subset_is_used_only_after_local_and_download(tmp_path, monkeypatch):
    calls = []

    def no_download(name, download_dir):
        calls.append("torchvision")
        raise data.SourceUnavailable("offline")

    monkeypatch.setattr(data, "_download", no_download)
    prepared = data.prepare("cifar10", [str(SHARED)], tmp_path / "dl", ["local", "torchvision", "subset"])
    assert calls == ["torchvision"]  # the real download is tried before the subset
    assert prepared.subset and prepared.source.startswith("subset:")
    assert prepared.x_train.shape == (7728, 3, 32, 32) and prepared.x_train.dtype == torch.uint8
    assert prepared.x_test.shape == (1000, 3, 32, 32)
    assert sorted(prepared.y_train.unique().tolist()) == list(range(10))


def test_download_result_wins_over_subset(tmp_path, monkeypatch):
    fake = data.Prepared(torch.zeros(2, 3, 4, 4, dtype=torch.uint8), torch.zeros(2, dtype=torch.long),
                         torch.zeros(1, 3, 4, 4, dtype=torch.uint8), torch.zeros(1, dtype=torch.long),
                         ["a"], source="torchvision-download", source_files={})
    monkeypatch.setattr(data, "_download", lambda name, d: fake)
    got = data.prepare("cifar10", [str(SHARED)], tmp_path, ["local", "torchvision", "subset"])
    assert got is fake and not got.subset


def test_local_mnist_is_copied_and_extracted_outside_shared(tmp_path):
    prepared = data.prepare("mnist", [str(SHARED)], tmp_path / "dl", ["local"])
    assert prepared.x_train.shape == (60000, 1, 28, 28) and prepared.y_test.numel() == 10000
    assert (tmp_path / "dl" / "MNIST" / "raw" / "train-images-idx3-ubyte").exists()
    assert not prepared.subset


def test_corrupt_local_copy_is_an_error(tmp_path):
    bad = tmp_path / "cifar10-subset.npz"
    np.savez(bad, x_train=np.zeros((1, 3, 32, 32), np.uint8))
    with pytest.raises(data.ChecksumError, match="checksum mismatch"):
        data.prepare("cifar10", [str(tmp_path)], tmp_path / "dl", ["subset"])


def test_no_copy_and_no_network_says_what_to_download(tmp_path, monkeypatch):
    monkeypatch.setattr(data, "_download", lambda n, d: (_ for _ in ()).throw(data.SourceUnavailable("x")))
    with pytest.raises(data.DataError, match=r"cifar-10-python\.tar\.gz.*search_paths"):
        data.prepare("cifar10", [str(tmp_path)], tmp_path / "dl", ["local", "torchvision", "subset"])


def test_save_and_load_check_the_manifest(tmp_path):
    prepared = data.prepare("cifar10", [str(SHARED)], tmp_path, ["subset"])
    manifest = data.save(prepared, tmp_path / "t.pt", tmp_path / "m.json")
    assert manifest["subset"] is True and manifest["counts"] == {"train": 7728, "test": 1000}
    assert json.loads((tmp_path / "m.json").read_text())["sha256"] == manifest["sha256"]
    loaded = data.load(tmp_path / "t.pt", manifest)
    assert torch.equal(loaded["x_test"], prepared.x_test)
    with open(tmp_path / "t.pt", "ab") as f:
        f.write(b"corruption")
    with pytest.raises(data.ChecksumError, match="does not match its manifest"):
        data.load(tmp_path / "t.pt", manifest)


# ---------------------------------------------------------------- datasets a paper declares


def test_a_declared_dataset_is_prepared_like_the_built_in_ones(tmp_path, monkeypatch):
    """A paper's own dataset (here: MNIST's files under another name) goes through the same
    sources, checksums, copy-outside-shared and error messages as MNIST."""
    from replikit.data import datasets
    from replikit.data.datasets import size_errors

    monkeypatch.setattr(datasets, "_REGISTRY", dict(datasets._REGISTRY))
    monkeypatch.setattr(datasets, "_DECLARED_BY", dict(datasets._DECLARED_BY))
    digits = datasets.register(datasets.Dataset("digits", "Digits", (60000, 10000),
                                                local_files=datasets.MNIST.local_files, torchvision="MNIST"))
    assert datasets.register(digits) is digits and "digits" in datasets.names()
    with pytest.raises(ValueError, match=r"'digits' is declared twice, differently \(by an unnamed "
                       r"declaration, then by paper 'p'; they differ in title, sizes, local_files, "
                       r"torchvision\); give the new one another name \(a test .* `scoped\(\)`\)"):
        datasets.register(datasets.Dataset("digits", "Other", (1, 1)), by="paper 'p'")
    with datasets.scoped():
        datasets.register(datasets.Dataset("scratch", "Scratch", (1, 1)))
    assert "scratch" not in datasets.names() and "digits" in datasets.names()
    assert size_errors("x.n_train", 70000, "digits", "train") == [
        "config key 'x.n_train' is 70000 but Digits has only 60000 training images; use at most 60000 "
        "(or null for all)"]

    prepared = data.prepare("digits", [str(SHARED)], tmp_path / "dl", ["local"])
    # names and checksums, never an absolute path (the source is shown in every scorecard and report)
    assert prepared.source.startswith("local:train-images-idx3-ubyte.gz (md5 ")
    assert str(SHARED) not in prepared.source
    assert prepared.x_train.shape == (60000, 1, 28, 28)
    assert (tmp_path / "dl/MNIST/raw/train-images-idx3-ubyte").exists()

    with pytest.raises(data.DataError, match=r"(?s)subset: no verified subset is declared for Digits.*"
                       r"Download MNIST/raw/ with train-images-idx3-ubyte.gz"):
        data.prepare("digits", [str(tmp_path / "empty")], tmp_path / "dl2", ["local", "subset"])
    with pytest.raises(data.DataError, match="unknown dataset 'nope'; available: cifar10, digits, mnist"):
        data.prepare("nope", [str(SHARED)], tmp_path / "dl3", ["local"])
    with pytest.raises(ValueError, match="use lowercase letters and digits"):
        datasets.Dataset("Bad_Name", "x", (1, 1))


def test_a_local_npz_dataset_prepares_with_the_default_sources_and_names_itself(tmp_path, monkeypatch):
    """A dataset that is only a local .npz file (no torchvision class, no hub id) prepares with the
    default sources (the network ones are skipped, not a TypeError), its manifest names it, its
    banner and deviation say its name and counts, and a missing file names the file and where to put it."""
    from replikit.core.io import file_digest
    from replikit.data import datasets

    rng = np.random.default_rng(0)
    npz = tmp_path / "store" / "blobs.npz"
    npz.parent.mkdir()
    np.savez(npz, x_train=rng.integers(0, 255, (12, 1, 8, 8), dtype=np.uint8), y_train=np.arange(12) % 3,
             x_test=rng.integers(0, 255, (6, 1, 8, 8), dtype=np.uint8), y_test=np.arange(6) % 3,
             classes=np.array(["a", "b", "c"]))
    monkeypatch.setattr(datasets, "_REGISTRY", dict(datasets._REGISTRY))
    monkeypatch.setattr(datasets, "_DECLARED_BY", dict(datasets._DECLARED_BY))
    md5 = file_digest(npz, "md5")
    datasets.register(datasets.Dataset("blobs", "Blobs", (12, 6), subset=("blobs.npz", md5)))
    monkeypatch.setattr(data, "_reachable", lambda *a, **k: False)  # offline either way

    prepared = data.prepare("blobs", [str(tmp_path / "store")], tmp_path / "dl")  # every default source
    manifest = data.save(prepared, tmp_path / "t.pt", tmp_path / "m.json")
    assert manifest["dataset"] == "blobs" and manifest["dataset_title"] == "Blobs" and manifest["subset"]
    assert datasets.data_label(manifest) == "Blobs subset (12 training / 6 test images)"
    assert datasets.subset_title({**manifest, "dataset_title": ""}) == "Blobs subset"  # older manifests
    assert datasets.data_label({**manifest, "subset": False}) == ""
    from replikit.scoring.fidelity import deviations
    assert deviations({}, {}, subset=datasets.data_label(manifest)) == [
        {"key": "data", "ours": "Blobs subset (12 training / 6 test images)", "paper": "full dataset"}]

    with pytest.raises(data.DataError, match=r"its file blobs\.npz is a file of your own, which no source "
                       r"downloads; put it in one of data\.search_paths"):
        data.prepare("blobs", [str(tmp_path / "empty")], tmp_path / "dl2")


def test_the_cifar10_subset_banner_names_cifar10_and_its_counts():
    """The built-in subset's label, from a manifest written before manifests named their dataset."""
    from replikit.data.datasets import data_label

    old = {"subset": True, "source": "subset:cifar10-subset.npz (md5 8299bffa37f3)",
           "counts": {"train": 7728, "test": 1000}}
    assert data_label(old) == "CIFAR-10 subset (7,728 training / 1,000 test images)"


def test_offline_network_sources_give_up_at_once_and_the_hub_is_not_retried(tmp_path, monkeypatch):
    """With no route to any host, torchvision and the Hugging Face hub are skipped after one failed
    connection each (the hub's own retries took 23.5 s here), and the rest of the job reads only the
    hub's local cache."""
    import socket

    import datasets

    tries = []

    def refuse(address, timeout=None):
        tries.append(address[0])
        raise OSError("Name or service not known")

    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(datasets, "load_dataset", lambda *a, **k: pytest.fail("the hub was called offline"))
    monkeypatch.setattr(data, "UNREACHABLE", set())
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")  # restored after the test: prepare sets it to 1
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "0")
    prepared = data.prepare("cifar10", [str(SHARED)], tmp_path / "dl",
                            ["torchvision", "huggingface", "subset"])
    assert prepared.subset and tries == ["www.cs.toronto.edu", "huggingface.co"]
    import os

    assert os.environ["HF_HUB_OFFLINE"] == "1"
    data.prepare("cifar10", [str(SHARED)], tmp_path / "dl2", ["torchvision", "subset"])
    assert tries == ["www.cs.toronto.edu", "huggingface.co"]  # a host that failed once is not tried again


def test_a_dataset_declared_in_the_config_is_registered_and_a_clash_named(monkeypatch):
    """Config key data.datasets declares a dataset in one entry (registered when the config is
    checked, and in every job); redeclaring a built-in one differently is a config error naming the key."""
    from replikit.data import datasets
    from replikit.papers.registry import config_errors

    monkeypatch.setattr(datasets, "_REGISTRY", dict(datasets._REGISTRY))
    monkeypatch.setattr(datasets, "_DECLARED_BY", dict(datasets._DECLARED_BY))
    entry = {"title": "Blobs", "sizes": [160, 64], "subset": ["blobs.npz", "0" * 32], "shape": [3, 16, 16],
             "n_classes": 4}
    assert config_errors({"papers": [], "data": {"datasets": {"blobs": entry}}}) == []
    assert datasets.image_shape("blobs") == (3, 16, 16) and datasets.class_count("blobs") == 4
    assert datasets.get("blobs").mean is None  # the streams then normalise by the images' own statistics
    clash = config_errors({"papers": [], "data": {"datasets": {"mnist": entry}}})
    assert len(clash) == 1 and clash[0].startswith("config key 'data.datasets.mnist': dataset 'mnist' is "
                                                   "declared twice, differently (by replikit.data.datasets")


def _blobs(tmp_path, monkeypatch, **declared):
    """A 3-class .npz of 8x8 grey images declared as `blobs` (declaration fields overridden by
    `declared`), prepared offline."""
    from replikit.core.io import file_digest
    from replikit.data import datasets

    rng = np.random.default_rng(0)
    npz = tmp_path / "store" / "blobs.npz"
    npz.parent.mkdir(exist_ok=True)
    np.savez(npz, x_train=rng.integers(0, 255, (12, 1, 8, 8), dtype=np.uint8), y_train=np.arange(12) % 3,
             x_test=rng.integers(0, 255, (6, 1, 8, 8), dtype=np.uint8), y_test=np.arange(6) % 3,
             classes=np.array(["a", "b", "c"]))
    monkeypatch.setattr(datasets, "_REGISTRY", dict(datasets._REGISTRY))
    monkeypatch.setattr(datasets, "_DECLARED_BY", dict(datasets._DECLARED_BY))
    fields = {"sizes": (12, 6), "shape": (1, 8, 8), "n_classes": 3, **declared}
    ds = datasets.register(datasets.Dataset("blobs", "Blobs", subset=("blobs.npz", file_digest(npz, "md5")),
                                            **fields))
    monkeypatch.setattr(data, "_reachable", lambda *a, **k: False)
    return data.prepare("blobs", [str(tmp_path / "store")], tmp_path / "dl"), ds


@pytest.mark.parametrize("declared, says", [
    ({}, None),
    ({"n_classes": 2}, "`n_classes` of dataset 'blobs' (config key data.datasets.blobs.n_classes, or its "
                       "Dataset(...)) is 2, but the file holds labels 0 .. 2; fix: declare n_classes: 3"),
    ({"shape": (3, 8, 8)}, "`shape` of dataset 'blobs' (config key data.datasets.blobs.shape, or its "
                           "Dataset(...)) is [3, 8, 8], but the file's images are [1, 8, 8]"),
    ({"sizes": (10, 6)}, "`sizes` of dataset 'blobs' (config key data.datasets.blobs.sizes, or its "
                         "Dataset(...)) is [10, 6] (train, test), but the subset file holds [12, 6]"),
])
def test_a_file_that_disagrees_with_its_declaration_is_named_field_by_field(tmp_path, monkeypatch, declared,
                                                                           says):
    """Labels out of range, another image shape, more images than declared: each stops the prepare job
    before anything is written, naming the declaration's field, the file's value and the fix."""
    from replikit.data import validate

    prepared, ds = _blobs(tmp_path, monkeypatch, **declared)
    if says is None:
        assert validate.mismatches(prepared, ds) == []
        return
    with pytest.raises(data.DataError, match="is not as declared; nothing was prepared") as e:
        validate.check(prepared, ds)
    assert says in str(e.value)
