"""Bordelon, Noci, Li, Hanin, Pehlevan (ICLR 2024), "Depthwise Hyperparameter Transfer in Residual
Networks: Dynamics and Scaling Limit" (arXiv 2309.16620).

One kind of run, one job per (run, seed): a learning-rate sweep of one residual network,

    sweep_branch-{sqrtl|one}_depth-{L}_width-{N}[_param-sp][_dataset-{name}]

trained under muP (`replikit.models.scaled`: N(0, 1) weights, 1/sqrt(fan-in) multipliers, a
zero-initialised readout divided by gamma = gamma0 sqrt(N / N0), SGD at eta0 * gamma^2) with its
residual branches multiplied by 1/sqrt(L) (`sqrtl`, the paper's parameterization) or by 1 (`one`, plain
muP). The swept learning rate is eta0, the base rate that muP keeps fixed across widths: the paper's
claim is that its optimum also stays put across depths with the 1/sqrt(L) branches, and moves without
them. The figures show the final training loss against eta0; the claims read the optimum of each
curve. `param-sp` trains the width sweep's two end networks under the standard parameterization (SP,
`sgd_rates`) instead: DT-3's and DT-4's falsifier. `dataset-{name}`: a dataset other than the paper's
CIFAR-10 (config key `dataset`).

Pairing: within a seed every network sees the same training subset and the same batches, and networks
of the same depth and width start from the same weights whatever the branch scale and learning rate,
so differences between runs of a seed are paired comparisons.

This module is the run side (what a training job imports); the figures, the claims and the declaration
(`SPEC`) are in `depthwise_transfer_analysis.py`, as for every paper.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

import torch
import torch.nn.functional as F

from replikit.core.progress import Progress
from replikit.core.seeding import derive_seed, seed_everything
from replikit.data.datasets import size_errors
from replikit.data.prepare import batch_order
from replikit.papers.dataset_setting import dataset_errors, run_dataset
from replikit.papers.interface import OMITTED_AT_DEFAULT, Job, Run, Runs, Stage, dataset_files

if TYPE_CHECKING:
    pass

PAPER = "depthwise_transfer"
RESULTS = f"results/{PAPER}"
BRANCHES = {"sqrtl": "muP + 1/sqrt(L) branches", "one": "muP, unscaled branches"}
# the width parameterization: muP (the paper's), or the standard one (SP), DT-3's and DT-4's falsifier
PARAMS = {"mup": "muP", "sp": "SP"}
RUN_FILES = {"metrics": f"{RESULTS}/runs/{{run}}/seed{{seed}}/metrics.json"}
DATASET = "cifar10"  # the paper's; runs on another (config key `dataset`) carry it in their names
RUN_KEYS = ("model", "base_width", "gamma0", "lrs", "steps", "batch_size", "momentum", "n_train", "n_eval",
            "n_test")


@dataclass(frozen=True)
class Sweep(Run):
    """One learning-rate sweep: branch scale, depth and width, e.g. sweep_branch-sqrtl_depth-4_width-32;
    the parameterization where it is not muP (`param-sp`: the standard one) and the dataset where it is
    not the paper's (None: CIFAR-10), each left out of the name at its default."""

    kind: ClassVar[str] = "sweep"
    branch: str
    depth: int
    width: int
    param: str = field(default="mup", metadata=OMITTED_AT_DEFAULT)
    dataset: str | None = field(default=None, metadata=OMITTED_AT_DEFAULT)

    def __post_init__(self) -> None:
        if self.branch not in BRANCHES or self.depth < 1 or self.width < 1 or self.param not in PARAMS:
            raise ValueError(f"not a depthwise-transfer sweep: branch {self.branch!r} (one of "
                             f"{', '.join(BRANCHES)}), param {self.param!r} (one of {', '.join(PARAMS)}), "
                             f"depth {self.depth}, width {self.width} (at least 1)")
        if self.dataset == DATASET:
            raise ValueError(f"runs on {DATASET}, the paper's dataset, are named without it (dataset=None)")

    @property
    def data(self) -> str:
        """The dataset the sweep trains on."""
        return self.dataset or DATASET


