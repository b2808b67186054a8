"""How a sequence's token representations relate at one layer: their mean pairwise cosine similarity
(1 = every token points the same way, the rank collapse of Noci et al. 2022) and the stable rank of
the sequence's representation. Shared by rank collapse and the shaped transformer."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def token_similarity(h: torch.Tensor) -> torch.Tensor:
    """Mean cosine similarity over the pairs of distinct tokens of each sequence of h (B, T, d): (B,)."""
    u = F.normalize(h, dim=-1)
    t = h.shape[1]
    return ((u @ u.transpose(1, 2)).sum((1, 2)) - t) / (t * (t - 1))


def stable_rank(h: torch.Tensor) -> torch.Tensor:
    """||X||_F^2 / ||X||_2^2 of each sequence's (T, d) representation X: (B,); 1 = rank collapse."""
    return h.pow(2).sum((1, 2)) / torch.linalg.matrix_norm(h, ord=2).pow(2)
