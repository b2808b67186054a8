"""A GPT-2-style transformer (nanoGPT) with three training modes: next-token prediction (NTP),
pause tokens and latent lookahead (Noci et al. 2026, arXiv 2603.20219).

Latent lookahead. A thought at position i rolls out tau latents without sampling: z_1 is the
final hidden state (after ln_f) at token x_i; z_{j+1} is the final hidden state at the last
latent slot when z_1..z_j are appended to the context as input embeddings. z_j is supervised
with token x_{i+j}. Attention (`thought_layout`): visible tokens are causal over earlier
visible tokens and over the latents of thoughts anchored before them; the latents of one
thought see each other (bidirectionally, or causally for the ablation) and the visible tokens
up to their anchor, never other thoughts. All thoughts therefore roll out together in tau
forward passes (`rollout`), whatever their number. A last pass over the whole sequence with
every latent in place gives the visible next-token predictions; the token after an anchor is
read from the thought's first latent slot (training and inference alike).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

IGNORE = -100  # target value that the cross-entropy skips


@dataclass(frozen=True)
class GPTConfig:
    vocab_size: int
    block_size: int = 512
    n_layer: int = 2
    n_head: int = 8
    n_embd: int = 768
    dropout: float = 0.1


class SelfAttention(nn.Module):
    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        assert cfg.n_embd % cfg.n_head == 0
        self.c_attn = nn.Linear(cfg.n_embd, 3 * cfg.n_embd)
        self.c_proj = nn.Linear(cfg.n_embd, cfg.n_embd)
        self.resid_dropout = nn.Dropout(cfg.dropout)
        self.n_head, self.dropout = cfg.n_head, cfg.dropout

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """`mask` (T, T) bool: True where query row may attend to key column."""
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                           dropout_p=self.dropout if self.training else 0.0)
        return self.resid_dropout(self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C)))


class MLP(nn.Module):
    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.c_fc = nn.Linear(cfg.n_embd, 4 * cfg.n_embd)
        self.c_proj = nn.Linear(4 * cfg.n_embd, cfg.n_embd)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.c_proj(F.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(cfg.n_embd), nn.LayerNorm(cfg.n_embd)
        self.attn, self.mlp = SelfAttention(cfg), MLP(cfg)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x), mask)
        return x + self.mlp(self.ln_2(x))


class LookaheadGPT(nn.Module):
    """GPT-2 (pre-LN, learned positions, tied embeddings) that also accepts input embeddings."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.wte = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.wpe = nn.Embedding(cfg.block_size, cfg.n_embd)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.n_embd)
        self.lm_head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight
        self.apply(self._init)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, 0.0, 0.02 / (2 * cfg.n_layer) ** 0.5)

    @staticmethod
    def _init(m: nn.Module) -> None:
        if isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, 0.0, 0.02)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Embedding):
            nn.init.normal_(m.weight, 0.0, 0.02)

    def hidden(self, emb: torch.Tensor, pos: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Final hidden states (after ln_f) of input embeddings `emb` (B, T, d) at positions `pos`."""
        if int(pos.max()) >= self.cfg.block_size:
            raise ValueError(f"position {int(pos.max())} exceeds the context of {self.cfg.block_size}")
        x = self.drop(emb + self.wpe(pos))
        for block in self.blocks:
            x = block(x, mask)
        return self.ln_f(x)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        """Causal next-token logits of token ids `idx` (B, T)."""
        T = idx.shape[1]
        pos = torch.arange(T, device=idx.device)
        mask = torch.ones(T, T, dtype=torch.bool, device=idx.device).tril()
        return self.lm_head(self.hidden(self.wte(idx), pos, mask))


# ---------------------------------------------------------------- latent thoughts


def thought_layout(n_vis: int, anchors: list[int], tau: int, bidirectional: bool = True,
                   device: torch.device | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Positions and attention mask of `n_vis` visible tokens followed by one block of `tau`
    latent slots per anchor (thought-major). Slot s of the thought at anchor i sits at position
    i + 1 + s (the token it stands for)."""
    a = torch.tensor(anchors, device=device)
    K = len(anchors)
    vis = torch.arange(n_vis, device=device)
    thought = torch.arange(K, device=device).repeat_interleave(tau)  # thought of each slot
    slot = torch.arange(tau, device=device).repeat(K)  # index of each slot in its thought
    pos = torch.cat([vis, a[thought] + 1 + slot])
    T = n_vis + K * tau
    mask = torch.zeros(T, T, dtype=torch.bool, device=device)
    mask[:n_vis, :n_vis] = torch.ones(n_vis, n_vis, dtype=torch.bool, device=device).tril()
    mask[:n_vis, n_vis:] = a[thought][None, :] < vis[:, None]  # thoughts anchored earlier
    mask[n_vis:, :n_vis] = vis[None, :] <= a[thought][:, None]  # context up to the anchor
    same = thought[:, None] == thought[None, :]
    mask[n_vis:, n_vis:] = same if bidirectional else same & (slot[None, :] <= slot[:, None])
    return pos, mask


def rollout(model: LookaheadGPT, idx: torch.Tensor, anchors: list[int], tau: int,
            bidirectional: bool = True) -> torch.Tensor:
    """Latents z (B, K, tau, d) of every thought, all rolled out in parallel in tau passes.

    Pass j sees the visible tokens up to the last anchor and the j - 1 latents filled so far
    of every thought. Visible tokens do not attend to latents during the rollout, so each
    thought's latents equal those of a separate sequential rollout (`naive_rollout`); they do
    in `final_pass`. Gradients flow through the whole rollout."""
    B, n = idx.shape
    K = len(anchors)
    pos, mask = thought_layout(n, anchors, tau, bidirectional, idx.device)
    keep = max(anchors) + 1
    emb = model.wte(idx[:, :keep])
    h = model.hidden(emb, pos[:keep], mask[:keep, :keep])
    z = [h[:, anchors]]  # (B, K, d) per step
    base = torch.arange(K, device=idx.device)[:, None] * tau
    for j in range(1, tau):
        sel = torch.cat([torch.arange(keep, device=idx.device),
                         n + (base + torch.arange(j, device=idx.device)[None]).flatten()])
        lat = torch.stack(z, dim=2).flatten(1, 2)  # (B, K * j, d), thought-major like `sel`
        m = mask[sel][:, sel]
        m[:keep, keep:] = False  # visible states stay those of the plain causal pass
        h = model.hidden(torch.cat([emb, lat], dim=1), pos[sel], m)
        z.append(h[:, keep + torch.arange(K, device=idx.device) * j + (j - 1)])
    return torch.stack(z, dim=2)


def final_pass(model: LookaheadGPT, idx: torch.Tensor, anchors: list[int], z: torch.Tensor,
               bidirectional: bool = True) -> torch.Tensor:
    """Next-token logits (B, n, V) of the visible tokens with every latent in context; the logit
    row of an anchor is read from its thought's first latent slot."""
    B, n = idx.shape
    K, tau = z.shape[1], z.shape[2]
    pos, mask = thought_layout(n, anchors, tau, bidirectional, idx.device)
    h = model.hidden(torch.cat([model.wte(idx), z.flatten(1, 2)], dim=1), pos, mask)
    first = n + torch.arange(K, device=idx.device) * tau
    vis = h[:, :n].clone()
    vis[:, anchors] = h[:, first]
    return model.lm_head(vis)


def naive_rollout(model: LookaheadGPT, idx: torch.Tensor, anchor: int, tau: int,
                  bidirectional: bool = True) -> torch.Tensor:
    """Reference: one thought, one growing context per step (for tests). Returns (B, tau, d)."""
    ctx = model.wte(idx[:, :anchor + 1])
    z = []
    for _ in range(tau):
        T = ctx.shape[1]
        pos = torch.arange(T, device=idx.device)
        mask = torch.ones(T, T, dtype=torch.bool, device=idx.device).tril()
        if bidirectional:
            mask[anchor + 1:, anchor + 1:] = True
        z.append(model.hidden(ctx, pos, mask)[:, -1])
        ctx = torch.cat([ctx, z[-1][:, None]], dim=1)
    return torch.stack(z, dim=1)


# ---------------------------------------------------------------- the three training modes


def answer_targets(prompt: torch.Tensor, answer: torch.Tensor, pad: int) -> torch.Tensor:
    """Targets (B, P + A - 1) of the next-token loss on `cat(prompt, answer)[:, :-1]`: the answer
    tokens, IGNORE on the prompt and on answer padding."""
    B, P = prompt.shape
    tgt = torch.full((B, P - 1), IGNORE, dtype=torch.long, device=prompt.device)
    ans = answer.masked_fill(answer == pad, IGNORE)
    return torch.cat([tgt, ans], dim=1)


def _ce(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits.float().flatten(0, 1), targets.flatten(), ignore_index=IGNORE)


def ntp_loss(model: LookaheadGPT, prompt: torch.Tensor, answer: torch.Tensor, pad: int) -> torch.Tensor:
    x = torch.cat([prompt, answer], dim=1)
    return _ce(model(x[:, :-1]), answer_targets(prompt, answer, pad))


def pause_loss(model: LookaheadGPT, prompt: torch.Tensor, answer: torch.Tensor, pad: int, pause: int,
               tau: int) -> torch.Tensor:
    """Goyal et al. (2023): tau pause tokens after the question, loss on the answer only."""
    pauses = torch.full((prompt.shape[0], tau), pause, dtype=prompt.dtype, device=prompt.device)
    return ntp_loss(model, torch.cat([prompt, pauses], dim=1), answer, pad)


def lookahead_loss(model: LookaheadGPT, prompt: torch.Tensor, answer: torch.Tensor, pad: int, tau: int,
                   bidirectional: bool = True) -> torch.Tensor:
    """Next-token loss (with latents in context) + latent loss, unweighted; one thought at the last
    prompt token, so latent z_j is supervised with answer token j - 1."""
    if tau > answer.shape[1]:
        raise ValueError(f"tau={tau} exceeds the answer length {answer.shape[1]}")
    anchor = [prompt.shape[1] - 1]
    z = rollout(model, prompt, anchor, tau, bidirectional)
    latent_tgt = answer[:, :tau].masked_fill(answer[:, :tau] == pad, IGNORE)
    latent = _ce(model.lm_head(z[:, 0]), latent_tgt)
    x = torch.cat([prompt, answer], dim=1)
    logits = final_pass(model, x[:, :-1], anchor, z, bidirectional)
    return _ce(logits, answer_targets(prompt, answer, pad)) + latent


@torch.no_grad()
def generate(model: LookaheadGPT, prompt: torch.Tensor, length: int, method: str, tau: int = 0,
             pause: int = 0, bidirectional: bool = True) -> torch.Tensor:
    """Greedy answer tokens (B, length) after `prompt` (B, P) for method ntp, pause or lookahead."""
    model.eval()
    if method == "pause":
        prompt = torch.cat([prompt, torch.full((prompt.shape[0], tau), pause, dtype=prompt.dtype,
                                               device=prompt.device)], dim=1)
    seq = prompt
    if method == "lookahead":
        anchor = [prompt.shape[1] - 1]
        z = rollout(model, prompt, anchor, tau, bidirectional)
    for _ in range(length):
        if method == "lookahead":
            logits = final_pass(model, seq, anchor, z, bidirectional)[:, -1]
        else:
            logits = model(seq)[:, -1]
        seq = torch.cat([seq, logits.argmax(-1, keepdim=True)], dim=1)
    return seq[:, prompt.shape[1]:]
