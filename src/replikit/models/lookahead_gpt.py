"""A GPT-2-style transformer (nanoGPT) with three training modes: next-token prediction (NTP),
pause tokens and latent lookahead (Noci et al. 2026, arXiv 2603.20219).

Latent lookahead. A thought at position i rolls out tau latents without sampling: z_1 is the
final hidden state (after ln_f) at token x_i; z_{j+1} is the final hidden state at the last
latent slot when z_1..z_j are appended to the context as input embeddings. In the final pass,
with the full thought in context, the slot holding z_j is supervised with token x_{i+j}.
Attention (`thought_layout`): visible tokens are causal over earlier
visible tokens and over the latents of thoughts anchored before them; the latents of one
thought see each other (bidirectionally, or causally for the ablation) and the visible tokens
up to their anchor, never other thoughts. All thoughts therefore roll out together in tau
forward passes (`rollout`), whatever their number. A last pass over the whole sequence with
every latent in place gives the visible next-token predictions; the token after an anchor is
read from the thought's first latent slot (training and inference alike).

Two implementations compute this function. `rollout` / `final_pass` (the default, and the
reference) rerun the whole prefix in each of the tau passes. `cached_rollout` /
`cached_final_pass` (`kv_cache=True`, see `lookahead_loss` and `generate`) run the visible prefix
once and keep its keys and values (a KV cache) for every later pass; see `cached_rollout` for
why the latents of a thought are still recomputed in each pass and what is cached of them. The
two agree up to float rounding (fp32, CPU: max |difference| ~1e-6, tested in
tests/test_lookahead_cache.py), not bitwise, so the cache is a config switch.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint as _checkpoint

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

    def hidden(self, emb: torch.Tensor, pos: torch.Tensor, mask: torch.Tensor,
               max_pos: int | None = None) -> torch.Tensor:
        """Final hidden states (after ln_f) of input embeddings `emb` (B, T, d) at positions `pos`.
        `max_pos`: the largest position when the caller knows it (else read from `pos`, which
        waits for the device)."""
        max_pos = int(pos.max()) if max_pos is None else max_pos
        if max_pos >= self.cfg.block_size:
            raise ValueError(f"position {max_pos} exceeds the context of {self.cfg.block_size}")
        x = self.drop(emb + self.wpe(pos))
        for block in self.blocks:
            x = block(x, mask)
        return self.ln_f(x)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        """Causal next-token logits of token ids `idx` (B, T)."""
        T = idx.shape[1]
        pos = torch.arange(T, device=idx.device)
        mask = torch.ones(T, T, dtype=torch.bool, device=idx.device).tril()
        return self.lm_head(self.hidden(self.wte(idx), pos, mask, T - 1))


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
    in `final_pass`. Gradients flow through the whole rollout. Every pass's largest position is
    known from Python ints (as in `final_pass`), so no pass waits for the device to read it and the
    function also runs on fake tensors (the plan's step counter)."""
    B, n = idx.shape
    K = len(anchors)
    pos, mask = thought_layout(n, anchors, tau, bidirectional, idx.device)
    keep = max(anchors) + 1
    emb = model.wte(idx[:, :keep])
    h = model.hidden(emb, pos[:keep], mask[:keep, :keep], keep - 1)
    z = [h[:, anchors]]  # (B, K, d) per step
    base = torch.arange(K, device=idx.device)[:, None] * tau
    for j in range(1, tau):
        sel = torch.cat([torch.arange(keep, device=idx.device),
                         n + (base + torch.arange(j, device=idx.device)[None]).flatten()])
        lat = torch.stack(z, dim=2).flatten(1, 2)  # (B, K * j, d), thought-major like `sel`
        m = mask[sel][:, sel]
        m[:keep, keep:] = False  # visible states stay those of the plain causal pass
        h = model.hidden(torch.cat([emb, lat], dim=1), pos[sel], m, max(keep - 1, max(anchors) + j))
        z.append(h[:, keep + torch.arange(K, device=idx.device) * j + (j - 1)])
    return torch.stack(z, dim=2)