def sweep(branch: str, depth: int, width: int, dataset: str | None = None, param: str = "mup") -> Sweep:
    return Sweep(branch, int(depth), int(width), param, dataset)


def chance_loss(dataset: str) -> float:
    """The loss of the zero-initialised readout (uniform prediction) on `dataset`: a learning rate whose
    run diverged, or ended above it, counts as this loss (it learned nothing)."""
    from replikit.data.datasets import class_count

    return math.log(class_count(dataset))


def experiment_runs(cfg: dict) -> dict[str, list[Sweep]]:
    """The depth sweep at the base width and the width sweep at `width_sweep.depth`, both branch scales."""
    ds = run_dataset(cfg, DATASET)
    by_depth = [sweep(b, d, cfg["base_width"], ds) for b in BRANCHES for d in cfg["depths"]]
    ws = cfg["width_sweep"]
    ends = (min(ws["widths"]), max(ws["widths"]))  # the SP falsifier compares the two ends only
    return {"loss_vs_lr_depth": by_depth,
            "loss_vs_lr_width": [sweep(b, ws["depth"], w, ds) for b in BRANCHES for w in ws["widths"]],
            "optimum_vs_depth": by_depth,
            "loss_vs_lr_width_sp": [sweep(b, ws["depth"], w, ds, "sp") for b in BRANCHES for w in ends]}


def grid_steps(lrs: list[float]) -> list[float]:
    """The spacing of the learning-rate grid in decades."""
    lg = sorted(math.log10(x) for x in lrs)
    return [b - a for a, b in zip(lg, lg[1:], strict=False)]


def config_errors(cfg: dict) -> list[str]:
    """What the schema cannot check: every equivalence margin lies below every grid step (else an
    optimum that moves one grid step could pass DT-1/DT-3/DT-4); the width sweep includes the base
    width's depth."""
    errors, key = [], "depthwise_transfer"
    steps = grid_steps(cfg["lrs"])
    for claim, margin in cfg["margins"].items():
        if steps and margin >= min(steps):
            errors.append(f"config key '{key}.margins.{claim}' is {margin} decades, not smaller than the "
                          f"smallest learning-rate grid step ({min(steps):.3f} decades), so an optimum that "
                          f"moves one grid step could pass {claim}; use a smaller margin (or a finer grid)")
    if len(cfg["lrs"]) < 3:
        errors.append(f"config key '{key}.lrs' needs at least 3 learning rates (an optimum is the vertex of "
                      "a parabola through the best one and its two neighbours)")
    if cfg["n_train"] is not None and cfg["n_eval"] > cfg["n_train"]:
        errors.append(f"config key '{key}.n_eval' ({cfg['n_eval']}) is larger than '{key}.n_train' "
                      f"({cfg['n_train']}): the training loss is measured on training images")
    data = cfg.get("dataset") or DATASET
    if unknown := dataset_errors(f"{key}.dataset", data):
        return errors + unknown
    return (errors + size_errors(f"{key}.n_train", cfg["n_train"], data, "train")
            + size_errors(f"{key}.n_eval", cfg["n_eval"], data, "train")
            + size_errors(f"{key}.n_test", cfg["n_test"], data, "test"))


def run_config(cfg: dict, run: str) -> dict:
    """The keys that define one run (branch, depth and width are in its name)."""
    Sweep.parse(run)
    return {k: cfg[k] for k in RUN_KEYS}


# ---------------------------------------------------------------- one job: a learning-rate sweep


