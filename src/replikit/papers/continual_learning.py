"""Graldi et al. (ICML 2025), "The Importance of Being Lazy": feature learning strength, width and
catastrophic forgetting.

A run trains, for one seed, a sweep of networks under the parameterization of
`replikit.models.scaled` on a task stream, either sequentially (SGD, a cosine schedule restarted
at every task, one head per task) or jointly on the union of the tasks. A run sweeps either the
width (at one gamma0) or gamma0 (at one width), so that one job per (run, seed) stays cheap and
every network of a sweep shares the seed's data, permutations and data order. Run names
(`RunSpec`, the regime being the kind of run):

    {seq|joint}_stream-{stream}_mode-{ntp|mup}_width-{width|none}_gamma0-{gamma0|none}

with stream `pmnist{percent of pixels permuted}` (Permuted MNIST) or `splitcifar10` (Split CIFAR-10);
on another dataset (config key `dataset`) `p{percent}{dataset}` or `split{dataset}`, e.g. p100blobs; and
`none` for the swept
parameter (NTP has no gamma0: always `none`), e.g. seq_stream-pmnist100_mode-ntp_width-none_gamma0-none
(an NTP width sweep) or seq_stream-pmnist100_mode-mup_width-128_gamma0-none (a muP gamma0 sweep at
N=128). Runs that several figures need share a name.
"""

from __future__ import annotations

import math
import numbers
import re
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from replikit.core.io import read_json, tensor_digest, write_json
from replikit.core.progress import Progress
from replikit.core.seeding import derive_seed, seed_everything
from replikit.core.training import LoopConfig, load_checkpoint, make_optimizer, train_loop
from replikit.data import datasets
from replikit.data.datasets import class_count, size_errors
from replikit.data.datasets import sizes as full_sizes
from replikit.data.prepare import load_prepared, require_count
from replikit.data.tasks.streams import TaskStream, joint_data, permuted_stream, split_stream
from replikit.models.scaled import Scaling, build_scaled
from replikit.papers import unique_runs
from replikit.papers.interface import Job, Run, Runs, Stage, dataset_files
from replikit.reporting.provenance import run_fingerprint

PAPER = "continual_learning"
# The dataset each stream (config key `stream`) runs on unless config key `dataset` names another:
# the paper's Permuted MNIST and Split CIFAR-10. Their run names stay pmnist{percent} and splitcifar10.
STREAM_DATASETS = {"pmnist": "mnist", "split_cifar10": "cifar10"}
STREAM = re.compile(r"pmnist(?P<mnist>\d{1,3})|p(?P<pct>\d{1,3})(?P<permuted>[a-z][a-z0-9]*)"
                    r"|split(?P<split>[a-z][a-z0-9]*)")
RESULTS = "results/continual_learning"
# Config keys that change what every training run computes (sweep lists are added per run).
TRAINING_KEYS = ("n_tasks", "n_train", "n_test", "epochs", "batch_size", "lr", "base_width", "depth",
                 "pmnist_head", "eval_batch")


def stream_dataset(stream: str, dataset: str | None = None) -> str:
    """The dataset stream kind `stream` (config key `stream`) runs on: `dataset`, else its own."""
    return dataset or STREAM_DATASETS[stream]


def stream_name(stream: str, fraction: float = 1.0, dataset: str | None = None) -> str:
    """The run-name token of a stream: its kind (`pmnist` or `split_cifar10`) on its dataset."""
    ds = stream_dataset(stream, dataset)
    if stream == "split_cifar10":
        return f"split{ds}"
    return f"pmnist{round(fraction * 100)}" if ds == "mnist" else f"p{round(fraction * 100)}{ds}"


