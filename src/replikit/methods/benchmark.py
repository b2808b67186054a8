"""Throughput of the pipeline's training loop against a bare forward/backward loop."""

from __future__ import annotations

import time

import torch
import torch.nn.functional as F

from replikit.core.seeding import seed_everything
from replikit.core.training import LoopConfig, make_optimizer, train_loop
from replikit.data import augment as aug
from replikit.methods.probes import to_float
from replikit.models import build_model


def _model(model_cfg: dict, num_classes: int, in_channels: int, device: torch.device):
    seed_everything(0)
    m = build_model(model_cfg["name"], num_classes, model_cfg["width"], model_cfg["projector_width"],
                    in_channels).to(device)
    return m, make_optimizer("adam", m.parameters(), 1e-3)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def loop_throughput(x: torch.Tensor, y: torch.Tensor, model_cfg: dict, batch_size: int, steps: int,
                    device: torch.device, augmentation: str = "full") -> dict[str, float]:
    """Images/s of (a) a bare loop over fixed batches, (b) `train_loop` without and (c) with
    augmentation, all on the same tensors (uint8 `x` on the device). One warm-up step each."""
    num_classes = int(y.max()) + 1
    n = batch_size * steps
    x, y = x[:n].to(device), y[:n].to(device)
    if x.shape[0] < n:
        raise ValueError(f"benchmark needs {n} images, got {x.shape[0]}")
    results = {}

    model, opt = _model(model_cfg, num_classes, x.shape[1], device)
    for warm in (True, False):
        _sync(device)
        t = time.perf_counter()
        for s in range(1 if warm else steps):
            xb = to_float(x[s * batch_size:(s + 1) * batch_size])
            loss = F.mse_loss(model(xb), F.one_hot(y[s * batch_size:(s + 1) * batch_size],
                                                   num_classes).float())
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        _sync(device)
    results["bare_images_per_s"] = n / (time.perf_counter() - t)

    for name, spec in (("loop_no_aug", aug.PRESETS["none"]), (f"loop_{augmentation}_aug",
                                                               aug.PRESETS[augmentation])):
        model, opt = _model(model_cfg, num_classes, x.shape[1], device)
        gen = torch.Generator().manual_seed(0)

        def loss_fn(idx: torch.Tensor, spec=spec, model=model, gen=gen) -> torch.Tensor:
            xb = to_float(x[idx.to(device)])
            if not spec.is_identity:
                xb = aug.augment(xb, aug.random_uniforms(idx.numel(), gen), spec)
            return F.mse_loss(model(xb), F.one_hot(y[idx.to(device)], num_classes).float())

        train_loop(model, opt, loss_fn, batch_size, LoopConfig(1, batch_size), gen, progress=False)
        _sync(device)
        t = time.perf_counter()
        train_loop(model, opt, loss_fn, n, LoopConfig(1, batch_size), gen, progress=False)
        _sync(device)
        results[f"{name}_images_per_s"] = n / (time.perf_counter() - t)
    bare = results["bare_images_per_s"]
    results["ratio_loop_no_aug_to_bare"] = results["loop_no_aug_images_per_s"] / bare
    aug_rate = results[f"loop_{augmentation}_aug_images_per_s"]
    results[f"ratio_loop_{augmentation}_aug_to_bare"] = aug_rate / bare
    return results
