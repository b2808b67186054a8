"""The loss Hessian's top eigenvalue (the sharpness) by power iteration on Hessian-vector products, and
how far a network's hidden features have moved from their initial values.

The Hessian-vector products are double-backward products: the gradient is built once with its graph
(`create_graph=True`), and each product differentiates <gradient, v> once more, so one product costs
about two backward passes and the Hessian is never formed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

Vector = list[torch.Tensor]


def _dot(a: Sequence[torch.Tensor], b: Sequence[torch.Tensor]) -> torch.Tensor:
    return sum((x * y).sum() for x, y in zip(a, b, strict=True))


def _normalized(v: Sequence[torch.Tensor]) -> Vector:
    norm = torch.sqrt(_dot(v, v))
    return [x / norm for x in v]


def hvp_operator(loss: torch.Tensor, params: Sequence[torch.Tensor]) -> Callable[[Vector], Vector]:
    """v -> H v for the Hessian H of `loss` with respect to `params` (which require grad)."""
    grads = torch.autograd.grad(loss, params, create_graph=True)

    def hvp(v: Vector) -> Vector:
        out = torch.autograd.grad(grads, params, grad_outputs=v, retain_graph=True)
        return [o.detach() for o in out]

    return hvp


def _power(hvp: Callable[[Vector], Vector], v: Vector, iters: int, tol: float,
           shift: float = 0.0) -> tuple[float, Vector, int]:
    """Power iteration on H - shift I from v: (its largest-magnitude eigenvalue, the vector, iterations)."""
    v, value = _normalized(v), float("nan")
    for i in range(1, iters + 1):
        w = hvp(v)
        if shift:
            w = [a - shift * b for a, b in zip(w, v, strict=True)]
        new = float(_dot(v, w))
        v = _normalized(w)
        if i > 1 and abs(new - value) <= tol * abs(new):
            return new, v, i
        value = new
    return value, v, iters


def top_eigenvalue(hvp: Callable[[Vector], Vector], start: Vector, iters: int = 20,
                   tol: float = 1e-3) -> tuple[float, Vector, int]:
    """The largest (most positive) eigenvalue of a symmetric operator, by power iteration from `start`
    (e.g. the previous measurement's vector: a warm start); returns (value, vector, products used).

    Power iteration finds the eigenvalue of largest magnitude. When that one is negative, a second
    iteration on H - value I finds the top of the shifted spectrum, top - value >= 0."""
    value, v, used = _power(hvp, start, iters, tol)
    if value < 0:
        shifted, v, more = _power(hvp, start, iters, tol, shift=value)
        value, used = shifted + value, used + more
    return value, v, used


def random_direction(params: Sequence[torch.Tensor], generator: torch.Generator) -> Vector:
    """A random unit vector shaped like `params` (power iteration's first start)."""
    return _normalized([torch.randn(p.shape, generator=generator).to(p.device, p.dtype) for p in params])


def feature_movement(now: torch.Tensor, start: torch.Tensor) -> float:
    """||phi_t - phi_0||_F / ||phi_0||_F: the hidden features' relative movement from initialization."""
    return float((now - start).norm() / start.norm())