@dataclass(frozen=True)
class RunSpec(Run):
    """One (run, seed) job: regime (the kind of run: seq or joint), stream, parameterization; width or
    gamma0 None = swept, e.g. joint_stream-pmnist100_mode-mup_width-128_gamma0-none."""

    kind: str  # the regime: seq (sequential) or joint
    stream: str
    mode: str
    width: int | None = None
    gamma0: float | None = None

    def __post_init__(self) -> None:
        if self.width is None and self.gamma0 is None and self.mode == "mup":
            raise ValueError("a run sweeps either the width or gamma0, not both")
        if self.mode == "ntp" and self.gamma0 is not None:
            raise ValueError("NTP has no gamma0")
        stream = STREAM.fullmatch(str(self.stream))
        width_ok = self.width is None or (isinstance(self.width, numbers.Integral)
                                          and not isinstance(self.width, bool) and self.width >= 0)
        # gamma0 a plain non-negative decimal (no scientific notation), as labels write it ({:g})
        gamma_ok = self.gamma0 is None or (isinstance(self.gamma0, numbers.Real)
                                           and not isinstance(self.gamma0, bool)
                                           and re.fullmatch(r"\d+(\.\d+)?", f"{self.gamma0:g}"))
        if self.kind not in ("seq", "joint") or self.mode not in ("ntp", "mup") or not stream \
                or not width_ok or not gamma_ok:
            raise ValueError(f"not a continual-learning run: {self}")
        if stream["permuted"] == "mnist":
            raise ValueError(f"{self}: Permuted MNIST's runs are named pmnist{stream['pct']}")
        percent = stream["mnist"] or stream["pct"]
        if percent and int(percent) > 100:
            raise ValueError(f"{self}: at most 100% of the pixels can be permuted")

    @property
    def regime(self) -> str:
        return self.kind

    @property
    def split(self) -> bool:
        """A split stream (two classes per task), not a permuted one."""
        return self.stream.startswith("split")

    @property
    def dataset(self) -> str:
        m = STREAM.fullmatch(self.stream)
        return "mnist" if m["mnist"] else m["permuted"] or m["split"]

    @property
    def permuted_fraction(self) -> float | None:
        m = STREAM.fullmatch(self.stream)
        return None if self.split else int(m["mnist"] or m["pct"]) / 100

    def items(self, cfg: dict) -> list[Scaling]:
        """The networks this run trains, from its config (`widths` / `gammas` for sweeps)."""
        n0 = cfg["base_width"]
        if self.width is None:
            g = 1.0 if self.gamma0 is None else self.gamma0
            return [Scaling(self.mode, int(w), g, n0) for w in cfg["widths"]]
        if self.mode == "ntp":
            return [Scaling("ntp", self.width, 1.0, n0)]
        if self.gamma0 is None:
            return [Scaling(self.mode, self.width, float(g), n0) for g in cfg["gammas"]]
        return [Scaling(self.mode, self.width, self.gamma0, n0)]


# ---------------------------------------------------------------- experiments and run configs


def experiment_runs(cfg: dict) -> dict[str, list[RunSpec]]:
    """The runs each figure needs, from the paper's config section."""
    main = stream_name(cfg["stream"], cfg["permuted_fraction"], cfg.get("dataset"))
    ws, gs = cfg["width_sweep"], cfg["gamma_sweep"]
    width = [RunSpec("seq", main, "ntp"), RunSpec("seq", main, "mup", gamma0=float(ws["gamma0"]))]
    gamma = [RunSpec("seq", main, "mup", int(w)) for w in gs["widths"]]
    similarity = [RunSpec("seq", stream_name("pmnist", p, cfg.get("dataset")), "mup", int(cfg["main_width"]))
                  for p in cfg["similarity"]["permuted_fractions"]]
    joint = [RunSpec("seq", main, "mup", int(cfg["main_width"])),
             RunSpec("joint", main, "mup", int(cfg["main_width"]))]
    return {"forgetting_vs_width": width, "forgetting_vs_gamma": gamma, "similarity": similarity,
            "joint_vs_sequential": joint}


def all_runs(cfg: dict) -> list[RunSpec]:
    return unique_runs(experiment_runs(cfg))


def run_config(cfg: dict, run: str) -> dict:
    """What one run computes: the training keys plus only the sweep list it uses."""
    spec = RunSpec.parse(run)
    out = {k: cfg[k] for k in TRAINING_KEYS}
    if spec.width is None:
        out["widths"] = list(cfg["width_sweep"]["widths"])
    elif spec.gamma0 is None and spec.mode == "mup":
        out["gammas"] = list(cfg["gamma_sweep"]["gammas"])
    return out


# ---------------------------------------------------------------- metrics


