"""Seconds per training step of the preconditioned SGHMC sampler against plain SGD (momentum) on
the same model, batch and loss, and of the optimizer step alone (issue 16's target: SGHMC step
<= 1.15x an SGD step).

    OMP_NUM_THREADS=1 python -m replikit.tools.sampler_benchmark [--device cpu] \
        [--out results/benchmarks/sampler.json]

Models: the cold-posterior CNN of config/config.yaml (width 8, BatchNorm, 16x16 inputs, batch 32)
and the paper's ResNet-20 (width 16, 32x32 inputs, batch 128). A step is forward, backward (mean
cross-entropy + Gaussian prior energy / n, as `cold_posterior.Run.make_loss`) and the optimizer
step; the sampler samples (temperature 1, noise on) with the layer-wise preconditioner, re-estimated
every `steps_per_epoch` steps as in training. The two optimizers alternate in rounds and the
median round is reported, so a machine whose speed drifts affects both alike.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

from replikit.methods.posterior import gaussian_prior_energy, prior_parameters
from replikit.methods.samplers import SGMCMC, Schedule
from replikit.papers.cold_posterior import build_network

MODELS = {
    "convnet_w8_b32": ({"name": "convnet", "width": 8, "batchnorm": True, "invariant": "canonical"}, 16, 32),
    "resnet20_w16_b128": ({"name": "resnet20", "width": 16, "batchnorm": True, "invariant": "average"},
                          32, 128),
}


class _CountOps(TorchDispatchMode):
    """Counts the ops dispatched from Python (a foreach op counts once: on CUDA it is a few
    kernel launches for all tensors, not one per tensor)."""

    def __init__(self) -> None:
        super().__init__()
        self.n = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.n += 1
        return func(*args, **(kwargs or {}))


def dispatched_ops(name: str) -> dict[str, int]:
    """Ops per optimizer step on the accelerator code paths (SGD with foreach, the sampler's fused
    path), counted on the CPU: a proxy for kernel launches, which bound a small model's GPU step."""
    model_cfg, size, batch = MODELS[name]
    out = {}
    for opt_name in ("sgd_foreach", "sghmc_precond_accelerator_path"):
        torch.manual_seed(0)
        model = build_network({"model": model_cfg}, 10, False)
        if opt_name == "sgd_foreach":
            opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, foreach=True)
        else:
            opt = SGMCMC(model.parameters(), lr=0.05, num_data=50000, method="sghmc", momentum=0.9,
                         precondition=True, schedule=Schedule(steps_per_epoch=10**6), seed=0)
            if hasattr(opt, "fused"):
                opt.fused = True
        x = torch.randn(2, 3, size, size)
        F.cross_entropy(model(x), torch.zeros(2, dtype=torch.long)).backward()
        opt.step()  # creates the state
        with _CountOps() as c:
            opt.step()
        out[opt_name] = c.n
    return out


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def measure(name: str, device: torch.device, rounds: int, steps: int, num_data: int = 50000) -> dict:
    model_cfg, size, batch = MODELS[name]
    g = torch.Generator().manual_seed(0)
    x = torch.randn(batch, 3, size, size, generator=g).to(device)
    y = torch.randint(0, 10, (batch,), generator=g).to(device)
    setups = {}
    for opt_name in ("sgd", "sghmc_precond"):
        torch.manual_seed(0)
        model = build_network({"model": model_cfg}, 10, False).to(device)
        prior = prior_parameters(model)
        if opt_name == "sgd":
            opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        else:
            opt = SGMCMC(model.parameters(), lr=0.05, num_data=num_data, temperature=1.0, method="sghmc",
                         momentum=0.9, precondition=True, schedule=Schedule(steps_per_epoch=steps), seed=0)

        def step(model=model, opt=opt, prior=prior) -> None:
            loss = F.cross_entropy(model(x), y) + gaussian_prior_energy(prior, 1.0) / num_data
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()

        for _ in range(3):
            step()
        setups[opt_name] = (step, opt)
    times: dict[str, list[float]] = {k: [] for k in setups}
    opt_only: dict[str, list[float]] = {k: [] for k in setups}
    for _ in range(rounds):
        for k, (step, opt) in setups.items():
            _sync(device)
            t = time.perf_counter()
            for _ in range(steps):
                step()
            _sync(device)
            times[k].append((time.perf_counter() - t) / steps)
            _sync(device)
            t = time.perf_counter()
            for _ in range(steps):  # the optimizer step alone, on the last gradients
                opt.step()
            _sync(device)
            opt_only[k].append((time.perf_counter() - t) / steps)
    med = {k: statistics.median(v) for k, v in times.items()}
    med_opt = {k: statistics.median(v) for k, v in opt_only.items()}
    ratios = [a / b for a, b in zip(times["sghmc_precond"], times["sgd"], strict=True)]
    return {"model": model_cfg, "image_size": size, "batch_size": batch,
            "dispatched_ops_per_optimizer_step": dispatched_ops(name),
            "n_params": sum(p.numel() for p in setups["sgd"][1].param_groups[0]["params"]),
            "n_tensors": len(setups["sgd"][1].param_groups[0]["params"]),
            "s_per_step": med, "optimizer_only_s_per_step": med_opt,
            "ratio_sghmc_to_sgd": med["sghmc_precond"] / med["sgd"],
            "ratio_per_round": ratios, "rounds": rounds, "steps_per_round": steps}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--models", nargs="+", default=list(MODELS))
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--out", default="results/benchmarks/sampler.json")
    args = ap.parse_args(argv)
    device = torch.device(args.device)
    if device.type == "cpu":
        torch.set_num_threads(1)
    res = {"device": str(device), "threads": torch.get_num_threads(), "torch": torch.__version__,
           "models": {m: measure(m, device, args.rounds, args.steps) for m in args.models}}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=1))
    for m, r in res["models"].items():
        s, o = r["s_per_step"], r["optimizer_only_s_per_step"]
        print(f"{m}: SGD {s['sgd'] * 1e3:.2f} ms/step, "
              f"SGHMC (precond.) {s['sghmc_precond'] * 1e3:.2f} ms/step, "
              f"ratio {r['ratio_sghmc_to_sgd']:.3f}; optimizer step alone {o['sgd'] * 1e3:.3f} vs "
              f"{o['sghmc_precond'] * 1e3:.3f} ms; ops per optimizer step "
              f"{r['dispatched_ops_per_optimizer_step']}")
    return res


if __name__ == "__main__":
    main()
