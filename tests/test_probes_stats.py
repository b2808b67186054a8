import numpy as np
import pytest
import torch

from replikit.methods.probes import knn_accuracy, knn_predict
from replikit.scoring.stats import sign_flip_pvalue, t_interval


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


def test_t_interval_and_sign_flip_pvalue():
    mean, lo, hi = t_interval([0.1, 0.2, 0.3, 0.4], level=0.90)
    # mean 0.25, sd 0.1291, se 0.0645, t(0.95, 3) = 2.3534
    assert mean == pytest.approx(0.25) and hi - mean == pytest.approx(2.3534 * 0.0645497, rel=1e-4)
    assert lo == pytest.approx(2 * mean - hi)
    single = t_interval([0.5])
    assert single[0] == 0.5 and np.isnan(single[1]) and np.isnan(single[2])
    with pytest.raises(ValueError):
        t_interval([1.0, float("nan")])
    assert sign_flip_pvalue([1.0, 2.0, 3.0, 4.0, 5.0]) == pytest.approx(1 / 32)
    assert sign_flip_pvalue([1.0, 2.0, 3.0, 4.0, 5.0], alternative="less") == pytest.approx(1.0)
    # flips whose negated values sum to <= 5 keep the mean >= 1.0: 10 of the 32 subsets of {1..5}
    assert sign_flip_pvalue([1.0, 2.0, 3.0, 4.0, -5.0]) == pytest.approx(10 / 32)
    assert sign_flip_pvalue([0.95, 0.97], null=0.9, alternative="greater") == pytest.approx(1 / 4)
