"""Stochastic-gradient MCMC as a torch optimizer: SGLD and SGHMC with a cyclical cosine step
size, a (ramped) temperature and a layer-wise preconditioner.

The loss handed to `backward` is the *per-example* potential U(theta)/n, e.g. the mean
negative log likelihood of a batch plus (-log prior)/n; `num_data` is n. With step size
`lr` (per example, as in Wenzel et al. 2020) the updates are, for every parameter tensor
with preconditioner G (a scalar per tensor):

    SGLD   theta <- theta - lr*G*grad + sqrt(2*lr*G*T/n) * xi
    SGHMC  v <- momentum*v - lr*G*grad + sqrt(2*(1-momentum)*lr*G*T/n) * xi;  theta <- theta + v

with xi ~ N(0, I). Both leave exp(-U/T) invariant as lr -> 0 (SGHMC: symplectic Euler,
friction 1-momentum), so at T = 1 they sample the posterior and at T < 1 the cold posterior
exp(-U/T); T = 0 is (momentum) SGD on U/n. The temperature is multiplied by a ramp factor
that is 0 before `ramp_start` epochs (a shared SGD burn-in), rises linearly to 1 at
`ramp_end`, and stays 1. The preconditioner G of a tensor is proportional to 1/sqrt(a), with
`a` its mean squared gradient over the previous epoch, normalized so that G averages 1 over all
parameters (so `lr` keeps its meaning); it is frozen during an epoch and re-estimated at each
epoch end (constant within an epoch, so each epoch still targets exp(-U/T)). The noise generator
is part of the optimizer's state_dict, so a resumed chain draws the same noise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Schedule:
    """Cyclical cosine step size and temperature ramp, in epochs of `steps_per_epoch` steps."""

    steps_per_epoch: int
    cycle_epochs: float = 0.0  # 0 = constant step size
    ramp_start: float = 0.0  # temperature factor 0 before this epoch ...
    ramp_end: float = 0.0  # ... and 1 from this epoch on (linear in between)

    def lr_factor(self, step: int) -> float:
        if self.cycle_epochs <= 0:
            return 1.0
        per_cycle = max(1, round(self.cycle_epochs * self.steps_per_epoch))
        return 0.5 * (1 + math.cos(math.pi * (step % per_cycle) / per_cycle))

    def temperature_factor(self, step: int) -> float:
        epoch = step / self.steps_per_epoch
        if epoch >= self.ramp_end:
            return 1.0
        if epoch < self.ramp_start:
            return 0.0
        return (epoch - self.ramp_start) / (self.ramp_end - self.ramp_start)


class SGMCMC(torch.optim.Optimizer):
    """SGLD (`method="sgld"`) or SGHMC (`method="sghmc"`) sampling exp(-U/T)."""

    def __init__(self, params, lr: float, num_data: int, temperature: float = 1.0,
                 method: str = "sghmc", momentum: float = 0.9, precondition: bool = False,
                 schedule: Schedule | None = None, seed: int = 0, eps: float = 1e-12) -> None:
        if method not in ("sgld", "sghmc"):
            raise ValueError(f"unknown SG-MCMC method {method!r}: use sgld or sghmc")
        if lr <= 0 or num_data < 1 or temperature < 0 or not 0 <= momentum < 1:
            raise ValueError(f"bad sampler settings: lr={lr}, num_data={num_data}, "
                             f"temperature={temperature}, momentum={momentum}")
        super().__init__(params, {"lr": lr})
        self.num_data, self.temperature, self.method = num_data, temperature, method
        self.momentum, self.precondition, self.eps = momentum, precondition, eps
        self.schedule = schedule or Schedule(steps_per_epoch=1)
        self.generator = torch.Generator().manual_seed(seed)
        self.step_count = 0

    def _params(self) -> list[torch.Tensor]:
        return [p for g in self.param_groups for p in g["params"]]

    def current(self) -> tuple[float, float]:
        """(step size factor, temperature) of the next step."""
        s = self.schedule
        return s.lr_factor(self.step_count), self.temperature * s.temperature_factor(self.step_count)

    @torch.no_grad()
    def step(self, closure=None):  # noqa: D102
        loss = closure() if closure is not None else None
        lr_factor, temp = self.current()
        sghmc = self.method == "sghmc"
        for group in self.param_groups:
            lr = group["lr"] * lr_factor
            for p in group["params"]:
                if p.grad is None:
                    continue
                st = self.state[p]
                if not st:
                    st["precond"], st["sq_sum"] = 1.0, 0.0  # floats: kept exact by load_state_dict
                    if sghmc:
                        st["velocity"] = torch.zeros_like(p)
                g = p.grad
                st["sq_sum"] += g.double().pow(2).mean().item() if self.precondition else 0.0
                G = st["precond"]
                noise_var = 2 * lr * G * temp / self.num_data
                if sghmc:
                    noise_var *= 1 - self.momentum
                v = -lr * G * g
                if noise_var > 0:
                    xi = torch.randn(p.shape, generator=self.generator, dtype=p.dtype)
                    v = v + math.sqrt(noise_var) * xi.to(p.device)
                if sghmc:
                    st["velocity"].mul_(self.momentum).add_(v)
                    v = st["velocity"]
                p.add_(v)
        self.step_count += 1
        if self.step_count % self.schedule.steps_per_epoch == 0:
            self._update_preconditioner()
        return loss

    def _update_preconditioner(self) -> None:
        params = [p for p in self._params() if p in self.state]
        states = [self.state[p] for p in params]
        if not states:
            return
        if self.precondition:
            spe = self.schedule.steps_per_epoch
            inv_rms = [1 / (math.sqrt(s["sq_sum"] / spe) + self.eps) for s in states]
            sizes = [p.numel() for p in params]
            mean = sum(g * n for g, n in zip(inv_rms, sizes, strict=True)) / sum(sizes)
            for s, g in zip(states, inv_rms, strict=True):
                s["precond"] = g / mean
        for s in states:
            s["sq_sum"] = 0.0

    def state_dict(self) -> dict:
        sd = super().state_dict()
        sd["sampler"] = {"generator": self.generator.get_state(), "step_count": self.step_count}
        return sd

    def load_state_dict(self, state_dict: dict) -> None:
        state_dict = dict(state_dict)
        extra = state_dict.pop("sampler")
        super().load_state_dict(state_dict)
        self.generator.set_state(extra["generator"])
        self.step_count = extra["step_count"]
