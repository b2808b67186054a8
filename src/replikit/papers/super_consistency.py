"""Noci, Meterez, Hofmann, Orvieto (NeurIPS 2024), "Super Consistency of Neural Network Landscapes and
Learning Rate Transfer" (arXiv 2402.17457): runs and the training job.

One kind of run, one job per (run, seed): every width of one parameterization, trained in turn,

    train_param-{mup|ntk}

Residual MLPs of `replikit.models.scaled` (N(0, 1) weights, 1/sqrt(fan-in) multipliers, residual
branches times 1/sqrt(L), a zero-initialised readout divided by gamma) on flattened images (the
paper's CIFAR-10, or the dataset of config key `dataset`; a run on another carries it in its name),
trained by SGD at eta0 * gamma^2 on the cross-entropy:

- `mup`: gamma = sqrt(N / N0), so the SGD rate grows with the width N (muP, gamma0 = 1);
- `ntk`: gamma = 1, the same SGD rate at every width (the NTK parameterization; replikit calls it
  `ntp`). At the base width N0 the two are the same network and the same rate.

Every `measure_every` steps, and at step 0, on one fixed batch of `hessian_batch` training images:

- the sharpness: the top eigenvalue of the loss Hessian preconditioned by the width-dependent part of
  the learning rate, gamma^2 * lambda_max(H) = (SGD rate / eta0) * lambda_max(H), by power iteration
  on Hessian-vector products (warm-started from the previous measurement's vector). Plain gradient
  descent at eta0 * gamma^2 is stable while it is below 2 / eta0 at every width, so it reads on one
  scale at every width and in both parameterizations (under NTK, gamma = 1: the raw lambda_max);
- feature movement: ||phi_t - phi_0||_F / ||phi_0||_F of the last hidden layer's features;
- the loss on that batch.

Pairing: within a seed, every width sees the same training subset, batches and Hessian batch, and a
network of width N starts from the same weights under both parameterizations.

This module is the run side (what a training job imports); the figures, the claims and the declaration
(`SPEC`) are in `super_consistency_analysis.py`, as for every paper.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import ClassVar

import torch
import torch.nn.functional as F

from replikit.core.progress import Progress
from replikit.core.seeding import derive_seed, seed_everything
from replikit.data.datasets import size_errors
from replikit.data.prepare import batch_order
from replikit.papers.dataset_setting import dataset_errors, run_dataset
from replikit.papers.interface import OMITTED_AT_DEFAULT, Job, Run, Runs, Stage, dataset_files

PAPER = "super_consistency"
RESULTS = f"results/{PAPER}"
PARAMS = {"mup": "muP", "ntk": "NTK"}  # run name -> label
MODES = {"mup": "mup", "ntk": "ntp"}  # run name -> replikit.models.scaled mode
RUN_FILES = {"metrics": f"{RESULTS}/runs/{{run}}/seed{{seed}}/metrics.json"}
DATASET = "cifar10"  # the paper's; runs on another (config key `dataset`) carry it in their names
RUN_KEYS = ("widths", "base_width", "depth", "eta0", "steps", "batch_size", "n_train", "hessian_batch",
            "measure_every", "power_iters")


@dataclass(frozen=True)
class Train(Run):
    """Every width of one parameterization, e.g. train_param-mup, and the dataset where it is not the
    paper's (None: CIFAR-10; left out of the name then)."""

    kind: ClassVar[str] = "train"
    param: str
    dataset: str | None = field(default=None, metadata=OMITTED_AT_DEFAULT)

    def __post_init__(self) -> None:
        if self.param not in PARAMS:
            raise ValueError(f"not a super-consistency run: param {self.param!r} "
                             f"(one of {', '.join(PARAMS)})")
        if self.dataset == DATASET:
            raise ValueError(f"runs on {DATASET}, the paper's dataset, are named without it (dataset=None)")

    @property
    def data(self) -> str:
        """The dataset the run trains on."""
        return self.dataset or DATASET


def experiment_runs(cfg: dict) -> dict[str, list[Train]]:
    """Every figure compares the two parameterizations."""
    both = [Train(p, run_dataset(cfg, DATASET)) for p in PARAMS]
    return {"sharpness_trajectories": both, "sharpness_spread": both, "feature_movement": both}


def config_errors(cfg: dict) -> list[str]:
    """What the schema cannot check: the base width is one of the widths (where the parameterizations
    meet), the Hessian batch fits the training subset, a measurement falls on the last step."""
    errors, key = [], PAPER
    if cfg["base_width"] not in cfg["widths"]:
        errors.append(f"config key '{key}.base_width' ({cfg['base_width']}) is not one of '{key}.widths' "
                      f"{cfg['widths']}: the two parameterizations are the same network at the base width, "
                      "which anchors the comparison; add it to the widths")
    if cfg["n_train"] is not None and cfg["hessian_batch"] > cfg["n_train"]:
        errors.append(f"config key '{key}.hessian_batch' ({cfg['hessian_batch']}) is larger than "
                      f"'{key}.n_train' ({cfg['n_train']}): the sharpness is measured on training images")
    if cfg["steps"] % cfg["measure_every"]:
        errors.append(f"config key '{key}.steps' ({cfg['steps']}) is not a multiple of "
                      f"'{key}.measure_every' ({cfg['measure_every']}): the last step must be measured")
    data = cfg.get("dataset") or DATASET
    return errors + (dataset_errors(f"{key}.dataset", data)
                     or size_errors(f"{key}.n_train", cfg["n_train"], data, "train"))


def run_config(cfg: dict, run: str) -> dict:
    """The keys that define one run (the parameterization is in its name)."""
    Train.parse(run)
    return {k: cfg[k] for k in RUN_KEYS}


