"""A small causal byte-level language model with two kinds of block, for outlier features (He, Noci,
Paliotta, Schlag, Hofmann, NeurIPS 2024, arXiv 2405.19279).

    pre:  x <- x + beta Attn(LN(x));      x <- x + beta MLP(LN(x))        (standard Pre-Norm, GPT-2)
    op:   x <- x + beta Attn_qk(x);       x <- x + beta MLP(x)            (our reading of the Outlier
                                                                           Protected block)
    none: x <- x + beta Attn(x);          x <- x + beta MLP(x)            (Pre-Norm removed, nothing
                                                                           else: no QK-norm)

Both end in a final layer norm before the unembedding. `Attn_qk` is causal softmax attention whose
queries and keys are each layer-normed per head (QK-norm, which the abstract's "entropy regulation"
reading takes from the paper's body, not verified offline); the Pre-Norm block's attention has no
QK-norm. `beta` scales every residual branch (1: the standard block; the OP block's downweighted
branch is a `beta` below 1). The MLP is Linear - GELU - Linear of ratio 4; layer norms have a gain and
a bias. Every weight matrix and both learned embeddings (tokens and positions) are N(0, 0.02^2), GPT-2's
initialisation (chosen after prototype runs on pilot seeds, in which unit-variance embeddings made the OP
block collapse toward rank one at the high rate).

`hidden_states(idx)` returns the residual stream entering each block and leaving the last, (L + 1)
tensors (B, T, d): what the outlier-feature metrics read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

BLOCKS = ("pre", "op", "none")


@dataclass(frozen=True)
class OutlierLMConfig:
    vocab_size: int = 256
    seq_len: int = 64
    depth: int = 4
    width: int = 64
    heads: int = 4
    block: str = "pre"
    beta: float = 1.0  # every residual branch's weight
    init_std: float = 0.02

    def __post_init__(self) -> None:
        if self.block not in BLOCKS:
            raise ValueError(f"block must be one of {BLOCKS}, not {self.block!r}")
        if self.width % self.heads:
            raise ValueError(f"width {self.width} is not a multiple of heads {self.heads}")


class Attention(nn.Module):
    def __init__(self, cfg: OutlierLMConfig) -> None:
        super().__init__()
        self.heads, self.d_head = cfg.heads, cfg.width // cfg.heads
        self.qkv = nn.Linear(cfg.width, 3 * cfg.width, bias=False)
        self.out = nn.Linear(cfg.width, cfg.width, bias=False)
        self.qk_norm = cfg.block == "op"
        if self.qk_norm:
            self.q_norm, self.k_norm = nn.LayerNorm(self.d_head), nn.LayerNorm(self.d_head)
        mask = torch.ones(cfg.seq_len, cfg.seq_len, dtype=torch.bool).tril()
        self.register_buffer("mask", mask, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = (z.view(b, t, self.heads, self.d_head).transpose(1, 2) for z in self.qkv(x).split(d, 2))
        if self.qk_norm:
            q, k = self.q_norm(q), self.k_norm(k)
        logits = (q @ k.transpose(-2, -1)) / math.sqrt(self.d_head)
        logits = logits.masked_fill(~self.mask[:t, :t], float("-inf"))
        y = logits.softmax(-1) @ v
        return self.out(y.transpose(1, 2).reshape(b, t, d))


class MLP(nn.Module):
    def __init__(self, cfg: OutlierLMConfig) -> None:
        super().__init__()
        self.up, self.down = nn.Linear(cfg.width, 4 * cfg.width), nn.Linear(4 * cfg.width, cfg.width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.gelu(self.up(x)))


class Block(nn.Module):
    def __init__(self, cfg: OutlierLMConfig) -> None:
        super().__init__()
        self.attn, self.mlp, self.beta = Attention(cfg), MLP(cfg), cfg.beta
        self.pre = cfg.block == "pre"
        if self.pre:
            self.ln1, self.ln2 = nn.LayerNorm(cfg.width), nn.LayerNorm(cfg.width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.pre:
            x = x + self.beta * self.attn(self.ln1(x))
            return x + self.beta * self.mlp(self.ln2(x))
        x = x + self.beta * self.attn(x)
        return x + self.beta * self.mlp(x)


class OutlierLM(nn.Module):
    def __init__(self, cfg: OutlierLMConfig, generator: torch.Generator | None = None) -> None:
        super().__init__()
        self.cfg = cfg
        self.tok, self.pos = nn.Embedding(cfg.vocab_size, cfg.width), nn.Embedding(cfg.seq_len, cfg.width)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.depth))
        self.ln_f = nn.LayerNorm(cfg.width)
        self.head = nn.Linear(cfg.width, cfg.vocab_size, bias=False)
        with torch.no_grad():
            for name, p in self.named_parameters():
                if p.dim() >= 2:  # weight matrices and embeddings; norms keep gain 1, bias 0; biases 0
                    p.normal_(0.0, cfg.init_std, generator=generator)
                elif name.endswith("bias"):
                    p.zero_()

    def hidden_states(self, idx: torch.Tensor) -> list[torch.Tensor]:
        """The residual stream entering every block and leaving the last: L + 1 tensors (B, T, d)."""
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        hs = [x]
        for block in self.blocks:
            hs.append(block(hs[-1]))
        return hs

    def logits(self, hs: list[torch.Tensor]) -> torch.Tensor:
        return self.head(self.ln_f(hs[-1]))

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        return self.logits(self.hidden_states(idx))


def activation_kurtosis(h: torch.Tensor) -> torch.Tensor:
    """The kurtosis over neurons of the neurons' activation RMS: with s_i the root mean square of
    neuron i over every token of h (..., d), mean(s^4) / mean(s^2)^2 (1 when every neuron has the same
    scale; large when a few neurons' activations dwarf the rest)."""
    s2 = h.reshape(-1, h.shape[-1]).double().pow(2).mean(0)  # s_i^2
    return s2.pow(2).mean() / s2.mean().pow(2)