def final_pass(model: LookaheadGPT, idx: torch.Tensor, anchors: list[int], z: torch.Tensor,
               bidirectional: bool = True, with_latents: bool = False):
    """Next-token logits (B, n, V) of the visible tokens with every latent in context; the logit
    row of an anchor is read from its thought's first latent slot. `with_latents`: also the logits
    (B, K, tau, V) of every latent slot, each given the full thought (what the latent loss reads)."""
    B, n = idx.shape
    K, tau = z.shape[1], z.shape[2]
    pos, mask = thought_layout(n, anchors, tau, bidirectional, idx.device)
    h = model.hidden(torch.cat([model.wte(idx), z.flatten(1, 2)], dim=1), pos, mask,
                     max(n - 1, max(anchors) + tau))
    first = n + torch.arange(K, device=idx.device) * tau
    vis = h[:, :n].clone()
    vis[:, anchors] = h[:, first]
    if not with_latents:
        return model.lm_head(vis)
    return model.lm_head(vis), model.lm_head(h[:, n:]).view(B, K, tau, -1)


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


reference_rollout = rollout  # the exact, recomputing rollout that `cached_rollout` is tested against


# ---------------------------------------------------------------- the same function with a KV cache

KV = list[tuple[torch.Tensor, torch.Tensor]]  # per layer: keys, values (B, heads, T, d / heads)