def cl_metrics(acc: torch.Tensor, loss: torch.Tensor) -> dict[str, float]:
    """LA, CF, CFr, AA on accuracies and the same on losses; acc[j, i] = acc. on task i after task j.

    CF = 1/(T-1) sum_{i<T} [max_{t in [i, T-1]} a_{t,i} - a_{T,i}] (1-indexed); CFr divides each term
    by its max; on losses the best value is the minimum and forgetting = final - best.
    """
    t = acc.shape[0]
    out = {"LA": acc.diag().mean().item(), "AA": acc[-1].mean().item(),
           "LA_loss": loss.diag().mean().item(), "AA_loss": loss[-1].mean().item()}
    if t < 2:
        return {**out, "CF": 0.0, "CFr": 0.0, "CF_loss": 0.0, "CFr_loss": 0.0}
    cf, cfr, cfl, cflr = [], [], [], []
    for i in range(t - 1):
        best = acc[i:t - 1, i].max()
        cf.append(best - acc[-1, i])
        cfr.append((best - acc[-1, i]) / best.clamp_min(1e-12))
        best_l = loss[i:t - 1, i].min()
        cfl.append(loss[-1, i] - best_l)
        cflr.append((loss[-1, i] - best_l) / best_l.clamp_min(1e-12))
    mean = lambda v: torch.stack(v).mean().item()  # noqa: E731
    return {**out, "CF": mean(cf), "CFr": mean(cfr), "CF_loss": mean(cfl), "CFr_loss": mean(cflr)}


# ---------------------------------------------------------------- training


def check_counts(spec: RunSpec, cfg: dict, data: dict) -> None:
    """n_train / n_test may not exceed the images of a task (an error, never a silent clamp)."""
    for split in ("train", "test"):
        y = data[f"y_{split}"]
        available = y.numel() if not spec.split else \
            min(int(((y == 2 * t) | (y == 2 * t + 1)).sum()) for t in range(cfg["n_tasks"]))
        require_count(f"continual_learning.n_{split}", cfg[f"n_{split}"], available,
                      f"{split} images per task")


def build_stream(spec: RunSpec, cfg: dict, data: dict, seed: int, device: torch.device) -> TaskStream:
    check_counts(spec, cfg, data)
    ds = datasets.get(spec.dataset)  # its record's normalisation (None: the training images' own)
    if spec.split:
        return split_stream(data, cfg["n_tasks"], cfg["n_train"], cfg["n_test"], seed, device, spec.stream,
                            ds.mean, ds.std)
    return permuted_stream(data, cfg["n_tasks"], spec.permuted_fraction, cfg["n_train"], cfg["n_test"],
                           seed, device, cfg["pmnist_head"] == "shared", spec.stream, ds.mean, ds.std)


def build_model(stream: TaskStream, scaling: Scaling, cfg: dict, seed: int,
                device: torch.device) -> torch.nn.Module:
    """The seed's network at this width (same init for every mode and gamma0 at that width)."""
    kind = "rescnn" if stream.name.startswith("split") else "mlp"
    g = torch.Generator().manual_seed(derive_seed(seed, "init", kind, scaling.width))
    return build_scaled(kind, stream.input_shape, scaling, stream.n_heads, stream.n_out, cfg["depth"],
                        g).to(device)


def fit(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, task: int | torch.Tensor, lr: float,
        cfg: dict, generator: torch.Generator) -> None:
    """Plain SGD (no momentum, no weight decay) with a cosine schedule from lr to 0 over this fit."""
    opt = make_optimizer("sgd", model.parameters(), lr, weight_decay=0.0, momentum=0.0)
    loop = LoopConfig(epochs=cfg["epochs"], batch_size=cfg["batch_size"], drop_last=False)
    total = cfg["epochs"] * math.ceil(x.shape[0] / min(cfg["batch_size"], x.shape[0]))

    def loss_fn(idx: torch.Tensor) -> torch.Tensor:
        idx = idx.to(x.device)
        return F.cross_entropy(model(x[idx], task if isinstance(task, int) else task[idx]), y[idx])

    def cosine(step: int) -> None:
        for group in opt.param_groups:
            group["lr"] = lr * 0.5 * (1 + math.cos(math.pi * step / total))

    train_loop(model, opt, loss_fn, x.shape[0], loop, generator, progress=False, before_step=cosine)


