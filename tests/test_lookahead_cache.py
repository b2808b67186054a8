"""The KV-cached latent rollout, final pass and generation compute the reference's function
(fp32 on CPU, forward and gradients), and activation checkpointing keeps the gradients."""

import pytest
import torch

from replikit.data.tasks import planning as pl
from replikit.models import lookahead_gpt as lg

ATOL, RTOL = 1e-5, 1e-5


def _model(n_layer: int = 2, dropout: float = 0.0) -> lg.LookaheadGPT:
    torch.manual_seed(0)
    return lg.LookaheadGPT(lg.GPTConfig(vocab_size=30, block_size=64, n_layer=n_layer, n_head=2, n_embd=16,
                                        dropout=dropout))


@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize("n_layer", [1, 2, 3])
def test_cached_rollout_and_final_pass_equal_the_reference(bidirectional, n_layer):
    model = _model(n_layer).eval()
    idx = torch.randint(0, 30, (3, 14))
    for anchors, tau in (([2, 6, 11], 4), ([13], 5), ([5], 1)):
        ref = lg.reference_rollout(model, idx, anchors, tau, bidirectional)
        z, cache = lg.cached_rollout(model, idx, anchors, tau, bidirectional, return_cache=True)
        torch.testing.assert_close(z, ref, atol=ATOL, rtol=RTOL)
        torch.testing.assert_close(lg.cached_final_pass(model, idx, anchors, cache, bidirectional),
                                   lg.final_pass(model, idx, anchors, ref, bidirectional),
                                   atol=ATOL, rtol=RTOL)


def _grads(model, loss):
    model.zero_grad(set_to_none=True)
    loss.backward()
    return {k: p.grad.clone() for k, p in model.named_parameters()}


@pytest.mark.parametrize("bidirectional", [True, False])
def test_cached_lookahead_loss_has_the_reference_value_and_gradients(bidirectional):
    model = _model().train()  # no dropout: training mode computes the same function
    prompt = torch.randint(7, 30, (4, 7))
    answer = torch.randint(7, 30, (4, 6))
    answer[:, -1] = pl.PAD
    ref = lg.lookahead_loss(model, prompt, answer, pl.PAD, 5, bidirectional)
    g_ref = _grads(model, ref)
    for ckpt in (False, True):
        new = lg.lookahead_loss(model, prompt, answer, pl.PAD, 5, bidirectional, kv_cache=True,
                                checkpoint=ckpt)
        torch.testing.assert_close(new, ref, atol=ATOL, rtol=RTOL)
        g_new = _grads(model, new)
        for k in g_ref:
            torch.testing.assert_close(g_new[k], g_ref[k], atol=ATOL, rtol=RTOL, msg=k)


def test_checkpointing_keeps_gradients_bitwise_also_with_dropout():
    model = _model(dropout=0.1).train()
    prompt, answer = torch.randint(7, 30, (4, 7)), torch.randint(7, 30, (4, 6))
    grads = []
    for ckpt in (False, True):
        torch.manual_seed(3)
        grads.append(_grads(model, lg.lookahead_loss(model, prompt, answer, pl.PAD, 5, kv_cache=True,
                                                     checkpoint=ckpt)))
    for k in grads[0]:
        assert torch.equal(grads[0][k], grads[1][k]), k


def test_checkpointing_keeps_less_for_backward():
    model = _model().train()
    prompt, answer = torch.randint(7, 30, (2, 10)), torch.randint(7, 30, (2, 12))
    sizes = []
    for ckpt in (False, True):
        saved = []

        def pack(t, saved=saved):
            saved.append(t.numel() * t.element_size())
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            lg.lookahead_loss(model, prompt, answer, pl.PAD, 12, kv_cache=True, checkpoint=ckpt)
        sizes.append(sum(saved))
    assert sizes[1] < 0.6 * sizes[0]


@pytest.mark.parametrize("method,tau", [("ntp", 0), ("pause", 2), ("lookahead", 3)])
@pytest.mark.parametrize("bidirectional", [True, False])
def test_cached_generation_equals_the_reference(method, tau, bidirectional):
    model = _model()
    with torch.no_grad():  # a model with confident, varied predictions so greedy choices are stable
        model.wte.weight.mul_(40)
    prompt = torch.randint(7, 30, (6, 6))
    ref = lg.generate(model, prompt, 7, method, tau, pl.PAUSE, bidirectional)
    new = lg.generate(model, prompt, 7, method, tau, pl.PAUSE, bidirectional, kv_cache=True)
    assert torch.equal(new, ref)


