import numpy as np
import pytest
import torch

from replikit.probes import knn_accuracy, knn_predict
from replikit.stats import bootstrap_ci, paired_differences


def _brute_force_knn(train, labels, test, k):
    tn = train / np.linalg.norm(train, axis=1, keepdims=True)
    qn = test / np.linalg.norm(test, axis=1, keepdims=True)
    out = []
    for q in qn:
        nn = np.argsort(-(tn @ q), kind="stable")[:k]
        out.append(np.bincount(labels[nn], minlength=labels.max() + 1).argmax())
    return np.array(out)


def test_knn_matches_brute_force():
    g = torch.Generator().manual_seed(0)
    train, test = torch.randn(300, 16, generator=g), torch.randn(50, 16, generator=g)
    labels = torch.randint(0, 5, (300,), generator=g)
    ours = knn_predict(train, labels, test, k=20, num_classes=5, chunk=7)
    ref = _brute_force_knn(train.numpy(), labels.numpy(), test.numpy(), 20)
    assert (ours.numpy() == ref).mean() > 0.97  # exact up to distance ties


def test_knn_separable_clusters_and_scale_invariance():
    centres = torch.eye(4) * 10
    train = centres.repeat_interleave(25, 0) + torch.randn(100, 4) * 0.1
    labels = torch.arange(4).repeat_interleave(25)
    test = centres + torch.randn(4, 4) * 0.1
    assert knn_accuracy(train, labels, test * 1000, torch.arange(4), k=20) == 1.0


def test_knn_tie_goes_to_smaller_label_and_exclude_self():
    train = torch.tensor([[1.0, 0.0], [1.0, 0.01]])
    assert knn_predict(train, torch.tensor([3, 1]), torch.tensor([[1.0, 0.005]]), k=2).item() == 1
    feats = torch.tensor([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]])
    labels = torch.tensor([0, 1, 1, 0])  # each point's nearest *other* point has the other label
    loo = knn_predict(feats, labels, feats, k=1, exclude_self=True)
    assert torch.equal(loo, 1 - labels)
    with pytest.raises(ValueError):
        knn_predict(feats, labels, feats, k=4, exclude_self=True)


def test_bootstrap_ci_properties():
    mean, lo, hi = bootstrap_ci([0.1, 0.2, 0.3, 0.4])
    assert lo <= mean <= hi and mean == pytest.approx(0.25)
    assert bootstrap_ci([0.5]) == (0.5, 0.5, 0.5)
    assert bootstrap_ci([1.0, 2.0, 4.0], seed=3) == bootstrap_ci([1.0, 2.0, 4.0], seed=3)
    narrow = bootstrap_ci(np.random.default_rng(0).normal(0, 1, 400))
    assert narrow[2] - narrow[1] < 0.25
    with pytest.raises(ValueError):
        bootstrap_ci([1.0, float("nan")])


def test_paired_differences_use_common_seeds():
    assert paired_differences({0: 1.0, 1: 2.0, 2: 5.0}, {1: 1.5, 2: 1.0}) == [0.5, 4.0]
    with pytest.raises(ValueError):
        paired_differences({0: 1.0}, {1: 1.0})
