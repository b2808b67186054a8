"""The sampler's foreach / device-side implementation is bitwise the per-tensor loop it replaced
(frozen below as of commit 5390c5b) on the CPU, also across a checkpoint and from an old checkpoint."""

import copy
import math

import pytest
import torch
import torch.nn.functional as F

from replikit.methods.samplers import SGMCMC, Schedule
from replikit.papers.cold_posterior import build_network


class FrozenSGMCMC(torch.optim.Optimizer):
    """replikit.methods.samplers.SGMCMC as of commit 5390c5b (per-tensor loop, CPU noise,
    .item() per tensor)."""

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


# ---------------------------------------------------------------- tests


def _setup(opt_cls, seed=0, **kw):
    torch.manual_seed(0)
    model = build_network({"model": {"name": "convnet", "width": 4, "batchnorm": True}}, 10, False)
    opt = opt_cls(model.parameters(), lr=0.05, num_data=100, seed=seed, **kw)
    return model, opt


def _train(model, opt, steps, start=0):
    g = torch.Generator().manual_seed(123)
    batches = [(torch.randn(8, 3, 8, 8, generator=g), torch.randint(0, 10, (8,), generator=g))
               for _ in range(start + steps)][start:]
    for x, y in batches:
        loss = F.cross_entropy(model(x), y) + sum(p.pow(2).sum() for p in model.parameters()) / 200
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()


def _same(a, b):
    for (k, x), y in zip(a.state_dict().items(), b.state_dict().values(), strict=True):
        assert torch.equal(x, y), k


CASES = [
    {"method": "sghmc", "momentum": 0.9, "precondition": True,
     "schedule": Schedule(steps_per_epoch=3, cycle_epochs=2, ramp_start=1, ramp_end=2)},
    {"method": "sghmc", "momentum": 0.9, "precondition": False, "temperature": 0.1},
    {"method": "sgld", "precondition": True, "schedule": Schedule(steps_per_epoch=4)},
    {"method": "sghmc", "momentum": 0.5, "precondition": True, "temperature": 0.0,
     "schedule": Schedule(steps_per_epoch=2)},
]


@pytest.mark.parametrize("kw", CASES)
def test_sampler_is_bitwise_the_frozen_per_tensor_loop(kw):
    torch.set_num_threads(1)
    m_old, o_old = _setup(FrozenSGMCMC, **kw)
    m_new, o_new = _setup(SGMCMC, **kw)
    _train(m_old, o_old, 10)
    _train(m_new, o_new, 10)
    _same(m_old, m_new)
    for p_old, p_new in zip(m_old.parameters(), m_new.parameters(), strict=True):
        s_old, s_new = o_old.state[p_old], o_new.state[p_new]
        assert s_old["precond"] == s_new["precond"]
        if "velocity" in s_old:
            assert torch.equal(s_old["velocity"], s_new["velocity"])
    sd_old, sd_new = o_old.state_dict(), o_new.state_dict()
    assert torch.equal(sd_old["sampler"]["generator"], sd_new["sampler"]["generator"])
    assert [s["sq_sum"] for s in sd_old["state"].values()] == [s["sq_sum"] for s in sd_new["state"].values()]


def test_resume_from_new_and_from_frozen_checkpoints_is_bitwise():
    torch.set_num_threads(1)
    kw = CASES[0]
    m_ref, o_ref = _setup(SGMCMC, **kw)
    _train(m_ref, o_ref, 10)
    for first in (SGMCMC, FrozenSGMCMC):  # a checkpoint written by today's or by the old code
        m_a, o_a = _setup(first, **kw)
        _train(m_a, o_a, 4)  # mid-epoch: squared-gradient sums are part of the state
        state = copy.deepcopy((m_a.state_dict(), o_a.state_dict()))
        m_b, o_b = _setup(SGMCMC, seed=99, **kw)
        m_b.load_state_dict(state[0])
        o_b.load_state_dict(state[1])
        _train(m_b, o_b, 6, start=4)
        _same(m_ref, m_b)


def test_fused_path_of_accelerators_samples_the_same_way():
    """The accelerator path (one noise draw, foreach norms), run on the CPU: same preconditioner
    up to rounding, the same noise scale, and a checkpoint resumes it bitwise."""
    torch.set_num_threads(1)
    kw = CASES[0]
    m_a, o_a = _setup(SGMCMC, **kw)
    m_b, o_b = _setup(SGMCMC, **kw)
    o_b.fused = True
    _train(m_a, o_a, 3)  # the first epoch has no noise (temperature ramp)
    _train(m_b, o_b, 3)
    for p_a, p_b in zip(m_a.parameters(), m_b.parameters(), strict=True):
        assert o_b.state[p_b]["precond"] == pytest.approx(o_a.state[p_a]["precond"], rel=1e-5)
    _train(m_a, o_a, 4, start=3)
    _train(m_b, o_b, 4, start=3)
    diff = torch.cat([(a - b).flatten() for a, b in zip(m_a.parameters(), m_b.parameters(), strict=True)])
    assert 0 < diff.abs().max() < 1  # other noise draws, same scale
    state = copy.deepcopy((m_b.state_dict(), o_b.state_dict()))
    _train(m_b, o_b, 3, start=7)
    m_c, o_c = _setup(SGMCMC, **kw)
    o_c.fused = True
    m_c.load_state_dict(state[0])
    o_c.load_state_dict(state[1])
    _train(m_c, o_c, 3, start=7)
    _same(m_b, m_c)
