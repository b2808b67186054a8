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
(on the parameters' device) is part of the optimizer's state_dict, so a resumed chain draws the
same noise.

Chains: with a list of temperatures, every parameter carries a leading chain dimension (one chain
per temperature, e.g. the stacked weights of `replikit.models.chains.ChainStack`) and one step
advances them all. Each chain has its own temperature, preconditioner and momentum; the step size,
the schedule and the noise draws are shared (paired across temperatures: each draw has the shape of
one chain's tensor and every chain receives it, scaled by its own noise level), so chain c follows
the single-chain sampler at temperature T_c started from the same state, up to float rounding.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
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
    """SGLD (`method="sgld"`) or SGHMC (`method="sghmc"`) sampling exp(-U/T).

    A step makes no host-device synchronisation: the noise is drawn on the parameters' device
    from a seeded generator of that device (checkpointed in `state_dict`), the update runs as
    foreach ops over all tensors, and the preconditioner's squared-gradient sums are accumulated
    on the device and read once per epoch, when the preconditioner is re-estimated. On the CPU the
    result is bitwise that of the per-tensor loop this replaced (frozen in
    tests/test_samplers.py): the same generator draws in the same order (one `randn` per tensor;
    a single draw for all tensors would differ, torch fills blocks of 16 values differently from
    short tensors), the same scalars and the same sequence of rounded operations (foreach ops on
    the CPU run the per-tensor kernels). On CUDA the noise of all tensors is one draw from a CUDA
    generator, so a GPU chain is "same seed, same statistics", not the CPU chain's numbers.
    """

    def __init__(self, params, lr: float, num_data: int, temperature: float | Sequence[float] = 1.0,
                 method: str = "sghmc", momentum: float = 0.9, precondition: bool = False,
                 schedule: Schedule | None = None, seed: int = 0, eps: float = 1e-12) -> None:
        if method not in ("sgld", "sghmc"):
            raise ValueError(f"unknown SG-MCMC method {method!r}: use sgld or sghmc")
        # a list of temperatures: one chain each, on the parameters' leading dimension
        self.chains = None if isinstance(temperature, (int, float)) else len(temperature)
        temps = [float(temperature)] if self.chains is None else [float(t) for t in temperature]
        if self.chains == 0:
            raise ValueError("chain mode needs at least one temperature")
        if lr <= 0 or num_data < 1 or min(temps) < 0 or not 0 <= momentum < 1:
            raise ValueError(f"bad sampler settings: lr={lr}, num_data={num_data}, "
                             f"temperature={temperature}, momentum={momentum}")
        super().__init__(params, {"lr": lr})
        self.num_data, self.method = num_data, method
        self.temperature: float | list[float] = temps[0] if self.chains is None else temps
        self.momentum, self.precondition, self.eps = momentum, precondition, eps
        self.schedule = schedule or Schedule(steps_per_epoch=1)
        params = self._params()
        if self.chains is not None and any(p.ndim < 1 or p.shape[0] != self.chains for p in params):
            raise ValueError(f"{self.chains} temperatures, but not every parameter has {self.chains} "
                             "chains on its leading dimension")
        self.device = params[0].device if params else torch.device("cpu")
        self.generator = torch.Generator(device=self.device).manual_seed(seed)
        # off the CPU: one noise draw for all tensors and foreach norms for the squared gradients
        # (few kernel launches); on the CPU: per tensor, bitwise the old loop
        self.fused = self.device.type != "cpu"
        self._buffer: tuple | None = None  # noise buffer of the fused path
        self._numel: dict[tuple, torch.Tensor] = {}
        self.step_count = 0
        # per parameter: squared-gradient sum of the current epoch (float64, on the device)
        self._sq: dict[torch.Tensor, torch.Tensor] = {}
        # chain mode, per parameter: (G, sqrt(G*T)) of every chain, shaped to broadcast over it
        self._coef: dict[torch.Tensor, tuple[torch.Tensor, torch.Tensor]] = {}

    def _params(self) -> list[torch.Tensor]:
        return [p for g in self.param_groups for p in g["params"]]

    def current(self) -> tuple[float, float]:
        """(step size factor, temperature) of the next step; in chain mode the temperature is the
        schedule's factor, which multiplies every chain's temperature."""
        s = self.schedule
        factor = s.temperature_factor(self.step_count)
        base = 1.0 if self.chains is not None else self.temperature
        return s.lr_factor(self.step_count), base * factor

    def _noise(self, params: list[torch.Tensor]) -> list[torch.Tensor]:
        """One standard normal draw per tensor, of one chain's shape in chain mode (shared by all)."""
        shapes = [p.shape[1:] if self.chains is not None else p.shape for p in params]
        if not self.fused or len({p.dtype for p in params}) > 1:
            return [torch.randn(shape, generator=self.generator, dtype=p.dtype, device=p.device)
                    for shape, p in zip(shapes, params, strict=True)]
        key = tuple(id(p) for p in params)
        if self._buffer is None or self._buffer[0] != key:  # one flat buffer, viewed per tensor
            sizes = [math.prod(shape) for shape in shapes]
            flat = torch.empty(sum(sizes), dtype=params[0].dtype, device=self.device)
            views = [t.view(shape) for t, shape in zip(flat.split(sizes), shapes, strict=True)]
            self._buffer = (key, flat, views)
        _, flat, views = self._buffer
        flat.normal_(generator=self.generator)
        return views

    @torch.no_grad()
    def step(self, closure=None):  # noqa: D102
        loss = closure() if closure is not None else None
        if self.chains is not None:
            self._step_chains()
            return loss
        lr_factor, temp = self.current()
        sghmc = self.method == "sghmc"
        for group in self.param_groups:
            lr = group["lr"] * lr_factor
            params = [p for p in group["params"] if p.grad is not None]
            if not params:
                continue
            self._init_state(params)
            grads = [p.grad for p in params]
            if self.precondition and self.fused:
                norms = torch.stack(torch._foreach_norm(grads)).double()
                key = tuple(id(p) for p in params)
                if key not in self._numel:
                    self._numel[key] = torch.tensor([g.numel() for g in grads], dtype=torch.float64,
                                                    device=norms.device)
                numel = self._numel[key]
                torch._foreach_add_([self._sq[p] for p in params], (norms.pow(2) / numel).unbind())
            elif self.precondition:
                torch._foreach_add_([self._sq[p] for p in params], [g.double().pow(2).mean() for g in grads])
            G = [self.state[p]["precond"] for p in params]
            noise_var = [2 * lr * g * temp / self.num_data for g in G]
            if sghmc:
                noise_var = [nv * (1 - self.momentum) for nv in noise_var]
            v = list(torch._foreach_mul(grads, [-lr * g for g in G]))
            noisy = [i for i, nv in enumerate(noise_var) if nv > 0]
            if noisy:
                xi = self._noise([params[i] for i in noisy])
                torch._foreach_mul_(xi, [math.sqrt(noise_var[i]) for i in noisy])
                vn = torch._foreach_add([v[i] for i in noisy], xi)
                for i, t in zip(noisy, vn, strict=True):
                    v[i] = t
            self._move(params, v)
        self._advance()
        return loss

    def _init_state(self, params: list[torch.Tensor]) -> None:
        """First step of a parameter: preconditioner 1 and squared-gradient sum 0 (floats, kept exact
        by load_state_dict; one per chain in chain mode), zero velocity for SGHMC, and its device
        accumulator of squared gradients."""
        for p in params:
            st = self.state[p]
            if not st:
                st["precond"], st["sq_sum"] = (1.0, 0.0) if self.chains is None else \
                    ([1.0] * self.chains, [0.0] * self.chains)
                if self.method == "sghmc":
                    st["velocity"] = torch.zeros_like(p)
            if p not in self._sq:
                shape = () if self.chains is None else (self.chains,)
                self._sq[p] = torch.zeros(shape, dtype=torch.float64, device=p.device)

    def _move(self, params: list[torch.Tensor], v: list[torch.Tensor]) -> None:
        """theta += v (SGLD), or v into the velocity first (SGHMC: vel = momentum * vel + v)."""
        if self.method == "sghmc":
            vel = [self.state[p]["velocity"] for p in params]
            torch._foreach_mul_(vel, self.momentum)
            torch._foreach_add_(vel, v)
            v = vel
        torch._foreach_add_(params, v)

    def _advance(self) -> None:
        self.step_count += 1
        if self.step_count % self.schedule.steps_per_epoch == 0:
            self._update_preconditioner()

    def _chain_coefficients(self, p: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(G, sqrt(G*T)) of every chain of `p`, shaped (C, 1, ..., 1); rebuilt when G changes."""
        if p not in self._coef:
            G = torch.tensor(self.state[p]["precond"], dtype=torch.float64)
            T = torch.tensor(self.temperature, dtype=torch.float64)
            shape = (self.chains,) + (1,) * (p.ndim - 1)
            self._coef[p] = tuple(v.to(p.dtype).view(shape).to(p.device) for v in (G, (G * T).sqrt()))
        return self._coef[p]

    def _step_chains(self) -> None:
        """One step of every chain: v = -lr*G_c*grad + sqrt(2*lr*G_c*T_c*f/n [*(1-momentum)]) * xi,
        with f the schedule's temperature factor and xi one draw per tensor shared by the chains."""
        lr_factor, factor = self.current()
        sghmc = self.method == "sghmc"
        noisy = factor > 0 and max(self.temperature) > 0
        for group in self.param_groups:
            lr = group["lr"] * lr_factor
            params = [p for p in group["params"] if p.grad is not None]
            if not params:
                continue
            self._init_state(params)
            grads = [p.grad for p in params]
            if self.precondition and self.fused:  # one foreach norm over every chain's slice
                norms = torch.stack(torch._foreach_norm([g[c] for g in grads for c in range(self.chains)]))
                key = tuple(id(p) for p in params)
                if key not in self._numel:  # built once: a copy from the host each step would sync a GPU
                    self._numel[key] = torch.tensor([g[0].numel() for g in grads], dtype=torch.float64,
                                                    device=norms.device)
                numel = self._numel[key]
                sq = norms.double().pow(2).view(len(grads), self.chains) / numel.view(-1, 1)
                torch._foreach_add_([self._sq[p] for p in params], sq.unbind())
            elif self.precondition:  # per chain: the mean squared gradient of the tensor
                torch._foreach_add_([self._sq[p] for p in params],
                                    [g.double().pow(2).flatten(1).mean(1) for g in grads])
            coefs = [self._chain_coefficients(p) for p in params]
            v = torch._foreach_mul(grads, [g for g, _ in coefs])
            torch._foreach_mul_(v, -lr)
            if noisy:
                scale = 2 * lr * factor / self.num_data * ((1 - self.momentum) if sghmc else 1.0)
                xi = [x.unsqueeze(0) for x in self._noise(params)]
                noise = torch._foreach_mul(xi, [s for _, s in coefs])
                torch._foreach_mul_(noise, math.sqrt(scale))
                torch._foreach_add_(v, noise)
            self._move(params, v)
        self._advance()

    def _sync_sq_sums(self) -> None:
        """Copy the device accumulators into the state's floats (one transfer)."""
        params = [p for p in self._params() if p in self.state and p in self._sq]
        if params:
            for p, v in zip(params, torch.stack([self._sq[p] for p in params]).tolist(), strict=True):
                self.state[p]["sq_sum"] = v  # a list of the chains' sums in chain mode

    def _update_preconditioner(self) -> None:
        params = [p for p in self._params() if p in self.state]
        states = [self.state[p] for p in params]
        if not states:
            return
        if self.precondition:
            self._sync_sq_sums()
            for chain in [None] if self.chains is None else range(self.chains):
                self._precondition(params, states, chain)  # each chain normalized over its own tensors
        for s in states:
            s["sq_sum"] = 0.0 if self.chains is None else [0.0] * self.chains
        for t in self._sq.values():
            t.zero_()
        self._coef.clear()

    def _precondition(self, params: list[torch.Tensor], states: list[dict], chain: int | None) -> None:
        """G of each tensor from its squared-gradient sum (of chain `chain`; None: no chains)."""
        spe = self.schedule.steps_per_epoch
        sq = [s["sq_sum"] if chain is None else s["sq_sum"][chain] for s in states]
        inv_rms = [1 / (math.sqrt(v / spe) + self.eps) for v in sq]
        sizes = [p.numel() // (self.chains or 1) for p in params]
        mean = sum(g * n for g, n in zip(inv_rms, sizes, strict=True)) / sum(sizes)
        for s, g in zip(states, inv_rms, strict=True):
            if chain is None:
                s["precond"] = g / mean
            else:
                s["precond"][chain] = g / mean

    def state_dict(self) -> dict:
        self._sync_sq_sums()
        sd = super().state_dict()
        sd["sampler"] = {"generator": self.generator.get_state(), "step_count": self.step_count}
        return sd

    def load_state_dict(self, state_dict: dict) -> None:
        state_dict = dict(state_dict)
        extra = state_dict.pop("sampler")
        super().load_state_dict(state_dict)
        try:
            self.generator.set_state(extra["generator"])
        except RuntimeError as e:
            raise RuntimeError(f"the sampler's noise generator state does not fit a {self.device.type} "
                               "generator: a checkpoint of a chain on another kind of device cannot be "
                               "resumed here") from e
        self.step_count = extra["step_count"]
        self._sq = {p: torch.tensor(self.state[p]["sq_sum"], dtype=torch.float64, device=p.device)
                    for p in self._params() if p in self.state}
        self._coef.clear()

    def load_single_chain(self, state_dict: dict) -> None:
        """Chain mode: start every chain from one single-chain sampler's state (of the network that
        was stacked): the same preconditioner, momentum, noise generator and step count."""
        if self.chains is None:
            raise ValueError("load_single_chain is for a sampler in chain mode (a list of temperatures)")
        state_dict = dict(state_dict)
        extra = state_dict.pop("sampler")
        params = self._params()
        saved = state_dict["state"]
        for i, p in enumerate(params):
            if i not in saved:
                continue
            st = dict(saved[i])
            st["precond"], st["sq_sum"] = [st["precond"]] * self.chains, [st["sq_sum"]] * self.chains
            if "velocity" in st:
                st["velocity"] = st["velocity"].to(p.device, p.dtype).unsqueeze(0).expand_as(p).clone()
            self.state[p] = st
        self.generator.set_state(extra["generator"])
        self.step_count = extra["step_count"]
        self._sq = {p: torch.tensor(self.state[p]["sq_sum"], dtype=torch.float64, device=p.device)
                    for p in params if p in self.state}
        self._coef.clear()
