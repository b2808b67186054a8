import pandas as pd
import pytest
import torch

from replikit.papers import benign_memorization as bm
from replikit.papers import benign_memorization_analysis as an
from replikit.papers.benign_memorization import RunSpec
from replikit.scoring.aggregate import final_rows

# run names: 100% random labels, full augmentation with fresh views (the main run), no augmentation,
# K=1 fixed view, K=8 views each with its own label; 0% random labels with full augmentation
MAIN = "train_noise-1.0_augmentation-full_n_augs-none_label_per_view-false"
NO_AUG = "train_noise-1.0_augmentation-none_n_augs-none_label_per_view-false"
K1 = "train_noise-1.0_augmentation-full_n_augs-1_label_per_view-false"
K8 = "train_noise-1.0_augmentation-full_n_augs-8_label_per_view-true"
CLEAN = "train_noise-0.0_augmentation-full_n_augs-none_label_per_view-false"
CLEAN_NO_AUG = "train_noise-0.0_augmentation-none_n_augs-none_label_per_view-false"


def test_run_names_round_trip_and_reject_nonsense():
    for spec in [RunSpec(1.0, "full"), RunSpec(0.0, "none"), RunSpec(1.0, "light", 4, True),
                 RunSpec(0.25, "crop_flip", 16)]:
        assert RunSpec.parse(spec.name) == spec
    assert RunSpec(1, "full").name == RunSpec(1.0, "full").name  # one name however the noise is written
    assert RunSpec.parse(MAIN) == RunSpec(1.0, "full") and RunSpec.parse(K8) == RunSpec(1.0, "full", 8, True)
    for bad in [MAIN.replace("full", "fancy"),  # no such augmentation preset
                "train_noise-1.0_augmentation-full",  # parameters missing
                MAIN.replace("view-false", "view-true"),  # a label per view needs finitely many views
                MAIN.replace("noise-1.0", "noise-1"),  # not the canonical name
                "noise100_full_Kinf"]:  # the old grammar
        with pytest.raises(ValueError):
            RunSpec.parse(bad)


def test_experiments_share_identical_runs():
    cfg = {"augmentation": "full", "dataset": "cifar10",
           "probe_vs_epoch": {"label_noise": [0.0, 1.0], "augmentations": ["none", "full"]},
           "diversity": {"n_augs": [1, 4, "unlimited"]}, "capacity": {"n_augs": [1, 4, 16]}}
    runs = bm.experiment_runs(cfg)
    assert runs["augmentation_diversity"][-1] == RunSpec(1.0, "full")  # K=unlimited is the main run
    assert runs["capacity"][0] == runs["augmentation_diversity"][0]  # K=1: one view, one label
    assert runs["capacity"][2].label_per_view
    names = [r.name for r in bm.all_runs(cfg)]
    assert len(names) == len(set(names)) == 4 + 2 + 2
    # another dataset (config key `dataset`) is in every run's name, so two datasets never share a
    # result; CIFAR-10's runs keep the names they always had
    assert MAIN in names and CLEAN_NO_AUG in names
    other = [r.name for r in bm.all_runs({**cfg, "dataset": "mnist"})]
    assert other == [n + "_dataset-mnist" for n in names]
    assert all(RunSpec.parse(n).dataset == "mnist" for n in other)
    with pytest.raises(ValueError, match="named without it"):
        RunSpec(1.0, "full", dataset="cifar10")
    assert bm.config_errors({"dataset": "nope"}) == [
        "config key 'benign_memorization.dataset' is 'nope', not a registered dataset; use one of cifar10, "
        "mnist (docs/data.md: how to add one)"]


def test_random_labels_noise_levels():
    y = torch.arange(10000) % 10
    assert torch.equal(bm.random_labels(y, 0.0, 10, seed=0), y)
    noisy = bm.random_labels(y, 1.0, 10, seed=0)
    assert 0.85 < (noisy != y).float().mean() < 0.95  # a random label hits the true one 1/10 times
    assert torch.equal(noisy, bm.random_labels(y, 1.0, 10, seed=0))
    half = bm.random_labels(y, 0.5, 10, seed=0)
    assert 0.4 < (half != y).float().mean() < 0.5


def test_view_labels_keep_view_zero_and_are_fixed():
    labels = torch.arange(50) % 10
    idx = torch.arange(50)
    zero = bm.view_labels(labels, idx, torch.zeros(50, dtype=torch.long), 8, 10, seed=0)
    assert torch.equal(zero, labels)
    v3 = bm.view_labels(labels, idx, torch.full((50,), 3), 8, 10, seed=0)
    assert torch.equal(v3, bm.view_labels(labels, idx, torch.full((50,), 3), 8, 10, seed=0))
    assert (v3 != labels).float().mean() > 0.6


def test_fixed_views_repeat_and_unlimited_views_do_not(tiny_images):
    cfg = {"n_train": None, "subset_seed": 0, "probe_fit_size": None, "probe_k": 3,
           "model": {"name": "cnn4", "width": 4, "projector_width": 8}, "eval_views_max": 100}
    fixed = bm.Run(RunSpec(1.0, "full", 1), cfg, tiny_images, 0, torch.device("cpu"))
    idx = torch.arange(5)
    a, _ = fixed.views(idx, torch.Generator().manual_seed(0))
    b, _ = fixed.views(idx, torch.Generator().manual_seed(1))
    assert torch.equal(a, b)  # K=1: the same augmentation every time
    free = bm.Run(RunSpec(1.0, "full"), cfg, tiny_images, 0, torch.device("cpu"))
    c, _ = free.views(idx, torch.Generator().manual_seed(0))
    d, _ = free.views(idx, torch.Generator().manual_seed(1))
    assert not torch.equal(c, d)


