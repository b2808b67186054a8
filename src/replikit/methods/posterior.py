"""Bayesian pieces shared by the SG-MCMC papers: a Gaussian weight prior, the posterior-predictive
ensemble of collected samples, and its metrics (accuracy, NLL, Brier score, ECE)."""

from __future__ import annotations

import torch
from torch import nn


def prior_parameters(model: nn.Module) -> list[torch.Tensor]:
    """Weights and biases of every conv and linear layer (no prior on BatchNorm, as in Wenzel et al.)."""
    return [p for m in model.modules() if isinstance(m, (nn.Conv2d, nn.Linear)) for p in m.parameters()]


def gaussian_prior_energy(params: list[torch.Tensor], std: float, chains: bool = False) -> torch.Tensor:
    """-log N(params; 0, std^2 I) up to a constant: sum(theta^2) / (2 std^2); with `chains`, the
    parameters are stacked chains (leading dimension) and the result has one energy per chain."""
    if chains:
        return sum(p.pow(2).flatten(1).sum(1) for p in params) / (2 * std**2)
    return sum(p.pow(2).sum() for p in params) / (2 * std**2)


def expected_calibration_error(probs: torch.Tensor, labels: torch.Tensor, n_bins: int = 10) -> float:
    """ECE with `n_bins` equal-width confidence bins: sum_b |B|/n * |acc(B) - conf(B)|."""
    conf, pred = probs.max(1)
    correct = (pred == labels).double()
    bins = (conf.double() * n_bins).long().clamp(max=n_bins - 1)
    n = labels.numel()
    acc = torch.zeros(n_bins, dtype=torch.float64).index_add_(0, bins, correct)
    cf = torch.zeros(n_bins, dtype=torch.float64).index_add_(0, bins, conf.double())
    return float((acc - cf).abs().sum() / n)


def predictive_metrics(probs: torch.Tensor, labels: torch.Tensor, n_bins: int = 10) -> dict[str, float]:
    """Accuracy, mean NLL, Brier score (sum over classes, mean over points) and ECE of predictive probs."""
    probs, labels = probs.double().cpu(), labels.cpu()
    if probs.ndim != 2 or probs.shape[0] != labels.numel():
        raise ValueError(f"predictive probs {tuple(probs.shape)} do not match {labels.numel()} labels")
    onehot = torch.nn.functional.one_hot(labels, probs.shape[1]).double()
    return {
        "accuracy": float((probs.argmax(1) == labels).double().mean()),
        "nll": float(-probs.gather(1, labels[:, None]).clamp_min(1e-12).log().mean()),
        "brier": float((probs - onehot).pow(2).sum(1).mean()),
        "ece": expected_calibration_error(probs, labels, n_bins),
    }


class Ensemble:
    """Test-set predictive probabilities of the collected posterior samples (checkpointable)."""

    def __init__(self) -> None:
        self.epochs: list[int] = []
        self.probs: list[torch.Tensor] = []

    def add(self, epoch: int, probs: torch.Tensor) -> None:
        if not torch.isfinite(probs).all():
            raise FloatingPointError(f"sample at epoch {epoch} has non-finite predictions")
        self.epochs.append(epoch)
        self.probs.append(probs.detach().float().cpu())

    def __len__(self) -> int:
        return len(self.probs)

    def predictive(self, last: int | None = None) -> torch.Tensor:
        """Posterior predictive: the mean of the samples' probabilities (of the `last` ones)."""
        if not self.probs:
            raise ValueError("no posterior samples were collected; check the sampling schedule")
        chosen = self.probs[-last:] if last else self.probs
        return torch.stack(chosen).mean(0)

    def metrics(self, labels: torch.Tensor, n_bins: int = 10,
                splits: dict[str, torch.Tensor] | None = None) -> dict[str, float]:
        """Ensemble metrics plus those of the last sample alone (`last_*`), and the ensemble's
        metrics on each named subset of the points (`<split>_*`, a boolean mask each)."""
        probs = self.predictive()
        out = {**predictive_metrics(probs, labels, n_bins), "n_samples": len(self)}
        last = predictive_metrics(self.predictive(1), labels, n_bins)
        out.update({f"last_{k}": v for k, v in last.items()})
        for name, mask in (splits or {}).items():
            part = predictive_metrics(probs[mask.cpu()], labels.cpu()[mask.cpu()], n_bins)
            out.update({f"{name}_{k}": v for k, v in part.items()})
        return out

    def state_dict(self) -> dict:
        return {"epochs": list(self.epochs), "probs": [p.clone() for p in self.probs]}

    def load_state_dict(self, state: dict) -> None:
        self.epochs, self.probs = list(state["epochs"]), list(state["probs"])
