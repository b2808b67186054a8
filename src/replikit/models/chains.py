"""C copies of one network as one module: every parameter and buffer stacked on a leading chain
dimension, and the forward pass `torch.func.vmap` of the network over that dimension.

All chains see the same input batch, so a step advances every chain with one set of kernel launches
(convolutions of stacked weights become grouped convolutions) instead of C sets: on an accelerator,
where a small network's step is bound by launches rather than FLOPs, that is about C times fewer.
BatchNorm keeps one set of running statistics per chain (its in-place updates run on the stacked
buffers). The output has the chain dimension first: (C, batch, ...).
"""

from __future__ import annotations

import copy

import torch
from torch import nn
from torch.func import functional_call, stack_module_state, vmap


def _key(name: str) -> str:
    """A parameter name of the network as a name this module can register ('.' is not allowed)."""
    return name.replace(".", "__")


class ChainStack(nn.Module):
    """`models` (same architecture, any weights) stacked into one module of len(models) chains."""

    def __init__(self, models: list[nn.Module]) -> None:
        super().__init__()
        if not models:
            raise ValueError("a chain stack needs at least one network")
        params, buffers = stack_module_state(models)
        self.chains = len(models)
        self.param_names, self.buffer_names = list(params), list(buffers)
        for name, value in params.items():
            self.register_parameter(_key(name), nn.Parameter(value.detach().clone()))
        for name, value in buffers.items():
            self.register_buffer(_key(name), value.clone())
        # the architecture without weights (a list: not a submodule, so not in state_dict)
        self._template = [copy.deepcopy(models[0]).to("meta")]
        self.train(models[0].training)

    def train(self, mode: bool = True) -> ChainStack:
        super().train(mode)
        if hasattr(self, "_template"):
            self._template[0].train(mode)
        return self

    def stacked(self, name: str) -> torch.Tensor:
        """The stacked tensor of the network's parameter or buffer `name`: shape (C, *its shape)."""
        return getattr(self, _key(name))

    def chain(self, i: int, into: nn.Module) -> nn.Module:
        """`into` (a network of the same architecture) with chain i's weights and buffers."""
        state = {n: self.stacked(n)[i] for n in self.param_names + self.buffer_names}
        into.load_state_dict(state, strict=False)
        return into

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        params = {n: self.stacked(n) for n in self.param_names}
        buffers = {n: self.stacked(n) for n in self.buffer_names}
        net = self._template[0]

        def one(p: dict, b: dict, inp: torch.Tensor) -> torch.Tensor:
            return functional_call(net, (p, b), (inp,))

        return vmap(one, in_dims=(0, 0, None), randomness="error")(params, buffers, x)