def test_cached_decoding_logits_equal_the_reference():
    model = _model().eval()
    prompt = torch.randint(7, 30, (3, 6))
    answer = torch.randint(7, 30, (3, 5))
    seq = torch.cat([prompt, answer], dim=1)
    with torch.no_grad():
        z, cache = lg.cached_rollout(model, prompt, [5], 4, return_cache=True)
        logits, kv = lg.cached_final_pass(model, prompt, [5], cache, want_kv=True)
        ref = lg.final_pass(model, seq, [5], lg.rollout(model, prompt, [5], 4))
        torch.testing.assert_close(logits[:, -1], ref[:, 5], atol=ATOL, rtol=RTOL)
        for t in range(answer.shape[1]):
            step, kv = lg._decode(model, answer[:, t], 6 + t, kv)
            torch.testing.assert_close(step, ref[:, 6 + t], atol=ATOL, rtol=RTOL)


def test_cached_rollout_runs_the_prefix_once(monkeypatch):
    model = _model().eval()
    rows = []
    orig = lg._rows
    monkeypatch.setattr(lg, "_rows", lambda m, x, *a, **k: rows.append(x.shape[1]) or orig(m, x, *a, **k))
    lg.cached_rollout(model, torch.randint(0, 30, (2, 20)), [19], 6)
    assert rows == [20, 1, 2, 3, 4, 5]


def test_performance_switches_stay_out_of_the_run_parameters_at_their_defaults():
    from replikit.papers import latent_lookahead as ll

    cfg = {"data": {"sudoku4": {}}, "training": {"sudoku4": {}}, "model": {}, "optimizer": {}, "eval_max": 1,
           "bf16": False, "performance": dict(ll.PERFORMANCE)}
    assert "performance" not in ll.training_config(cfg, "sudoku4")
    on = {**cfg, "performance": {**ll.PERFORMANCE, "kv_cache": True}}
    assert ll.training_config(on, "sudoku4")["performance"]["kv_cache"] is True
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    off = {"kv_cache": False, "checkpoint_rollout": False, "fused_adam": False}
    assert ll.performance(cfg, cpu, 89) == off
    assert ll.performance(cfg, cuda, 19) == {**off, "kv_cache": True, "fused_adam": True}
    assert ll.performance(cfg, cuda, 89)["checkpoint_rollout"] is True
    assert ll.performance(ll.training_config(on, "sudoku4"), cpu)["kv_cache"] is True


def test_run_with_kv_cache_trains_like_the_reference():
    from replikit.papers import latent_lookahead as ll

    cfg = {"task": "sudoku4", "model": {"n_layer": 1, "n_embd": 16, "n_head": 2, "block_size": 128},
           "optimizer": {"name": "adam", "lr": 1e-3}, "eval_max": 8, "bf16": True,
           "data": {"n": 40, "min_empty": 8, "max_empty": 12, "seed": 0,
                    "splits": {"train": 0.8, "test": 0.2}},
           "training": {"tau": 3, "epochs": 1, "batch_size": 8, "eval_every": 1, "checkpoint_every": 0,
                        "dropout": 0.0}}
    ds = pl.build_dataset("sudoku4", cfg["data"])
    spec = ll.RunSpec("sudoku4", "lookahead", 3)
    ref = ll.Run(spec, cfg, ds, 0, torch.device("cpu")).train(progress=False)
    fast_cfg = {**cfg, "performance": {"kv_cache": True, "checkpoint_rollout": True, "fused_adam": False}}
    fast = ll.Run(spec, fast_cfg, ds, 0, torch.device("cpu")).train(progress=False)
    assert [h["exact_match"] for h in fast] == [h["exact_match"] for h in ref]
    assert fast[-1]["train_loss"] == pytest.approx(ref[-1]["train_loss"], abs=1e-5)


def _frozen_lookahead_loss(model, prompt, answer, pad, tau, bidirectional=True):
    """lg.lookahead_loss as fixed on 2026-11-25 (the latent term read from the final pass's latent
    slots, every supervised token weighted alike; see lookahead_gpt.lookahead_terms)."""
    anchor = [prompt.shape[1] - 1]
    z = lg.rollout(model, prompt, anchor, tau, bidirectional)
    latent_tgt = answer[:, :tau].masked_fill(answer[:, :tau] == pad, lg.IGNORE)
    x = torch.cat([prompt, answer], dim=1)
    logits, latent_logits = lg.final_pass(model, x[:, :-1], anchor, z, bidirectional, with_latents=True)
    latent = lg._ce(latent_logits[:, 0], latent_tgt)
    latent = latent * ((latent_tgt != lg.IGNORE).sum() / (answer != pad).sum())
    return lg._ce(logits, lg.answer_targets(prompt, answer, pad)) + latent


def test_default_lookahead_loss_is_bitwise_the_frozen_one():
    model = _model(dropout=0.1).train()
    prompt, answer = torch.randint(7, 30, (4, 7)), torch.randint(7, 30, (4, 6))
    grads = []
    for fn in (_frozen_lookahead_loss, lg.lookahead_loss):
        torch.manual_seed(1)
        grads.append(_grads(model, fn(model, prompt, answer, pl.PAD, 5)))
    for k in grads[0]:
        assert torch.equal(grads[0][k], grads[1][k]), k