def test_layer_report_covers_every_stage(tiny_images):
    cfg = {"n_train": 20, "subset_seed": 0, "probe_fit_size": None, "probe_k": 3,
           "model": {"name": "cnn4", "width": 4, "projector_width": 8}, "eval_views_max": 100}
    run = bm.Run(RunSpec(1.0, "light"), cfg, tiny_images, 0, torch.device("cpu"))
    rep = run.layer_report()
    for key in ("probe_acc", "untrained_probe_acc", "random_label_knn"):
        assert list(rep[key]) == run.model.stage_names
        assert all(0 <= v <= 1 for v in rep[key].values())
    # an untrained copy of the network is the same as the run's network before training
    assert rep["probe_acc"] == rep["untrained_probe_acc"]


def test_claims_from_synthetic_results():

    cfg = {"augmentation": "full",
           "probe_vs_epoch": {"label_noise": [1.0], "augmentations": ["none", "full"]},
           "diversity": {"n_augs": [1, "unlimited"]}, "capacity": {"n_augs": [1, 8]}}
    runs = bm.experiment_runs(cfg)
    rows = []
    for seed in range(5):
        for run, probe, acc in [(MAIN, 0.5, 0.99), (NO_AUG, 0.35, 1.0), (K1, 0.4, 0.99), (K8, 0, 0.3)]:
            rows.append({"run": run, "seed": seed, "epoch": 0, "probe_acc": 0.3, "train_acc_clean": 0.1,
                         "train_acc_views": 0.1})
            rows.append({"run": run, "seed": seed, "epoch": 10, "probe_acc": probe + 0.01 * seed,
                         "train_acc_clean": acc, "train_acc_views": acc})
    hist = pd.DataFrame(rows)
    from replikit.scoring.claims import evaluate

    layers = pd.DataFrame([{"run": run, "seed": s, "stage": st, "probe_acc": p,
                            "random_label_knn": r}
                           for run in (MAIN, NO_AUG)  # BM-3's falsifier reads the no-aug run's layers
                           for s in range(5) for st, p, r in [("pooled", 0.5, 0.2), ("projector", 0.4, 0.6),
                                                               ("output", 0.3, 0.9 + 0.01 * s)]])
    rows = {r["id"]: r for r in evaluate(
        an.claims(runs, "full"), {"history": hist, "final": final_rows(hist), "layers": layers}, cfg=cfg)}
    assert {k: r["verdict"] for k, r in rows.items()} == {
        "BM-1": "replicated", "BM-2": "replicated", "BM-3": "replicated",
        "BM-4": "inconclusive",  # memorization equal at both K in every seed: exactly at the threshold
        "BM-5": "replicated", "BM-6": "inconclusive"}
    assert "exposure confound" in rows["BM-5"]["caveat"]
    assert rows["BM-6"]["note"].startswith("not measurable at this scale: no 0% label-noise runs")


def test_early_layers_unaffected_by_label_noise_claim():
    cfg = {"augmentation": "full",
           "probe_vs_epoch": {"label_noise": [0.0, 1.0], "augmentations": ["none", "full"]},
           "diversity": {"n_augs": ["unlimited"]}, "capacity": {"n_augs": [1]}}
    drops = {"conv1": (0.40, 0.39), "pooled": (0.6, 0.57), "projector": (0.7, 0.6), "output": (0.7, 0.3)}
    # the falsifier reads the same pair without augmentation (here: the same numbers)
    layers = pd.DataFrame([{"run": run, "seed": s, "stage": st, "depth": d, "probe_acc": accs[i] + 0.01 * s}
                           for s in range(5) for d, (st, accs) in enumerate(drops.items())
                           for pair in ((CLEAN, MAIN), (CLEAN_NO_AUG, NO_AUG)) for i, run in enumerate(pair)])
    claim = next(c for c in an.claims(bm.experiment_runs(cfg), "full") if c.id == "BM-6")
    from replikit.scoring.claims import evaluate

    row = evaluate([claim], {"layers": layers}, cfg=cfg)[0]  # (0% noise, 100%) per stage
    assert row["verdict"] == "replicated"
    # the best encoder stage under noise is pooled (not conv1, the first, nor the projector)
    assert row["parts"][0]["mean"] == pytest.approx(0.4 - 0.03)
    assert row["parts"][1]["mean"] == pytest.approx(0.05, abs=0.002)
    damaged = layers.copy()
    damaged.loc[(damaged.run == MAIN) & (damaged.stage == "pooled"), "probe_acc"] -= 0.1
    row = evaluate([claim], {"layers": damaged}, cfg=cfg)[0]  # the encoder loses a fifth: not "unaffected"
    assert row["parts"][1]["verdict"] == "not replicated" and row["verdict"] == "not replicated"
    with pytest.raises(KeyError, match=CLEAN):  # the 0% run missing: an error, not a verdict
        evaluate([claim], {"layers": layers[layers.run != CLEAN]}, cfg=cfg)


def test_training_config_leaves_out_experiment_lists(root):
    from replikit.core.config import load_config

    cfg = load_config(root / "config/smoke.yaml", root / "workflow/schemas/config.schema.yaml")
    train = bm.training_config(cfg["benign_memorization"])
    assert "diversity" not in train and "resources" not in train and "augmentation" not in train
    assert train["epochs"] == cfg["benign_memorization"]["epochs"]
