"""A small transformer encoder for signal-propagation experiments (Noci et al., NeurIPS 2022).

L blocks of softmax self-attention (W_Q, W_K, W_V, W_O as separate bias-free linear maps, so that
their gradients can be read one by one) and a ReLU MLP, with the layer norm placed

    post:  x <- LN(x + alpha * Attn(x));   x <- LN(x + alpha * MLP(x))     (original transformer)
    pre:   x <- x + alpha * Attn(LN(x));   x <- x + alpha * MLP(LN(x))     (+ a final LN, GPT-2)
    none:  x <- x + alpha * Attn(x);       x <- x + alpha * MLP(x)

and the residual branches scaled by alpha = 1 (standard) or 1/sqrt(L) (the paper's depth scaling).
With `gamma` set, each branch is instead mixed in as x <- sqrt(1 - gamma^2) x + gamma f(x), which keeps
the residual stream's variance at initialization whatever the depth. `mlp_ratio=0` drops the MLP
(attention-only blocks).

`attention="shaped"` is the shaped attention of Noci, Li, Li et al. (NeurIPS 2023, arXiv 2306.17759;
the abstract: "centering the Softmax output at identity, and scaling the Softmax logits by a
width-dependent temperature parameter"): A = I + Softmax(Q K^T / tau) - (1/T) 1 1^T, with
tau = tau0 sqrt(width d_k). The temperature's exact form is our choice (the abstract does not give
it): sqrt(width d_k) makes the logits O(1/sqrt(width)) at initialization, so that A = I + O(1/sqrt(width))
and a layer moves the tokens' correlation by O(1/width), the scaling under which depth and width can
enter only through their ratio. The standard attention is `attention="softmax"`.

Every weight matrix is drawn from N(0, std^2) with std = `init_std`, or 1/sqrt(fan-in) when that
is None (variance-preserving); embeddings are N(0, 1) per coordinate. Attention is bidirectional
(no mask) and uses the usual 1/sqrt(d_k) temperature; d_k (queries and keys per head) is set apart
from d_v = width / heads (values), so that d_k can be varied alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

NORMS = ("post", "pre", "none")
ALPHAS = ("1", "1/sqrt(L)")
ATTENTIONS = ("softmax", "shaped")


@dataclass(frozen=True)
class SignalConfig:
    vocab_size: int
    seq_len: int
    depth: int
    width: int = 64
    heads: int = 1
    d_k: int | None = None  # per-head query/key dimension; None = width // heads
    norm: str = "post"
    alpha: str = "1"
    init_std: float | None = None  # None = 1/sqrt(fan-in) for every weight matrix
    positional: bool = True
    mlp_ratio: int = 4  # 0: attention-only blocks
    attention: str = "softmax"
    tau0: float = 1.0  # shaped attention: tau = tau0 sqrt(width d_k)
    gamma: float | None = None  # None: x + alpha f(x); else sqrt(1 - gamma^2) x + gamma f(x)

    def __post_init__(self) -> None:
        if self.attention not in ATTENTIONS:
            raise ValueError(f"attention must be one of {ATTENTIONS}, not {self.attention!r}")
        if self.gamma is not None and not 0 < self.gamma <= 1:
            raise ValueError(f"gamma must be in (0, 1], not {self.gamma}")
        if self.norm not in NORMS:
            raise ValueError(f"norm must be one of {NORMS}, not {self.norm!r}")
        if self.alpha not in ALPHAS:
            raise ValueError(f"alpha must be one of {ALPHAS}, not {self.alpha!r}")
        if self.width % self.heads:
            raise ValueError(f"width {self.width} is not divisible by {self.heads} heads")
        if self.depth < 1:
            raise ValueError("depth must be at least 1")

    @property
    def key_dim(self) -> int:
        return self.d_k or self.width // self.heads

    @property
    def residual_scale(self) -> float:
        """The branch's weight: gamma where set, else alpha."""
        if self.gamma is not None:
            return self.gamma
        return 1.0 if self.alpha == "1" else 1.0 / math.sqrt(self.depth)

    @property
    def skip_scale(self) -> float:
        """The skip connection's weight: sqrt(1 - gamma^2) where gamma is set, else 1."""
        return 1.0 if self.gamma is None else math.sqrt(1.0 - self.gamma**2)


