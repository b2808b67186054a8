"""k-NN probing of learned features (k=20, uniform vote, L2-normalised features)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from replikit.models import StagedNet


@torch.no_grad()
def extract_features(model: StagedNet, images: torch.Tensor, stages: list[str],
                     batch_size: int = 512, device: torch.device | None = None
                     ) -> dict[str, torch.Tensor]:
    """Features of `images` (uint8 or float in [0,1]) at each named stage, in eval mode, on CPU."""
    device = device or next(model.parameters()).device
    was_training = model.training
    model.eval()
    chunks: dict[str, list[torch.Tensor]] = {s: [] for s in stages}
    for start in range(0, images.shape[0], batch_size):
        x = to_float(images[start:start + batch_size].to(device))
        for name, f in model.stage_outputs(x, set(stages)).items():
            chunks[name].append(f.float().cpu())
    model.train(was_training)
    return {s: torch.cat(c) for s, c in chunks.items()}


def to_float(images: torch.Tensor) -> torch.Tensor:
    """uint8 images to float in [0, 1]; float images pass through."""
    return images.float().div_(255) if images.dtype == torch.uint8 else images


@torch.no_grad()
def knn_predict(train_feats: torch.Tensor, train_labels: torch.Tensor, test_feats: torch.Tensor,
                k: int = 20, num_classes: int | None = None, chunk: int = 1024,
                exclude_self: bool = False) -> torch.Tensor:
    """Majority vote of the k nearest (cosine) training points; ties go to the smaller label.

    With `exclude_self`, test and train are the same points and each point's own entry is
    left out (leave-one-out), so k neighbours are other points.
    """
    if exclude_self and test_feats.shape[0] != train_feats.shape[0]:
        raise ValueError("exclude_self needs the test points to be the training points")
    if k > train_feats.shape[0] - int(exclude_self):
        raise ValueError(f"k={k} exceeds the {train_feats.shape[0]} probe training points")
    num_classes = num_classes or int(train_labels.max()) + 1
    train_n = F.normalize(train_feats.float(), dim=1)
    preds = []
    for start in range(0, test_feats.shape[0], chunk):
        q = F.normalize(test_feats[start:start + chunk].float(), dim=1)
        sim = q @ train_n.T
        if exclude_self:
            rows = torch.arange(sim.shape[0])
            sim[rows, rows + start] = -float("inf")
        idx = sim.topk(k, dim=1).indices
        votes = F.one_hot(train_labels[idx], num_classes).sum(1)
        preds.append(votes.argmax(1))
    return torch.cat(preds)


def knn_accuracy(train_feats: torch.Tensor, train_labels: torch.Tensor, test_feats: torch.Tensor,
                 test_labels: torch.Tensor, k: int = 20) -> float:
    """Test accuracy of a k-NN classifier fitted on (train_feats, train_labels)."""
    num_classes = int(max(train_labels.max(), test_labels.max())) + 1
    pred = knn_predict(train_feats, train_labels, test_feats, k, num_classes)
    return (pred == test_labels).float().mean().item()