def _images(x: torch.Tensor, mean: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
    return (x.float() / 255 - mean) / std


def prepare(data: dict, cfg: dict, seed: int, device: torch.device) -> dict[str, torch.Tensor]:
    """The seed's training subset (n_train images, standardised per channel with its own statistics), the
    first n_eval of them to measure the training loss on, and the first n_test test images (None: all)."""
    from replikit.data.prepare import require_count, select_subset

    n_total = data["x_train"].shape[0]
    require_count("depthwise_transfer.n_train", cfg["n_train"], n_total)
    idx = select_subset(n_total, cfg["n_train"], seed)
    x = data["x_train"][idx].float() / 255
    mean, std = x.mean(dim=(0, 2, 3), keepdim=True), x.std(dim=(0, 2, 3), keepdim=True)
    x = (x - mean) / std
    n_test = cfg["n_test"] or data["x_test"].shape[0]
    out = {"x": x, "y": data["y_train"][idx], "x_test": _images(data["x_test"][:n_test], mean, std),
           "y_test": data["y_test"][:n_test]}
    out["x_eval"], out["y_eval"] = out["x"][: cfg["n_eval"]], out["y"][: cfg["n_eval"]]
    return {k: v.to(device) for k, v in out.items()}


@torch.no_grad()
def evaluate(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor,
             batch: int = 1000) -> tuple[float, float]:
    losses, correct = 0.0, 0
    for s in range(0, len(x), batch):
        logits = model(x[s:s + batch], 0)
        losses += F.cross_entropy(logits, y[s:s + batch], reduction="sum").item()
        correct += int((logits.argmax(1) == y[s:s + batch]).sum())
    return losses / len(x), correct / len(x)


def build(spec: Sweep, cfg: dict, seed: int, shape: tuple[int, ...], device: torch.device) -> torch.nn.Module:
    """The seed's network: its weights depend on (seed, depth, width) only, not on the branch scale or
    the parameterization. SP is the NTP network (readout divided by 1, not by muP's gamma)."""
    from replikit.data.datasets import class_count
    from replikit.models.scaled import Scaling, build_scaled

    mode = "mup" if spec.param == "mup" else "ntp"
    scaling = Scaling(mode, spec.width, cfg["gamma0"], cfg["base_width"])
    g = torch.Generator().manual_seed(derive_seed(seed, "init", spec.depth, spec.width))
    model = build_scaled(cfg["model"], shape, scaling, 1, class_count(spec.data), spec.depth, g,
                         depth_scaling=spec.branch == "sqrtl")
    return model.to(device)


def fan_in(name: str, p: torch.Tensor) -> int:
    """A weight's fan-in in models.scaled's networks: the readout's last axis (width), every other
    weight's axes after the first (inputs, times 3x3 for a convolution)."""
    return p.shape[-1] if name.startswith("head") else math.prod(p.shape[1:])


def sgd_rates(model: torch.nn.Module, spec: Sweep, eta0: float, base_width: int) -> tuple[list[dict], float]:
    """SGD's parameter groups and its learning rate. muP: eta0 * gamma^2 for every weight. SP: one rate
    eta0 / N0 for every weight of the standard parameterization (weights N(0, 1 / fan-in), no
    multipliers); in this network's form (weights N(0, 1), multiplied by fan-in^-1/2) the same SGD
    gives each weight that rate times its fan-in. With gamma0 = 1 its hidden weights then move at
    muP's rate (eta0 N / N0) at every width; SP differs from muP by its readout (not divided by gamma)
    and by its input layer's rate (eta0 D / N0 for D inputs, against muP's eta0 N / N0)."""
    if spec.param == "mup":
        lr = model.scaling.lr(eta0)
        return [{"params": list(model.parameters()), "lr": lr}], lr
    lr = eta0 / base_width
    return [{"params": [p], "lr": lr * fan_in(n, p)} for n, p in model.named_parameters()], lr


def train_one(spec: Sweep, cfg: dict, d: dict, order: torch.Tensor, eta0: float, seed: int,
              device: torch.device) -> dict:
    """Train one network at base learning rate eta0 (`sgd_rates`: muP's eta0 * gamma^2 or SP's); its
    final losses."""
    model = build(spec, cfg, seed, tuple(d["x"].shape[1:]), device)
    chance = chance_loss(spec.data)
    groups, lr = sgd_rates(model, spec, eta0, cfg["base_width"])
    opt = torch.optim.SGD(groups, lr=lr, momentum=cfg["momentum"])
    for step, idx in enumerate(order, 1):
        loss = F.cross_entropy(model(d["x"][idx], 0), d["y"][idx])
        if not math.isfinite(loss.item()) or loss.item() > 100 * chance:
            return {"lr": eta0, "sgd_lr": lr, "diverged": True, "diverged_at": step, "train_loss": None,
                    "test_loss": None, "test_accuracy": None}
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    train_loss, train_acc = evaluate(model, d["x_eval"], d["y_eval"])
    test_loss, test_acc = evaluate(model, d["x_test"], d["y_test"])
    ok = math.isfinite(train_loss)
    return {"lr": eta0, "sgd_lr": lr, "diverged": not ok, "diverged_at": None,
            "train_loss": train_loss if ok else None, "train_accuracy": train_acc,
            "test_loss": test_loss if math.isfinite(test_loss) else None, "test_accuracy": test_acc}


def run_sweep(spec: Sweep | str, cfg: dict, data: dict, seed: int,
              device: torch.device | str = "cpu") -> dict:
    """Every learning rate of `lrs` for one network and seed, on the same batches: JSON-ready."""
    spec = Sweep.parse(spec) if isinstance(spec, str) else spec
    device = torch.device(device)
    seed_everything(seed, device=device)
    start = time.time()
    d = prepare(data, cfg, seed, device)
    if cfg["model"] == "mlp":
        d = {k: v.flatten(1) if k.startswith("x") else v for k, v in d.items()}
    order = batch_order(len(d["x"]), cfg["batch_size"], cfg["steps"], seed).to(device)
    lrs = sorted(cfg["lrs"])
    report, items = Progress("learning rate", len(lrs)), []
    for k, eta0 in enumerate(lrs, 1):  # one line per network of the sweep
        items.append(train_one(spec, cfg, d, order, float(eta0), seed, device))
        report.update(k, eta0=float(eta0), train_loss=items[-1]["train_loss"],
                      test_accuracy=items[-1].get("test_accuracy"), diverged=items[-1]["diverged"] or None)
    return {"branch": spec.branch, "depth": spec.depth, "width": spec.width, "items": items,
            "elapsed_s": round(time.time() - start, 2)}


def train_job(job: Job) -> None:
    """One (run, seed) job: the learning-rate sweep, written with the run's config and device."""
    from replikit.data.prepare import load_prepared

    data = load_prepared(job.input["tensors"], job.input["manifest"])
    seed = int(job.wildcards["seed"])
    job.write("metrics", run_sweep(job.wildcards["run"], job.cfg, data, seed, job.device))


def run_inputs(cfg: dict, w) -> dict[str, str]:
    """A sweep's prepared dataset: the one its name carries."""
    return dataset_files(Sweep.parse(w.run).data)


RUNS = Runs(PAPER, Sweep, experiment_runs, RUN_FILES,
            stages=(Stage("train", RUN_FILES, train_job, inputs=run_inputs,
                          config=lambda cfg, w: run_config(cfg, w.run)),),
            config_errors=config_errors)


def cost(cfg: dict, run: str):
    """The plan's cost model of one job (`replikit.plan.bill`): steps per learning rate of the sweep (an upper
    bound: a diverged rate stops early), each a plain SGD step on the cross-entropy at the real shapes."""
    from replikit.data.datasets import image_shape, sizes
    from replikit.methods.step_cost import JobPlan, Piece, Setup, fake_module

    spec = Sweep.parse(run)
    n = cfg["n_train"] or sizes(spec.data)[0]
    b = min(cfg["batch_size"], n)
    shape = image_shape(spec.data) if cfg["model"] == "rescnn" else (math.prod(image_shape(spec.data)),)

    def setup() -> Setup:
        model = fake_module(lambda: build(spec, cfg, 0, shape, torch.device("cpu")))
        opt = torch.optim.SGD(model.parameters(), lr=1.0, momentum=cfg["momentum"])
        x, y = torch.empty(n, *shape), torch.zeros(n, dtype=torch.long)

        def loss() -> torch.Tensor:
            idx = torch.randint(0, n, (b,))
            return F.cross_entropy(model(x[idx], 0), y[idx])

        return Setup(model, loss, opt, [x, y])

    key = ("dt", cfg["model"], spec.branch, spec.depth, spec.width, b, n)
    formula = f"{len(cfg['lrs'])} learning rates x {cfg['steps']} steps (a diverged rate stops early)"
    steps = len(cfg["lrs"]) * cfg["steps"]
    return JobPlan([Piece(key, setup, steps)], formula, "depthwise_transfer.batch_size")