@torch.no_grad()
def evaluate(model: torch.nn.Module, stream: TaskStream, batch: int) -> tuple[list[float], list[float]]:
    """Test accuracy and mean cross-entropy on every task of the stream (through its own head)."""
    model.eval()
    accs, losses = [], []
    for i, (x, y) in enumerate(zip(stream.x_test, stream.y_test, strict=True)):
        correct, total_loss = 0.0, 0.0
        for s in range(0, x.shape[0], batch):
            out = model(x[s:s + batch], stream.head(i))
            correct += (out.argmax(1) == y[s:s + batch]).sum().item()
            total_loss += F.cross_entropy(out, y[s:s + batch], reduction="sum").item()
        accs.append(correct / x.shape[0])
        losses.append(total_loss / x.shape[0])
    model.train()
    return accs, losses


def relative_movement(model: torch.nn.Module, init: torch.Tensor) -> float:
    """||W0 - W0(init)|| / ||W0(init)|| of the first layer (feature-learning strength)."""
    w = model.first_layer.detach()
    return ((w - init).norm() / init.norm()).item()


def train_item(spec: RunSpec, scaling: Scaling, stream: TaskStream, cfg: dict, seed: int,
               device: torch.device) -> dict:
    """Train one network of a sweep, sequentially or jointly; return its metrics."""
    model = build_model(stream, scaling, cfg, seed, device)
    init = model.first_layer.detach().clone()
    generator = seed_everything(derive_seed(seed, "order"))
    lr = scaling.lr(cfg["lr"])
    item = {"mode": scaling.mode, "width": scaling.width, "gamma0": scaling.gamma0,
            "gamma_eff": scaling.effective_gamma0, "lr": lr, "regime": spec.regime,
            "stream": stream.name, "permuted_fraction": spec.permuted_fraction}
    if spec.regime == "joint":
        x, y, t = joint_data(stream)
        fit(model, x, y, stream.head(t), lr, cfg, generator)
        acc, loss = evaluate(model, stream, cfg["eval_batch"])
        return {**item, "acc_final": acc, "loss_final": loss, "AA": sum(acc) / len(acc),
                "AA_loss": sum(loss) / len(loss), "movement": relative_movement(model, init)}
    acc, loss = torch.zeros(stream.n_tasks, stream.n_tasks), torch.zeros(stream.n_tasks, stream.n_tasks)
    for j in range(stream.n_tasks):
        fit(model, stream.x_train[j], stream.y_train[j], stream.head(j), lr, cfg, generator)
        a, lo = evaluate(model, stream, cfg["eval_batch"])
        acc[j], loss[j] = torch.tensor(a), torch.tensor(lo)
    return {**item, "acc": acc.tolist(), "loss": loss.tolist(), **cl_metrics(acc, loss),
            "movement": relative_movement(model, init)}


def run_sweep(spec: RunSpec, cfg: dict, data: dict, seed: int, device: torch.device,
              checkpoint: str | Path | None = None) -> list[dict]:
    """Train every network of the run; after each one, save progress so a restart resumes there."""
    stream = build_stream(spec, cfg, data, seed, device)
    data_id = tensor_digest(*stream.x_train, *stream.y_train, *stream.x_test, *stream.y_test)
    fingerprint = run_fingerprint(spec.name, seed, cfg, data_id, module=__name__)
    ckpt = Path(checkpoint) if checkpoint else None
    done: list[dict] = []
    state = load_checkpoint(ckpt, read_json)
    if state is not None and state.get("fingerprint") == fingerprint:
        done = state["items"]
        print(f"resumed {spec.name} seed {seed} after {len(done)} networks")
    items = spec.items(cfg)
    report = Progress("network", len(items), len(done))
    for scaling in items[len(done):]:
        done.append(train_item(spec, scaling, stream, cfg, seed, device))
        report.update(len(done), mode=scaling.mode, width=scaling.width, gamma0=scaling.gamma0,
                      AA=done[-1]["AA"])
        if ckpt is not None:
            write_json(ckpt, {"fingerprint": fingerprint, "items": done})
    return done


# ---------------------------------------------------------------- config checks (before any job)