class Attention(nn.Module):
    def __init__(self, cfg: SignalConfig) -> None:
        super().__init__()
        h, dk, dv = cfg.heads, cfg.key_dim, cfg.width // cfg.heads
        self.q = nn.Linear(cfg.width, h * dk, bias=False)
        self.k = nn.Linear(cfg.width, h * dk, bias=False)
        self.v = nn.Linear(cfg.width, h * dv, bias=False)
        self.o = nn.Linear(h * dv, cfg.width, bias=False)
        self.heads, self.dk, self.dv = h, dk, dv
        self.shaped = cfg.attention == "shaped"
        self.temperature = cfg.tau0 * math.sqrt(cfg.width * dk) if self.shaped else math.sqrt(dk)

    def weights(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        """The attention matrix (B, heads, T, T): Softmax(Q K^T / temperature), shaped as
        I + Softmax - (1/T) 1 1^T when the attention is shaped."""
        a = torch.softmax(q @ k.transpose(-2, -1) / self.temperature, dim=-1)
        if not self.shaped:
            return a
        t = a.shape[-1]
        return a + torch.eye(t, dtype=a.dtype, device=a.device) - 1.0 / t

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        q = self.q(x).view(B, T, self.heads, self.dk).transpose(1, 2)
        k = self.k(x).view(B, T, self.heads, self.dk).transpose(1, 2)
        v = self.v(x).view(B, T, self.heads, self.dv).transpose(1, 2)
        a = self.weights(q, k)
        return self.o((a @ v).transpose(1, 2).reshape(B, T, self.heads * self.dv))


class MLP(nn.Module):
    def __init__(self, cfg: SignalConfig) -> None:
        super().__init__()
        self.fc = nn.Linear(cfg.width, cfg.mlp_ratio * cfg.width, bias=False)
        self.proj = nn.Linear(cfg.mlp_ratio * cfg.width, cfg.width, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(F.relu(self.fc(x)))


class Block(nn.Module):
    def __init__(self, cfg: SignalConfig) -> None:
        super().__init__()
        self.attn = Attention(cfg)
        self.mlp = MLP(cfg) if cfg.mlp_ratio else None
        self.ln1, self.ln2 = nn.LayerNorm(cfg.width), nn.LayerNorm(cfg.width)
        self.norm, self.alpha, self.skip = cfg.norm, cfg.residual_scale, cfg.skip_scale

    def skipped(self, x: torch.Tensor) -> torch.Tensor:
        """The skip connection's term: x itself when its weight is 1 (no extra node in the graph, so the
        standard block's gradients keep their summation order bit for bit)."""
        return x if self.skip == 1.0 else self.skip * x

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = self.alpha
        if self.norm == "post":
            x = self.ln1(self.skipped(x) + a * self.attn(x))
            return x if self.mlp is None else self.ln2(self.skipped(x) + a * self.mlp(x))
        if self.norm == "pre":
            x = self.skipped(x) + a * self.attn(self.ln1(x))
            return x if self.mlp is None else self.skipped(x) + a * self.mlp(self.ln2(x))
        x = self.skipped(x) + a * self.attn(x)
        return x if self.mlp is None else self.skipped(x) + a * self.mlp(x)


class SignalTransformer(nn.Module):
    """Token (+ positional) embedding, L blocks, a linear readout predicting one token per position."""

    def __init__(self, cfg: SignalConfig, generator: torch.Generator | None = None) -> None:
        super().__init__()
        self.cfg = cfg
        self.tok = nn.Embedding(cfg.vocab_size, cfg.width)
        self.pos = nn.Embedding(cfg.seq_len, cfg.width) if cfg.positional else None
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.depth))
        self.ln_f = nn.LayerNorm(cfg.width) if cfg.norm == "pre" else nn.Identity()
        self.head = nn.Linear(cfg.width, cfg.vocab_size, bias=False)
        self.reset_parameters(generator)

    @torch.no_grad()
    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        """Weights N(0, std^2) (std = init_std or 1/sqrt(fan-in)); embeddings N(0, 1); LN (1, 0)."""
        for m in self.modules():
            if isinstance(m, nn.Linear):
                std = self.cfg.init_std or 1.0 / math.sqrt(m.in_features)
                m.weight.normal_(0.0, std, generator=generator)
            elif isinstance(m, nn.Embedding):
                m.weight.normal_(0.0, 1.0, generator=generator)
            elif isinstance(m, nn.LayerNorm):
                m.reset_parameters()

    def embed(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.tok(idx)
        if self.pos is None:
            return x
        # Token and position both N(0, 1): their sum / sqrt(2) keeps unit variance per coordinate.
        return (x + self.pos(torch.arange(idx.shape[1], device=idx.device))) / math.sqrt(2.0)

    def hidden_states(self, idx: torch.Tensor) -> list[torch.Tensor]:
        """The residual stream after the embedding and after each block: L + 1 tensors (B, T, d)."""
        return self.propagate(self.embed(idx))

    def propagate(self, x: torch.Tensor) -> list[torch.Tensor]:
        """The residual stream `x` (B, T, d), given in place of an embedding, and after each block."""
        xs = [x]
        for block in self.blocks:
            xs.append(block(xs[-1]))
        return xs

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        """Logits (B, T, vocab) of token ids `idx` (B, T)."""
        return self.head(self.ln_f(self.hidden_states(idx)[-1]))

    def attention_weights(self, name: str) -> list[torch.Tensor]:
        """W_Q, W_K, W_V or W_O (`name` in q, k, v, o) of every block, first layer first."""
        return [getattr(b.attn, name).weight for b in self.blocks]