# ---------------------------------------------------------------- one job: every width of one param.


def prepare(data: dict, cfg: dict, seed: int, device: torch.device) -> dict[str, torch.Tensor]:
    """The seed's training subset, flattened and standardised per channel with its own statistics, and
    the fixed Hessian batch (its first `hessian_batch` images)."""
    from replikit.data.prepare import require_count, select_subset

    n_total = data["x_train"].shape[0]
    require_count(f"{PAPER}.n_train", cfg["n_train"], n_total)
    idx = select_subset(n_total, cfg["n_train"], seed)
    x = data["x_train"][idx].float() / 255
    mean, std = x.mean(dim=(0, 2, 3), keepdim=True), x.std(dim=(0, 2, 3), keepdim=True)
    x = ((x - mean) / std).flatten(1)
    y = data["y_train"][idx]
    h = cfg["hessian_batch"]
    return {k: v.to(device) for k, v in {"x": x, "y": y, "x_h": x[:h], "y_h": y[:h]}.items()}


def build(param: str, width: int, cfg: dict, seed: int, d_in: int, n_classes: int,
          device: torch.device) -> torch.nn.Module:
    """The seed's network of `width`: its weights depend on (seed, width) only, not on the
    parameterization (which sets the readout's divisor and the learning rate)."""
    from replikit.models.scaled import Scaling, build_scaled

    scaling = Scaling(MODES[param], width, 1.0, cfg["base_width"])
    g = torch.Generator().manual_seed(derive_seed(seed, "init", cfg["depth"], width))
    return build_scaled("mlp", (d_in,), scaling, 1, n_classes, cfg["depth"], g).to(device)


def measure(model: torch.nn.Module, d: dict, start: list[torch.Tensor], iters: int) -> tuple[dict, list]:
    """Sharpness (gamma^2 lambda_max), the loss and the features on the Hessian batch."""
    from replikit.methods.curvature import hvp_operator, top_eigenvalue

    params = [p for p in model.parameters() if p.requires_grad]
    loss = F.cross_entropy(model(d["x_h"], 0), d["y_h"])
    value, vector, used = top_eigenvalue(hvp_operator(loss, params), start, iters)
    return {"loss": float(loss.detach()), "lambda_max": value,
            "sharpness": value * model.scaling.gamma ** 2, "hvps": used}, vector


def train_width(param: str, width: int, cfg: dict, d: dict, n_classes: int, order: torch.Tensor, seed: int,
                device: torch.device) -> dict:
    """One network: SGD at eta0 gamma^2 for `steps`, measured every `measure_every` steps."""
    from replikit.methods.curvature import feature_movement, random_direction

    model = build(param, width, cfg, seed, d["x"].shape[1], n_classes, device)
    lr = model.scaling.lr(cfg["eta0"])
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    with torch.no_grad():
        phi0 = model.features(d["x_h"])
    g = torch.Generator().manual_seed(derive_seed(seed, "power", width))
    vector = random_direction(list(model.parameters()), g)
    points, diverged_at = [], None
    for step in range(cfg["steps"] + 1):
        if step % cfg["measure_every"] == 0:
            point, vector = measure(model, d, vector, cfg["power_iters"])
            with torch.no_grad():
                point["feature_movement"] = feature_movement(model.features(d["x_h"]), phi0)
            points.append({"step": step, **point})
        if step == cfg["steps"]:
            break
        idx = order[step]
        loss = F.cross_entropy(model(d["x"][idx], 0), d["y"][idx])
        if not math.isfinite(loss.item()):
            diverged_at = step
            break
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return {"width": width, "gamma": model.scaling.gamma, "sgd_lr": lr, "diverged_at": diverged_at,
            "points": points}


def run(spec: Train | str, cfg: dict, data: dict, seed: int, device: torch.device | str = "cpu") -> dict:
    """Every width of one parameterization for one seed, on the same batches: JSON-ready."""
    from replikit.data.datasets import class_count

    spec = Train.parse(spec) if isinstance(spec, str) else spec
    device = torch.device(device)
    seed_everything(seed, device=device)
    start = time.time()
    d = prepare(data, cfg, seed, device)
    order = batch_order(len(d["x"]), cfg["batch_size"], cfg["steps"], seed).to(device)
    widths = sorted(cfg["widths"])
    report, items = Progress("width", len(widths)), []
    for k, width in enumerate(widths, 1):  # one progress line per network
        items.append(train_width(spec.param, int(width), cfg, d, class_count(spec.data), order, seed, device))
        last = items[-1]["points"][-1]
        report.update(k, width=width, sharpness=last["sharpness"], loss=last["loss"],
                      feature_movement=last["feature_movement"])
    return {"param": spec.param, "items": items, "elapsed_s": round(time.time() - start, 2)}


def train_job(job: Job) -> None:
    """One (run, seed) job: every width, written with the run's config and device."""
    from replikit.data.prepare import load_prepared

    data = load_prepared(job.input["tensors"], job.input["manifest"])
    seed = int(job.wildcards["seed"])
    job.write("metrics", run(job.wildcards["run"], job.cfg, data, seed, job.device))


def run_inputs(cfg: dict, w) -> dict[str, str]:
    """A run's prepared dataset: the one its name carries."""
    return dataset_files(Train.parse(w.run).data)


RUNS = Runs(PAPER, Train, experiment_runs, RUN_FILES,
            stages=(Stage("train", RUN_FILES, train_job, inputs=run_inputs,
                          config=lambda cfg, w: run_config(cfg, w.run)),),
            config_errors=config_errors)
