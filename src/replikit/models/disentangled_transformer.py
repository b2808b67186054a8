"""A two-layer attention-only transformer with a disentangled (concatenated) residual stream, for the
emergence of induction heads (Musat, Pimentel, Noci et al., 2025, arXiv 2511.01033).

The paper's abstract names "a modified transformer architecture"; its exact form is in the body, which
was not reachable offline. This model is our reading of third-party notes on the paper (two layers,
attention only, the residual stream built by concatenation instead of addition, merged key-query
matrices, zero initialization; see config/papers/induction_heads.yaml): it is labelled a departure.

Inputs are one-hot, so the token and position codes are orthonormal: token t_i in R^V, position i in
R^T. With D = V + T:

    h0_i = [e(t_i); p_i]                                           (D)
    h1_i = [h0_i; sum_j A1_ij h0_j],  A1 = causal softmax_j(h0_i^T W1 h0_j)   (2D)
    h2   = [h1_q; sum_j A2_j h1_j],   A2 = softmax_j(h1_q^T W2 h1_j)           (4D, the query row q only)
    out  = W3 h2                                                   (V)

W1 (D x D) and W2 (2D x 2D) are merged key-query matrices and W3 (V x 4D) the readout; there are no value
matrices (each layer's output is concatenated whole). All three start at zero. An induction head is
W1 attending from a label to the item before it (position to previous position), W2 matching the
query's token against the token copied there, and W3 reading out the token that layer 2 attends to.

`forward` uses the one-hot structure (gathers instead of products with one-hot matrices), so one step
costs O(B T (T + V)); `dense_forward` is the same map written with the one-hot matrices, the reference
that tests compare against.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class DisentangledTransformer(nn.Module):
    """Two attention-only layers over one-hot tokens (vocabulary V) and positions (sequence length T)."""

    def __init__(self, vocab: int, seq_len: int) -> None:
        super().__init__()
        self.vocab, self.seq_len = vocab, seq_len
        d = vocab + seq_len
        self.w1 = nn.Parameter(torch.zeros(d, d))
        self.w2 = nn.Parameter(torch.zeros(2 * d, 2 * d))
        self.w3 = nn.Parameter(torch.zeros(vocab, 4 * d))
        causal = torch.ones(seq_len, seq_len, dtype=torch.bool).tril()
        self.register_buffer("causal", causal, persistent=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """(B, T) token ids -> (B, V) outputs at the last position (the query)."""
        b, t = tokens.shape
        v = self.vocab
        if t != self.seq_len:
            raise ValueError(f"sequences of {t} tokens, but the model was built for {self.seq_len}")
        w_tt, w_tp, w_pt, w_pp = self.w1[:v, :v], self.w1[:v, v:], self.w1[v:, :v], self.w1[v:, v:]
        cols = tokens[:, None, :].expand(b, t, t)
        scores = (w_tt[tokens].gather(2, cols) + w_tp[tokens] + w_pt[:, tokens].permute(1, 0, 2) + w_pp)
        a1 = scores.masked_fill(~self.causal, float("-inf")).softmax(-1)  # (B, T, T)
        copied = torch.zeros(b, t, v, dtype=a1.dtype, device=a1.device).scatter_add(2, cols, a1)  # A1 e(t)
        # the query's row of h1, written out: [e(t_q); p_q; copied token; A1's row]
        h1_q = torch.cat([F.one_hot(tokens[:, -1], v).to(a1.dtype),
                          F.one_hot(torch.full_like(tokens[:, -1], t - 1), t).to(a1.dtype),
                          copied[:, -1], a1[:, -1]], 1)
        u = h1_q @ self.w2  # (B, 2D): h1_q^T W2, split as h1's blocks
        u_tok, u_pos, u_cop, u_att = u.split([v, t, v, t], 1)
        s2 = (u_tok.gather(1, tokens) + u_pos + (copied @ u_cop[:, :, None])[..., 0]
              + (a1 @ u_att[:, :, None])[..., 0])
        a2 = s2.softmax(-1)  # (B, T)
        read = torch.cat([torch.zeros(b, v, dtype=a2.dtype, device=a2.device).scatter_add(1, tokens, a2), a2,
                          (a2[:, None, :] @ copied)[:, 0], (a2[:, None, :] @ a1)[:, 0]], 1)
        return torch.cat([h1_q, read], 1) @ self.w3.T

    def dense_forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """The same map with the one-hot matrices written out (the reference for tests)."""
        b, t = tokens.shape
        x = torch.cat([F.one_hot(tokens, self.vocab).to(self.w1.dtype),
                       torch.eye(t, dtype=self.w1.dtype, device=tokens.device).expand(b, t, t)], 2)
        a1 = (x @ self.w1 @ x.transpose(1, 2)).masked_fill(~self.causal, float("-inf")).softmax(-1)
        h1 = torch.cat([x, a1 @ x], 2)
        a2 = (h1[:, -1:] @ self.w2 @ h1.transpose(1, 2)).softmax(-1)
        h2 = torch.cat([h1[:, -1], (a2 @ h1)[:, 0]], 1)
        return h2 @ self.w3.T

    def flat(self) -> torch.Tensor:
        """Every parameter as one vector (a point of the training trajectory)."""
        return torch.cat([p.detach().reshape(-1) for p in self.parameters()])
