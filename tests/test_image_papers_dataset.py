"""Issue 67 for cold posterior, depthwise transfer and super consistency: each takes its dataset from
its config key `dataset`. On a registered dataset of another shape (one channel, 8x8, five classes, no
recorded normalisation), its runs carry the dataset in their names, its networks take the dataset's
channels and classes, its training runs, and the margins that a CIFAR-10 pilot set read "no evidence".
The paper's own runs keep their names. (Continual learning and benign memorization run whole DAGs on a
declared dataset in tests/test_data_setting.py.)"""

from __future__ import annotations

import re

import pytest
import torch

from replikit.data import datasets
from replikit.papers import cold_posterior as cp
from replikit.papers import depthwise_transfer as dt
from replikit.papers import super_consistency as sc
from replikit.papers import super_consistency_analysis as sca
from replikit.plan.bill import load
from tests.test_cold_posterior import _cfg as cp_config
from tests.test_depthwise_transfer import MID, _verdicts, sweeps
from tests.test_super_consistency import CFG as SC_CONFIG
from tests.test_super_consistency import _points

GRAY = datasets.Dataset("gray", "Gray", (40, 20), shape=(1, 8, 8), n_classes=5)
MODULES = {"cold_posterior": cp, "depthwise_transfer": dt, "super_consistency": sc}


@pytest.fixture
def gray():
    """The dataset registered for the test only; its tensors (uint8 images, five classes)."""
    g = torch.Generator().manual_seed(0)

    def split(n: int) -> tuple[torch.Tensor, torch.Tensor]:
        y = torch.arange(n) % 5
        x = torch.randint(0, 80, (n, 1, 8, 8), generator=g) + 30 * y.view(-1, 1, 1, 1)
        return x.clamp(0, 255).to(torch.uint8), y

    (xtr, ytr), (xte, yte) = split(40), split(20)
    with datasets.scoped():
        datasets.register(GRAY)
        yield {"x_train": xtr, "y_train": ytr, "x_test": xte, "y_test": yte, "classes": list("abcde")}


def _smoke(paper: str, **keys) -> dict:
    return {**load(["config/smoke.yaml"])[paper], **keys}


@pytest.mark.parametrize("paper", sorted(MODULES))
def test_runs_on_another_dataset_carry_it_and_the_papers_own_keep_their_names(gray, paper):
    module = MODULES[paper]
    own = [s.name for runs in module.experiment_runs(_smoke(paper)).values() for s in runs]
    other = [s.name for runs in module.experiment_runs(_smoke(paper, dataset="gray")).values() for s in runs]
    assert own and not any("dataset" in name for name in own)
    assert sorted(other) == sorted(f"{name}_dataset-gray" for name in own)
    pattern = module.RUNS.spec.pattern()
    for name in other:
        assert re.fullmatch(pattern, name) and module.RUNS.spec.parse(name).name == name


@pytest.mark.parametrize("paper", sorted(MODULES))
def test_an_unknown_dataset_is_a_config_error_that_names_the_key_and_the_fix(paper):
    errors = MODULES[paper].config_errors(_smoke(paper, dataset="nope"))
    assert errors and f"config key '{paper}.dataset' is 'nope', not a registered dataset" in errors[0]
    assert "data.datasets (docs/data.md" in errors[0]


@pytest.mark.parametrize("model", ["mlp", "rescnn"])
def test_depthwise_transfer_trains_on_the_datasets_shape_and_classes(gray, model):
    cfg = {**_smoke("depthwise_transfer"), "model": model, "base_width": 8, "lrs": [0.5, 2.0], "steps": 3,
           "batch_size": 8, "n_train": 32, "n_eval": 16, "n_test": 10}
    spec = dt.sweep("one", 2, 8, "gray")
    out = dt.run_sweep(spec, cfg, gray, 1)
    assert all(not it["diverged"] and it["train_loss"] > 0 for it in out["items"])
    net = dt.build(spec, cfg, 0, (1, 8, 8) if model == "rescnn" else (64,), torch.device("cpu"))
    assert net(torch.zeros(2, *((1, 8, 8) if model == "rescnn" else (64,))), 0).shape == (2, 5)
    assert dt.chance_loss("gray") == pytest.approx(torch.log(torch.tensor(5.0)).item())


def test_super_consistency_trains_on_the_datasets_shape_and_classes(gray):
    out = sc.run(sc.Train("mup", "gray"), {**SC_CONFIG, "n_train": 32, "hessian_batch": 8}, gray, 0)
    assert [it["width"] for it in out["items"]] == sorted(SC_CONFIG["widths"])
    assert sc.run_inputs({}, type("W", (), {"run": "train_param-mup_dataset-gray"}))["manifest"].endswith(
        "gray/manifest.json")


def test_cold_posterior_takes_the_datasets_channels_and_its_own_normalisation(gray):
    cfg = cp_config(dataset="gray", image_size=8, n_train=32, n_test=20)
    run = cp.Run(cp.RunSpec("plain", "crop_flip", dataset="gray"), cfg, gray, 0, torch.device("cpu"))
    assert run.model.features[0].in_channels == 1 and run.model.fc.out_features == 5
    # no recorded mean and std: the training images' own, one per channel
    assert run.mean.shape == (1, 1, 1, 1) and run.mean.item() == pytest.approx(run.x.mean().item())
    assert run.normalize(run.x).std().item() == pytest.approx(1.0, abs=1e-4)
    cifar = cp.channel_stats("cifar10", torch.zeros(1, 3, 2, 2))  # the paper's: its record's
    assert cifar[0].flatten().tolist() == pytest.approx(list(datasets.get("cifar10").mean))


def test_margins_from_a_cifar10_pilot_carry_no_evidence_on_other_data(gray):
    """DT-1/3/4 and SC-1/SC-3 read inconclusive on data their margins' pilot did not see, and say why;
    with `pilot_dataset` naming that data they are judged as usual."""
    why = "margin from another dataset's pilot (CIFAR-10, not Gray)"
    cfg = _smoke("depthwise_transfer", dataset="gray")
    rows = _verdicts(cfg, sweeps(cfg, lambda s, seed: MID))
    for claim in ("DT-1", "DT-3", "DT-4"):
        assert rows[claim]["verdict"] == "inconclusive"
        assert all(why in p["no_evidence"] for p in rows[claim]["parts"])
    rows = _verdicts({**cfg, "pilot_dataset": "gray"}, sweeps(cfg, lambda s, seed: MID))
    assert rows["DT-1"]["verdict"] == "replicated"

    cfg = _smoke("super_consistency", dataset="gray")
    for pilot, expect in (("cifar10", False), ("gray", True)):
        claims = {c.id: c for c in sca.claims(sc.experiment_runs(cfg), {**cfg, "pilot_dataset": pilot})}
        parts = claims["SC-1"].measure({"points": _points(0.0, 0.3)})
        assert all(bool(p.no_evidence) != expect for p in parts)
        assert expect or why in parts[0].no_evidence