def _rows(model: LookaheadGPT, x: torch.Tensor, past: KV | None, mask: torch.Tensor,
          out_rows: torch.Tensor | None = None, qkv0: torch.Tensor | None = None,
          want_kv: bool = False) -> tuple[torch.Tensor, KV]:
    """Run the blocks over the rows `x` (B, R, d), the input of the first block (embeddings plus
    positions, dropout applied), attending to the cached keys/values `past` of earlier rows (per
    layer, in front) and to each other. `mask` (R, T_past + R): True where a row may attend to a
    key. Returns the final hidden states (after ln_f) of the rows `out_rows` (all when None) and,
    with `want_kv`, every layer's keys and values of the rows. `qkv0`: the first block's c_attn
    output of the rows when the caller kept it. In the last block only the `out_rows` get a query,
    an attention output and an MLP; the other rows are needed there only as keys and values."""
    kvs: KV = []
    n_layer = len(model.blocks)
    for layer, blk in enumerate(model.blocks):
        attn = blk.attn
        B, _, C = x.shape
        H = attn.n_head
        prune = layer == n_layer - 1 and out_rows is not None
        if layer == 0 and qkv0 is not None:
            q, k, v = qkv0.split(C, dim=2)
            if prune:
                q = q[:, out_rows]
        elif prune:
            h = blk.ln_1(x)
            W, b = attn.c_attn.weight, attn.c_attn.bias
            k, v = F.linear(h, W[C:], b[C:]).split(C, dim=2)
            q = F.linear(h[:, out_rows], W[:C], b[:C])
        else:
            q, k, v = attn.c_attn(blk.ln_1(x)).split(C, dim=2)
        q, k, v = (t.reshape(B, t.shape[1], H, C // H).transpose(1, 2) for t in (q, k, v))
        if want_kv:
            kvs.append((k, v))
        if past is not None:
            k, v = torch.cat([past[layer][0], k], dim=2), torch.cat([past[layer][1], v], dim=2)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask[out_rows] if prune else mask,
                                           dropout_p=attn.dropout if attn.training else 0.0)
        y = attn.resid_dropout(attn.c_proj(y.transpose(1, 2).reshape(B, -1, C)))
        x = (x[:, out_rows] if prune else x) + y
        x = x + blk.mlp(blk.ln_2(x))
    return model.ln_f(x), kvs


def _check_positions(model: LookaheadGPT, last: int) -> None:
    # on the host from Python ints: `hidden`'s int(pos.max()) would be a device sync per pass
    if last >= model.cfg.block_size:
        raise ValueError(f"position {last} exceeds the context of {model.cfg.block_size}")


@dataclass
class RolloutCache:
    """What `cached_rollout` keeps for the final pass and for generation: the visible prefix's
    final hidden states `h` (B, keep, d) and per-layer keys/values, and per latent slot s its
    first-block input `x0[s]` and c_attn output `qkv0[s]` (B, K, ...)."""

    keep: int
    h: torch.Tensor
    kv: KV
    x0: list[torch.Tensor]
    qkv0: list[torch.Tensor]


def _latent_input(model: LookaheadGPT, z: torch.Tensor,
                  pos: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """First-block input and c_attn output of latents z (B, K, d) at positions pos (K,)."""
    x0 = model.drop(z + model.wpe(pos))
    blk = model.blocks[0]
    return x0, blk.attn.c_attn(blk.ln_1(x0))


def _prefix(model: LookaheadGPT, idx: torch.Tensor) -> tuple[torch.Tensor, KV]:
    T = idx.shape[1]
    _check_positions(model, T - 1)
    pos = torch.arange(T, device=idx.device)
    mask = torch.ones(T, T, dtype=torch.bool, device=idx.device).tril()
    return _rows(model, model.drop(model.wte(idx) + model.wpe(pos)), None, mask, want_kv=True)


def cached_rollout(model: LookaheadGPT, idx: torch.Tensor, anchors: list[int], tau: int,
                   bidirectional: bool = True, checkpoint: bool = False,
                   return_cache: bool = False):
    """`rollout` without recomputing the prefix: latents z (B, K, tau, d), the same function.

    The visible tokens up to the last anchor do not attend to latents during the rollout, so their
    states at every layer are the same in all tau passes: they run once and their keys and values
    are cached. A plain causal KV cache of the latents would be exact only for the causal
    ablation: with bidirectional latents slot s attends to the later slots too, so its states
    above the first block change whenever a latent is appended. Each pass therefore recomputes the
    latent rows of every thought (j rows in pass j), attending to the cached prefix; what stays
    fixed, and is cached, is each slot's first-block input and its c_attn output (they depend on
    the latent and its position only), and in the last block only the newest slot of each thought
    gets a query and an MLP (the others serve as keys and values). Cost per pass ~ j rows instead
    of prefix + K j rows. With causal latents (the ablation) a slot's states never change, so
    their keys and values are cached too and each pass runs one row per thought (`checkpoint`
    does not apply there: a pass keeps one row's activations).

    `checkpoint`: activation checkpointing of each pass (its activations are recomputed in the
    backward pass instead of kept: memory of one pass instead of tau, ~ +1 forward in FLOPs); the
    gradients are the same. With dropout in training mode the prefix's (and each slot's input)
    dropout masks are drawn once and shared by the passes instead of being redrawn per pass, a
    different draw of the same kind of noise; without dropout (or in eval mode) the function is
    the reference's. `return_cache`: also return the `RolloutCache` for `cached_final_pass`."""
    B, n = idx.shape
    K = len(anchors)
    dev = idx.device
    pos, mask = thought_layout(n, anchors, tau, bidirectional, dev)
    keep = max(anchors) + 1
    _check_positions(model, max(keep - 1, max(anchors) + tau))
    h, kv = _prefix(model, idx[:, :keep])
    lat_pos = pos[n:].view(K, tau)
    base = n + torch.arange(K, device=dev)[:, None] * tau
    prefix_cols = torch.arange(keep, device=dev)
    z = [h[:, anchors]]
    x0: list[torch.Tensor] = []
    qkv0: list[torch.Tensor] = []
    lat_kv, lat_cols = kv, [prefix_cols]  # causal: keys/values of the latents so far (slot-major)
    for j in range(1, tau):
        a, b = _latent_input(model, z[-1], lat_pos[:, j - 1])
        x0.append(a)
        qkv0.append(b)
        if not bidirectional:  # a plain KV cache is exact: one new row per thought and pass
            rows = base[:, 0] + (j - 1)
            lat_cols.append(rows)
            m = mask[rows][:, torch.cat(lat_cols)]
            out, new = _rows(model, a, lat_kv, m, qkv0=b, want_kv=True)
            lat_kv = [(torch.cat([k0, k1], dim=2), torch.cat([v0, v1], dim=2))
                      for (k0, v0), (k1, v1) in zip(lat_kv, new, strict=True)]
            z.append(out)
            continue
        rows = (base + torch.arange(j, device=dev)[None]).flatten()  # thought-major, like `rollout`
        m = mask[rows][:, torch.cat([prefix_cols, rows])]
        last = torch.arange(K, device=dev) * j + (j - 1)

        def one_pass(*t: torch.Tensor, m=m, last=last, j=j) -> torch.Tensor:
            xs, qs = torch.stack(t[:j], dim=2), torch.stack(t[j:], dim=2)
            return _rows(model, xs.flatten(1, 2), kv, m, last, qs.flatten(1, 2))[0]

        if checkpoint and torch.is_grad_enabled():
            z.append(_checkpoint(one_pass, *x0, *qkv0, use_reentrant=False))
        else:
            z.append(one_pass(*x0, *qkv0))
    if tau >= 1:
        a, b = _latent_input(model, z[-1], lat_pos[:, tau - 1])
        x0.append(a)
        qkv0.append(b)
    out = torch.stack(z, dim=2)
    return (out, RolloutCache(keep, h, kv, x0, qkv0)) if return_cache else out


def cached_final_pass(model: LookaheadGPT, idx: torch.Tensor, anchors: list[int], cache: RolloutCache,
                      bidirectional: bool = True, want_kv: bool = False, with_latents: bool = False):
    """`final_pass` reusing the rollout's cache: the visible tokens up to the first anchor see no
    latent, so their states are the rollout's; the rest (later visible tokens and every latent,
    with the latents' cached first-block inputs) runs once over them. Returns the logits (B, n, V),
    with `with_latents` also every latent slot's logits (B, K, tau, V), and with `want_kv` the full
    per-layer keys/values (prefix, then the rows; for generation)."""
    B, n = idx.shape
    K, tau = cache.x0[0].shape[1], len(cache.x0)
    dev = idx.device
    pos, mask = thought_layout(n, anchors, tau, bidirectional, dev)
    r = min(anchors) + 1
    _check_positions(model, max(n - 1, max(anchors) + tau))
    if r > cache.keep or r > n:
        raise ValueError("the rollout cache does not cover the visible tokens up to the first anchor")
    kv = [(k[:, :, :r], v[:, :, :r]) for k, v in cache.kv]
    vis = torch.arange(r, n, device=dev)
    lat = n + torch.arange(K * tau, device=dev)
    rows = torch.cat([lat, vis])
    m = mask[rows][:, torch.cat([torch.arange(r, device=dev), rows])]
    first = torch.arange(K, device=dev) * tau
    lat_out = torch.arange(K * tau, device=dev) if with_latents else first  # latent rows kept
    out = torch.cat([lat_out, K * tau + torch.arange(n - r, device=dev)])
    x_vis = model.drop(model.wte(idx[:, r:]) + model.wpe(pos[r:n]))
    blk = model.blocks[0]
    qkv_vis = blk.attn.c_attn(blk.ln_1(x_vis))
    x_lat = torch.stack(cache.x0, dim=2).flatten(1, 2)
    qkv_lat = torch.stack(cache.qkv0, dim=2).flatten(1, 2)
    h, row_kv = _rows(model, torch.cat([x_lat, x_vis], dim=1), kv, m, None if want_kv else out,
                      torch.cat([qkv_lat, qkv_vis], dim=1), want_kv)
    if want_kv:
        h = h[:, out]
    n_lat = len(lat_out)
    hv = torch.cat([cache.h[:, :r], h[:, n_lat:]], dim=1)
    hv = hv.index_copy(1, torch.tensor(anchors, device=dev), h[:, :n_lat][:, first] if with_latents
                       else h[:, :K])
    logits = model.lm_head(hv)
    if with_latents:
        logits = (logits, model.lm_head(h[:, :n_lat]).view(B, K, tau, -1))
    if not want_kv:
        return logits
    return logits, [(torch.cat([k0, k1], dim=2), torch.cat([v0, v1], dim=2))
                    for (k0, v0), (k1, v1) in zip(kv, row_kv, strict=True)]


def _decode(model: LookaheadGPT, tok: torch.Tensor, position: int, kv: KV) -> tuple[torch.Tensor, KV]:
    """Logits (B, V) of one new visible token `tok` (B,) at `position` that attends to every cached
    key; the cache grows by its keys and values."""
    _check_positions(model, position)
    x = model.drop(model.wte(tok[:, None]) + model.wpe.weight[position])
    T = kv[0][0].shape[2] + 1
    mask = torch.ones(1, T, dtype=torch.bool, device=tok.device)
    h, new = _rows(model, x, kv, mask, want_kv=True)
    kv = [(torch.cat([k0, k1], dim=2), torch.cat([v0, v1], dim=2))
          for (k0, v0), (k1, v1) in zip(kv, new, strict=True)]
    return model.lm_head(h[:, -1]), kv


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
                   bidirectional: bool = True, kv_cache: bool = False,
                   checkpoint: bool = False) -> torch.Tensor:
    """Next-token loss (with latents in context) + latent loss (`lookahead_terms`); one thought at
    the last prompt token, so latent slot j - 1 (holding z_j) is supervised with answer token j - 1.
    `kv_cache`: the same loss through `cached_rollout` / `cached_final_pass` (equal up to rounding);
    `checkpoint` (with `kv_cache`): activation checkpointing of the rollout's passes."""
    next_token, latent = lookahead_terms(model, prompt, answer, pad, tau, bidirectional, kv_cache, checkpoint)
    return next_token + latent


def lookahead_terms(model: LookaheadGPT, prompt: torch.Tensor, answer: torch.Tensor, pad: int, tau: int,
                    bidirectional: bool = True, kv_cache: bool = False,
                    checkpoint: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """The two terms of `lookahead_loss`, L = L_NTP + L_latent with every supervised token weighted
    alike, as the paper writes both terms (sums of -log p over the next-token targets and over the
    latent targets; OpenReview version of arXiv 2603.20219, Sec. 3), divided by the number of answer
    tokens: the final pass's mean next-token cross-entropy on the answer, and the latent loss, the
    cross-entropy of latent slot j - 1 (the slot holding z_j) against answer token j - 1, read in the
    final pass, where every slot sees the full thought (the paper's Eq. 6: "the j-th latent token
    z_i,j is trained to predict x_i+j given the full latent thought"), summed over the latents and
    divided by the same count. Slot 0 is also where the first answer token is read (Eq. 7).

    Two departures from the paper's loss were fixed on 2026-11-25 (tests/test_lookahead_objective.py
    fails on the old code): the latent term read the rollout's states z_j, each given only the
    latents before it, instead of the slots given the full thought; and it took the mean over the
    latent targets, so at tau < the answer length a latent token weighed answer-length / tau times
    an answer token (at tau = the answer length the two counts are equal)."""
    if tau > answer.shape[1]:
        raise ValueError(f"tau={tau} exceeds the answer length {answer.shape[1]}")
    anchor = [prompt.shape[1] - 1]
    if kv_cache:
        z, cache = cached_rollout(model, prompt, anchor, tau, bidirectional, checkpoint, return_cache=True)
    else:
        z = rollout(model, prompt, anchor, tau, bidirectional)
    latent_tgt = answer[:, :tau].masked_fill(answer[:, :tau] == pad, IGNORE)
    x = torch.cat([prompt, answer], dim=1)
    if kv_cache:
        logits, latent_logits = cached_final_pass(model, x[:, :-1], anchor, cache, bidirectional,
                                                  with_latents=True)
    else:
        logits, latent_logits = final_pass(model, x[:, :-1], anchor, z, bidirectional, with_latents=True)
    latent = _ce(latent_logits[:, 0], latent_tgt)
    # the mean over the latent targets, as their sum per answer token (a factor of exactly 1.0 when
    # the counts are equal, tau = the answer length); tensors, so no device sync and plannable
    latent = latent * ((latent_tgt != IGNORE).sum() / (answer != pad).sum())
    return _ce(logits, answer_targets(prompt, answer, pad)), latent


@torch.no_grad()
def generate(model: LookaheadGPT, prompt: torch.Tensor, length: int, method: str, tau: int = 0,
             pause: int = 0, bidirectional: bool = True, kv_cache: bool = False) -> torch.Tensor:
    """Greedy answer tokens (B, length) after `prompt` (B, P) for method ntp, pause or lookahead.
    `kv_cache`: each new token runs as one row against the cached keys/values of the prompt, the
    latents and the tokens before it (equal up to rounding; the default recomputes the sequence)."""
    model.eval()
    if method == "pause":
        prompt = torch.cat([prompt, torch.full((prompt.shape[0], tau), pause, dtype=prompt.dtype,
                                               device=prompt.device)], dim=1)
    if kv_cache:
        return _generate_cached(model, prompt, length, method, tau, bidirectional)
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


def _generate_cached(model: LookaheadGPT, prompt: torch.Tensor, length: int, method: str, tau: int,
                     bidirectional: bool) -> torch.Tensor:
    P = prompt.shape[1]
    if length <= 0:
        return prompt[:, :0]
    if method == "lookahead":
        anchor = [P - 1]
        _, cache = cached_rollout(model, prompt, anchor, tau, bidirectional, return_cache=True)
        logits, kv = cached_final_pass(model, prompt, anchor, cache, bidirectional, want_kv=True)
    else:
        h, kv = _prefix(model, prompt)
        logits = model.lm_head(h)
    out = [logits[:, -1].argmax(-1)]
    for t in range(1, length):
        logits, kv = _decode(model, out[-1], P - 1 + t, kv)
        out.append(logits.argmax(-1))
    return torch.stack(out, dim=1)
