"""FLOPs and activation memory of one latent-lookahead training step against an NTP step, at the
paper's model size, counted on the CPU (issue 16's CPU-measurable target: lookahead <= 3x NTP).

    OMP_NUM_THREADS=1 python -m replikit.plan.ll_cost [--batch 2] [--out results/benchmarks/ll_cost.json]

FLOPs are counted as `latent_lookahead.benchmark` counts them (torch's FlopCounterMode over
forward, backward and the optimizer step, fp32, dropout on) and are per example (they scale
linearly with the batch). `saved_bytes_per_example` is what autograd keeps for the backward pass
(unique storages, parameters left out, fp32): the activation memory a step needs, of which a bf16
GPU run keeps roughly half. Tasks: 4x4 Sudoku (prompt 20, answer 19, tau 19) and 9x9 Sudoku
(prompt 90, answer 89, tau 89), the serializations of `replikit.data.tasks.planning`. Also the largest
difference between the reference and the KV-cached loss and gradients.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch
from torch.utils.flop_counter import FlopCounterMode

from replikit.data.tasks import planning as pl
from replikit.models import lookahead_gpt as lg

TASKS = {"sudoku4": (20, 19), "sudoku9": (90, 89)}  # prompt, answer length; tau = answer length
PAPER_MODEL = {"n_layer": 2, "n_embd": 768, "n_head": 8, "block_size": 512, "dropout": 0.1}
VARIANTS = {
    "ntp": {},
    "pause": {},
    "lookahead_reference": {"kv_cache": False},
    "lookahead_kv_cache": {"kv_cache": True},
    "lookahead_kv_cache_checkpoint": {"kv_cache": True, "checkpoint": True},
    "lookahead_causal_kv_cache": {"kv_cache": True, "bidirectional": False},
}


def _loss(name: str, model, prompt, answer, tau: int) -> torch.Tensor:
    if name == "ntp":
        return lg.ntp_loss(model, prompt, answer, pl.PAD)
    if name == "pause":
        return lg.pause_loss(model, prompt, answer, pl.PAD, pl.PAUSE, tau)
    return lg.lookahead_loss(model, prompt, answer, pl.PAD, tau, **VARIANTS[name])


def _saved_bytes(fn, params) -> int:
    param_ptrs = {p.untyped_storage().data_ptr() for p in params}
    seen: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        s = t.untyped_storage()
        if s.data_ptr() not in param_ptrs:
            seen[s.data_ptr()] = s.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = fn()
    del loss
    return sum(seen.values())


def measure(task: str, batch: int, model_cfg: dict, variants: list[str]) -> dict:
    P, A = TASKS[task]
    tau = A
    torch.manual_seed(0)
    model = lg.LookaheadGPT(lg.GPTConfig(vocab_size=pl.VOCAB_SIZE, **model_cfg)).train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    g = torch.Generator().manual_seed(0)
    prompt = torch.randint(7, pl.VOCAB_SIZE, (batch, P), generator=g)
    answer = torch.randint(7, pl.VOCAB_SIZE, (batch, A), generator=g)
    out: dict = {"task": task, "prompt_len": P, "answer_len": A, "tau": tau, "batch": batch}
    for name in variants:
        def step(name=name) -> None:
            loss = _loss(name, model, prompt, answer, tau)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()

        t0 = time.perf_counter()
        with FlopCounterMode(display=False) as fc:
            step()
        seconds = time.perf_counter() - t0
        saved = _saved_bytes(lambda name=name: _loss(name, model, prompt, answer, tau),
                             list(model.parameters()))
        out[name] = {"flops_per_example": fc.get_total_flops() / batch,
                     "saved_bytes_per_example": saved / batch, "cpu_s_per_step": seconds}
    ntp = out["ntp"]["flops_per_example"]
    for name in variants:
        out[name]["flops_vs_ntp"] = out[name]["flops_per_example"] / ntp
        out[name]["saved_gib_at_batch_128"] = out[name]["saved_bytes_per_example"] * 128 / 2**30
    return out


def max_difference(task: str, batch: int, model_cfg: dict) -> dict:
    """Largest |reference - KV cache| of the loss and of any gradient entry (fp32, no dropout)."""
    P, A = TASKS[task]
    torch.manual_seed(0)
    model = lg.LookaheadGPT(lg.GPTConfig(vocab_size=pl.VOCAB_SIZE, **{**model_cfg, "dropout": 0.0})).train()
    g = torch.Generator().manual_seed(1)
    prompt = torch.randint(7, pl.VOCAB_SIZE, (batch, P), generator=g)
    answer = torch.randint(7, pl.VOCAB_SIZE, (batch, A), generator=g)
    res = {}
    for kv in (False, True):
        model.zero_grad(set_to_none=True)
        loss = lg.lookahead_loss(model, prompt, answer, pl.PAD, A, kv_cache=kv)
        loss.backward()
        res[kv] = (loss.detach(), [p.grad.clone() for p in model.parameters()])
    return {"task": task, "loss": float(res[False][0]),
            "max_abs_loss_diff": float((res[False][0] - res[True][0]).abs()),
            "max_abs_grad_diff": max(float((a - b).abs().max()) for a, b in zip(res[False][1], res[True][1],
                                                                                 strict=True)),
            "max_abs_grad": max(float(a.abs().max()) for a in res[False][1])}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--tasks", nargs="+", default=list(TASKS))
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS))
    ap.add_argument("--no-diff", action="store_true", help="skip the reference-vs-cache difference")
    ap.add_argument("--out", default="results/benchmarks/ll_cost.json")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    res = {"model": PAPER_MODEL, "threads": 1, "torch": torch.__version__,
           "tasks": {t: measure(t, args.batch, PAPER_MODEL, args.variants) for t in args.tasks}}
    if not args.no_diff:
        res["kv_cache_vs_reference"] = [max_difference(t, 1, PAPER_MODEL) for t in args.tasks]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=1))
    for t, r in res["tasks"].items():
        for name in args.variants:
            v = r[name]
            print(f"{t:8s} {name:32s} {v['flops_vs_ntp']:6.2f}x NTP FLOPs  "
                  f"{v['saved_gib_at_batch_128']:7.2f} GiB saved at batch 128 (fp32)  "
                  f"{v['cpu_s_per_step']:.2f} s")
    for d in res.get("kv_cache_vs_reference", []):
        print(d)
    return res


if __name__ == "__main__":
    main()