def config_errors(c: dict) -> list[str]:
    """Sizes the datasets cannot provide; sweep values that run names cannot hold."""
    if c.get("dataset") is not None and c["dataset"] not in datasets.names():
        return [f"config key 'continual_learning.dataset' is {c['dataset']!r}, not a registered dataset; "
                f"use one of {', '.join(datasets.names())} (docs/data.md: how to add one)"]
    similar = stream_dataset("pmnist", c.get("dataset"))
    errors = (size_errors("continual_learning.n_train", c["n_train"], similar, "train")
              + size_errors("continual_learning.n_test", c["n_test"], similar, "test"))
    if c["stream"] == "split_cifar10":
        ds = stream_dataset("split_cifar10", c.get("dataset"))
        tasks = class_count(ds) // 2
        if c["n_tasks"] > tasks:
            errors.append(f"config key 'continual_learning.n_tasks' is {c['n_tasks']} but the split "
                          f"stream of {datasets.get(ds).title} has {tasks} two-class tasks; use n_tasks <= "
                          f"{tasks}")
        train, test = (n * 2 // class_count(ds) for n in full_sizes(ds))  # two classes per task
        errors += size_errors("continual_learning.n_train", c["n_train"], ds, "train", train)
        errors += size_errors("continual_learning.n_test", c["n_test"], ds, "test", test)
    fractions = [("continual_learning.similarity.permuted_fractions", p)
                 for p in c["similarity"]["permuted_fractions"]]
    if c["stream"] == "pmnist":
        fractions.append(("continual_learning.permuted_fraction", c["permuted_fraction"]))
    for key, p in fractions:
        used = RunSpec("seq", stream_name("pmnist", p), "ntp").permuted_fraction
        if used != p:
            errors.append(f"config key '{key}': {p} is not a whole percentage of the pixels (run names "
                          f"hold whole percents, so it would run as {used}); use e.g. {used}")
    steps = np.diff(np.log10(sorted(c["gamma_sweep"]["gammas"])))
    if steps.size and c["cl5_tolerance"] >= steps.min():
        errors.append(f"config key 'continual_learning.cl5_tolerance' is {c['cl5_tolerance']} decades, "
                      f"not smaller than the smallest gamma0 grid step ({steps.min():.3f} decades), so an "
                      "optimum that moves one grid step could pass CL-5; use a smaller margin")
    gammas = [("continual_learning.gamma_sweep.gammas", g) for g in c["gamma_sweep"]["gammas"]]
    for key, g in gammas + [("continual_learning.width_sweep.gamma0", c["width_sweep"]["gamma0"])]:
        text = f"{g:g}"
        if "e" in text or float(text) != g:
            errors.append(f"config key '{key}': gamma0 {g} is not a plain decimal of at most 6 significant "
                          "digits between 0.0001 and 999999, as the figures, claims and runs label gamma0 "
                          f"('{text}'; two values could share a label); use such a value (e.g. 0.0001)")
    return errors


# ---------------------------------------------------------------- jobs (see papers.interface)

RUN_FILES = {"metrics": f"{RESULTS}/runs/{{run}}/seed{{seed}}/metrics.json"}


def main_dataset(cfg: dict) -> str:
    return stream_dataset(cfg["stream"], cfg.get("dataset"))


def shown_settings(cfg: dict) -> dict:
    """The config block as its deviations from the paper's name it: config key `stream` on a dataset
    other than the stream's own reads by that dataset ("permuted blobs", "split blobs"), not as the
    paper's Permuted MNIST or Split CIFAR-10 (issue 86); on its own dataset it reads as configured."""
    stream = cfg.get("stream")
    if stream not in STREAM_DATASETS or stream_dataset(stream, cfg.get("dataset")) == STREAM_DATASETS[stream]:
        return cfg
    kind = "split" if stream == "split_cifar10" else "permuted"
    return {**cfg, "stream": f"{kind} {cfg['dataset']}"}


def train_job(job: Job) -> None:
    """Train one run (a width or gamma0 sweep of one seed) and write its metrics."""
    spec, seed = RunSpec.parse(job.wildcards["run"]), int(job.wildcards["seed"])
    data = load_prepared(job.input["tensors"], job.input["manifest"])
    start = time.time()
    items = run_sweep(spec, job.cfg, data, seed, job.device, checkpoint=job.scratch)
    job.write("metrics", {"items": items, "elapsed_s": round(time.time() - start, 1)})


RUNS = Runs(
    PAPER, RunSpec, experiment_runs, RUN_FILES,
    stages=(Stage("train", RUN_FILES, train_job,
                  inputs=lambda cfg, w: dataset_files(RunSpec.parse(w.run).dataset),
                  config=lambda cfg, w: run_config(cfg, w.run),
                  scratch=f"{RESULTS}/checkpoints/{{run}}_seed{{seed}}.json"),),
    config_errors=config_errors)
