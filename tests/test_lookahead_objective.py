"""Latent lookahead's objective against its definition (Noci et al. 2026, arXiv 2603.20219; its
method section, Eqs. 6-8, in the OpenReview version, read in a stored copy; the abstract:
"recursively feeding its hidden states back into the context for tau steps ... This produces tau
latent predictions that are supervised against the next tau ground-truth tokens"), written out by
hand, token by token, at tau below and equal to the answer length, independently of the model file's
`thought_layout`, `rollout` and `final_pass`:

- one thought, anchored at the last prompt token x_P (the `=` before the answer);
- z_1 is the final hidden state (after ln_f) at x_P in the plain causal pass; z_{j+1} is the final
  hidden state at the last slot when z_1..z_j are appended to the prompt as input embeddings at the
  positions of the answer tokens they stand for (P, P+1, ...), attending to the whole prompt and to
  each other (bidirectionally; causally in the ablation);
- the latent term: in the final pass (below), where every latent slot sees the full thought, the
  slot holding z_j is scored against answer token j (j = 1..tau), as the paper's Eq. 6 writes it
  ("the j-th latent token z_i,j is trained to predict x_i+j given the full latent thought"; the code
  once scored the rollout's z_j, each given only the latents before it: this test fails on that
  code), summed; the loss weighs every supervised token alike: L = L_NTP + L_latent with both terms sums of
  -log p, as the paper's method section writes them (OpenReview version, Sec. 3), here divided by the
  number of answer tokens. At tau < the answer length the code once took the mean of each term,
  which weighed a latent token answer-length / tau times an answer token (19 / 4 on 4x4 Sudoku at
  tau 4): this test fails on that code;
- the final pass has the prompt, the teacher-forced answer and the tau latents in context: answer
  tokens see the prompt, earlier answer tokens and every latent; the first answer token is read from
  the first latent slot;
- the loss is the final pass's mean next-token cross-entropy on the answer plus the latent term.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from replikit.data.tasks import planning as pl
from replikit.models import lookahead_gpt as lg


def _model() -> lg.LookaheadGPT:
    torch.manual_seed(0)
    return lg.LookaheadGPT(
        lg.GPTConfig(vocab_size=30, block_size=64, n_layer=2, n_head=2, n_embd=16, dropout=0.0)
    ).eval()


def _hidden(model, rows: list[torch.Tensor], positions: list[int], sees: list[list[int]]) -> torch.Tensor:
    """Final hidden states of input embeddings `rows` (each (B, d)) at `positions`, row i attending to
    the rows `sees[i]`: an explicit mask built row by row."""
    T = len(rows)
    mask = torch.zeros(T, T, dtype=torch.bool)
    for i, cols in enumerate(sees):
        mask[i, cols] = True
    return model.hidden(torch.stack(rows, dim=1), torch.tensor(positions), mask)


def by_hand(model, prompt, answer, tau: int, bidirectional: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    B, P = prompt.shape
    A = answer.shape[1]
    tok = [model.wte(prompt[:, i]) for i in range(P)]
    # rollout: pass j appends the j latents so far
    z: list[torch.Tensor] = []
    for j in range(tau):
        rows = tok + z
        sees = [list(range(i + 1)) for i in range(P)]
        for s in range(j):  # latent slot s sees the prompt and the latents (all, or up to itself)
            sees.append(list(range(P)) + [P + t for t in range(j) if bidirectional or t <= s])
        h = _hidden(model, rows, list(range(P)) + [P + s for s in range(j)], sees)
        z.append(h[:, -1])
    # final pass: prompt, answer tokens 0..A-2 (teacher forcing), then the tau latents
    vis = tok + [model.wte(answer[:, k]) for k in range(A - 1)]
    n = len(vis)
    sees = [list(range(i + 1)) + ([n + t for t in range(tau)] if i >= P else []) for i in range(n)]
    for s in range(tau):
        sees.append(list(range(P)) + [n + t for t in range(tau) if bidirectional or t <= s])
    positions = list(range(n)) + [P + s for s in range(tau)]
    h = _hidden(model, vis + z, positions, sees)
    # answer token 0 from the first latent slot; token k >= 1 from the visible answer token k - 1
    reads = [h[:, n]] + [h[:, P + k - 1] for k in range(1, A)]
    logits = model.lm_head(torch.stack(reads, dim=1))
    nxt = F.cross_entropy(logits.flatten(0, 1), answer.flatten())
    # the latent term: slot s (holding z_{s+1}), given the full thought, against answer token s;
    # L = L_NTP + L_latent, both sums of -log p (the paper's Eqs. 6-8): every supervised token weighs
    # alike; both divided by the number of answer tokens, B * A
    latent = sum(
        F.cross_entropy(model.lm_head(h[:, n + s]), answer[:, s], reduction="sum") for s in range(tau)
    )
    return nxt, latent / (B * A)


@pytest.mark.parametrize("tau", [2, 4])  # below and equal to the answer length (4)
@pytest.mark.parametrize("bidirectional", [True, False])
def test_lookahead_terms_equal_the_definition_written_out_by_hand(tau, bidirectional):
    model = _model()
    torch.manual_seed(1)
    prompt = torch.randint(7, 30, (3, 5))
    answer = torch.randint(7, 30, (3, 4))
    want_next, want_latent = by_hand(model, prompt, answer, tau, bidirectional)
    got_next, got_latent = lg.lookahead_terms(model, prompt, answer, pl.PAD, tau, bidirectional)
    torch.testing.assert_close(got_latent, want_latent)
    torch.testing.assert_close(got_next, want_next)
    torch.testing.assert_close(
        lg.lookahead_loss(model, prompt, answer, pl.PAD, tau, bidirectional), want_next + want_latent
    )
    # the cached path computes the same two terms
    cached = lg.lookahead_terms(model, prompt, answer, pl.PAD, tau, bidirectional, kv_cache=True)
    torch.testing.assert_close(cached[0], want_next, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(cached[1], want_latent, atol=1e-5, rtol=1e-5)


def test_greedy_decoding_reads_the_same_logits_as_training():
    """At test time the latents are rolled out once from the prompt, and each answer token is the
    argmax of the final pass's logits at its position: the logits the next-token term trains."""
    model = _model()
    torch.manual_seed(2)
    prompt = torch.randint(7, 30, (2, 5))
    out = lg.generate(model, prompt, 4, "lookahead", tau=4)
    z = lg.rollout(model, prompt, [4], 4)
    logits = lg.final_pass(model, torch.cat([prompt, out[:, :-1]], dim=1), [4], z)
    assert torch.equal(logits[:, 4:].argmax(-1), out)
