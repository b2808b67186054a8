"""Anagnostidis et al. (ICLR 2023), "The Curious Case of Benign Memorization".

A run trains a network on training images whose labels are (partly) random, with or
without augmentation, and tracks a k-NN probe fitted on the clean training set with
true labels. A run is named by what it trains on:

    train_noise-{fraction}_augmentation-{preset}_n_augs-{K|none}_label_per_view-{true|false}

e.g. train_noise-1.0_augmentation-full_n_augs-none_label_per_view-false. `n_augs` (K) fixes
how many distinct augmentations each image ever gets (none = fresh ones every step);
`label_per_view` gives each of the K augmentations its own random label (the capacity
experiment). Runs that several figures need (e.g. K=none is also "full augmentation")
share one name and so run once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import torch
import torch.nn.functional as F

from replikit.core.device import describe
from replikit.core.io import torch_save, write_json
from replikit.core.seeding import derive_seed, seed_everything
from replikit.core.training import LoopConfig, Stopwatch, make_optimizer, train_loop
from replikit.data import augment as aug
from replikit.data.datasets import size_errors
from replikit.data.prepare import data_identity, load_prepared, require_count, select_subset
from replikit.methods.probes import extract_features, knn_accuracy, knn_predict, to_float
from replikit.models import StagedNet, build_model
from replikit.papers import unique_runs
from replikit.papers.interface import OMITTED_AT_DEFAULT, Job, Runs, Stage, dataset_files
from replikit.papers.interface import Run as NamedRun
from replikit.reporting.provenance import run_fingerprint

PAPER = "benign_memorization"
DATASET = "cifar10"  # the paper's; runs on another (config key `dataset`) carry it in their names


@dataclass(frozen=True)
class RunSpec(NamedRun):
    """What one training run sees: label noise, augmentation, K views, labels per view, and the
    dataset where it is not the paper's (None: CIFAR-10; left out of the name then)."""

    kind: ClassVar[str] = "train"
    noise: float
    augmentation: str
    n_augs: int | None = None  # None = unlimited
    label_per_view: bool = False
    dataset: str | None = field(default=None, metadata=OMITTED_AT_DEFAULT)

    def __post_init__(self) -> None:
        if self.augmentation not in aug.PRESETS or not 0 <= self.noise <= 1:
            raise ValueError(f"not a benign-memorization run: augmentation {self.augmentation!r} (one of "
                             f"{', '.join(aug.PRESETS)}), label noise {self.noise} (from 0 to 1)")
        if self.label_per_view and self.n_augs is None:
            raise ValueError("a label per view needs a finite number of views K")
        if self.augmentation == "none" and self.n_augs is not None:
            raise ValueError("K fixed views need an augmentation")
        if self.dataset == DATASET:
            raise ValueError(f"runs on {DATASET}, the paper's dataset, are named without it (dataset=None)")


# Config keys that change what a training run computes. Experiment lists, resources and the
# main augmentation (which is part of the run name) are left out, so editing them does not
# retrain runs that already exist.
TRAINING_KEYS = ("dataset", "n_train", "subset_seed", "probe_fit_size", "probe_k", "model", "optimizer",
                 "epochs", "batch_size", "eval_every", "checkpoint_every", "eval_views_max")


def training_config(cfg: dict) -> dict:
    """The part of the paper's config that defines a training run (`n_test` only where it is set, so
    that runs made before the key existed keep their parameters)."""
    out = {k: cfg[k] for k in TRAINING_KEYS}
    if cfg.get("n_test") is not None:
        out["n_test"] = cfg["n_test"]
    return out


def _k(v: int | str) -> int | None:
    return None if v == "unlimited" else int(v)


def experiment_runs(cfg: dict) -> dict[str, list[RunSpec]]:
    """The runs each experiment (figure) needs, from the paper's config section."""
    main_aug = cfg["augmentation"]
    ds = None if cfg.get("dataset", DATASET) == DATASET else cfg["dataset"]
    pve = [RunSpec(noise, a, dataset=ds) for noise in cfg["probe_vs_epoch"]["label_noise"]
           for a in cfg["probe_vs_epoch"]["augmentations"]]
    diversity = [RunSpec(1.0, main_aug, _k(k), dataset=ds) for k in cfg["diversity"]["n_augs"]]
    # K=1 with a label per view is the same experiment as K=1 with one label per image.
    capacity = [RunSpec(1.0, main_aug, int(k), label_per_view=int(k) > 1, dataset=ds)
                for k in cfg["capacity"]["n_augs"]]
    return {"probe_vs_epoch": pve, "probe_per_layer": pve,
            "augmentation_diversity": diversity, "capacity": capacity}


def all_runs(cfg: dict) -> list[RunSpec]:
    return unique_runs(experiment_runs(cfg))


# ---------------------------------------------------------------- labels and data


def random_labels(y_true: torch.Tensor, noise: float, num_classes: int, seed: int) -> torch.Tensor:
    """Replace a `noise` fraction of labels by uniform random ones (which may hit the true one)."""
    g = torch.Generator().manual_seed(derive_seed(seed, "labels"))
    n = y_true.numel()
    y = y_true.clone()
    chosen = torch.randperm(n, generator=g)[: int(round(noise * n))]
    y[chosen] = torch.randint(0, num_classes, (chosen.numel(),), generator=g)
    return y


def view_labels(image_labels: torch.Tensor, idx: torch.Tensor, view: torch.Tensor, n_augs: int,
                num_classes: int, seed: int) -> torch.Tensor:
    """Label of augmentation `view` of image `idx`: view 0 keeps the image's label, others are random."""
    u = aug.hashed_uniforms(derive_seed(seed, "view-labels"), idx * n_augs + view, 1)[:, 0]
    other = (u * num_classes).long().clamp(max=num_classes - 1)
    return torch.where(view == 0, image_labels[idx], other.to(image_labels.device))


# ---------------------------------------------------------------- one training run


class Run:
    """Everything one seed of one RunSpec needs: data on the device, model, labels, views."""

    def __init__(self, spec: RunSpec, cfg: dict, data: dict, seed: int, device: torch.device) -> None:
        self.spec, self.cfg, self.seed, self.device = spec, cfg, seed, device
        self.num_classes = len(data["classes"])
        self.data_id = data_identity(data)
        for key in ("n_train", "probe_fit_size"):
            require_count(f"benign_memorization.{key}", cfg[key], data["y_train"].numel())
        idx = select_subset(data["y_train"].numel(), cfg["n_train"], cfg["subset_seed"])
        fit = select_subset(data["y_train"].numel(), cfg["probe_fit_size"], cfg["subset_seed"] + 1)
        self.x = data["x_train"][idx].to(device)  # uint8, converted per batch
        self.y = random_labels(data["y_train"][idx], spec.noise, self.num_classes, seed).to(device)
        self.x_fit, self.y_fit = data["x_train"][fit], data["y_train"][fit]
        require_count("benign_memorization.n_test", cfg.get("n_test"), data["y_test"].numel(), "test images")
        test = select_subset(data["y_test"].numel(), cfg.get("n_test"), cfg["subset_seed"] + 2)
        self.x_test, self.y_test = data["x_test"][test], data["y_test"][test]
        self.augment_spec = aug.PRESETS[spec.augmentation]
        self.aug_seed = derive_seed(seed, "augment")
        self.generator = seed_everything(seed)
        m = cfg["model"]
        self.model = build_model(m["name"], self.num_classes, m["width"], m["projector_width"],
                                 in_channels=self.x.shape[1]).to(device)

    @property
    def n(self) -> int:
        return self.x.shape[0]

    def views(self, idx: torch.Tensor, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """Augmented images and their labels for training-set indices `idx`."""
        x = to_float(self.x[idx.to(self.device)])
        if self.augment_spec.is_identity:
            return x, self.y[idx.to(self.device)]
        k = self.spec.n_augs
        if k is None:
            u = aug.random_uniforms(idx.numel(), generator)
            return aug.augment(x, u, self.augment_spec), self.y[idx.to(self.device)]
        view = torch.randint(0, k, (idx.numel(),), generator=generator)
        return self._fixed_views(x, idx, view)

    def _fixed_views(self, x: torch.Tensor, idx: torch.Tensor, view: torch.Tensor
                     ) -> tuple[torch.Tensor, torch.Tensor]:
        k = self.spec.n_augs
        u = aug.hashed_uniforms(self.aug_seed, idx * k + view)
        if self.spec.label_per_view:
            labels = view_labels(self.y, idx.to(self.device), view.to(self.device), k,
                                 self.num_classes, self.seed)
        else:
            labels = self.y[idx.to(self.device)]
        return aug.augment(x, u, self.augment_spec), labels

    def loss(self, idx: torch.Tensor) -> torch.Tensor:
        x, y = self.views(idx, self.generator)
        return F.mse_loss(self.model(x), F.one_hot(y, self.num_classes).float())

    @torch.no_grad()
    def _accuracy(self, x: torch.Tensor, y: torch.Tensor) -> float:
        self.model.eval()
        correct = 0
        for s in range(0, x.shape[0], 1024):
            correct += (self.model(x[s:s + 1024]).argmax(1) == y[s:s + 1024]).sum().item()
        return correct / x.shape[0]

    def train_accuracy_views(self, epoch: int) -> float:
        """Accuracy on augmented training views against their labels (all fixed views, capped)."""
        g = torch.Generator().manual_seed(derive_seed(self.seed, "eval-views", epoch))
        k = self.spec.n_augs
        if k is None or self.augment_spec.is_identity:
            idx = torch.arange(self.n)
            x, y = self.views(idx, g)
            return self._accuracy(x, y)
        total = self.n * k
        flat = torch.randperm(total, generator=g)[: self.cfg["eval_views_max"]]
        idx, view = flat // k, flat % k
        correct = 0.0
        for s in range(0, flat.numel(), 2048):
            x = to_float(self.x[idx[s:s + 2048].to(self.device)])
            xv, y = self._fixed_views(x, idx[s:s + 2048], view[s:s + 2048])
            correct += self._accuracy(xv, y) * xv.shape[0]
        return correct / flat.numel()

    def probe(self, stages: list[str], model: StagedNet | None = None) -> dict[str, float]:
        """k-NN test accuracy at each stage (probe fitted on clean images with true labels)."""
        model = model or self.model
        fit = extract_features(model, self.x_fit, stages, device=self.device)
        test = extract_features(model, self.x_test, stages, device=self.device)
        return {s: knn_accuracy(fit[s], self.y_fit, test[s], self.y_test, self.cfg["probe_k"])
                for s in stages}

    def evaluate(self, epoch: int) -> dict[str, float]:
        out = {"probe_acc": self.probe(["pooled"])["pooled"],
               "train_acc_views": self.train_accuracy_views(epoch)}
        if not self.spec.label_per_view:
            out["train_acc_clean"] = self._accuracy(to_float(self.x.clone()), self.y)
        return out

    def train(self, checkpoint: str | None = None, progress: bool = True,
              stopwatch: Stopwatch | None = None) -> list[dict[str, float]]:
        """Train; `stopwatch`, when given, is checkpointed with the run (its seconds span every part
        of a resumed run)."""
        c = self.cfg
        opt = make_optimizer(c["optimizer"]["name"], self.model.parameters(), c["optimizer"]["lr"],
                             c["optimizer"]["weight_decay"])
        loop = LoopConfig(epochs=c["epochs"], batch_size=c["batch_size"], eval_every=c["eval_every"],
                          checkpoint_every=c["checkpoint_every"])
        fingerprint = run_fingerprint(self.spec.name, self.seed, c, self.data_id, module=__name__)
        return train_loop(self.model, opt, self.loss, self.n, loop, self.generator, self.evaluate,
                          checkpoint=checkpoint, progress=progress, fingerprint=fingerprint,
                          state_objects={"stopwatch": stopwatch} if stopwatch else None)

    def untrained_model(self) -> StagedNet:
        """The network at initialisation (same seed, same init)."""
        seed_everything(self.seed)
        m = self.cfg["model"]
        return build_model(m["name"], self.num_classes, m["width"], m["projector_width"],
                           in_channels=self.x.shape[1]).to(self.device)

    def layer_report(self) -> dict[str, dict[str, float]]:
        """Per-stage probe accuracy (trained and untrained) and random-label agreement."""
        stages = self.model.stage_names
        report = {"probe_acc": self.probe(stages), "untrained_probe_acc": {}, "random_label_knn": {}}
        report["untrained_probe_acc"] = self.probe(stages, self.untrained_model())
        feats = extract_features(self.model, self.x, stages, device=self.device)
        for s in stages:
            report["random_label_knn"][s] = random_label_agreement(feats[s], self.y.cpu(),
                                                                   self.cfg["probe_k"])
        return report


def load_run(run: str, seed: int | str, cfg: dict, tensors_path: str, manifest_path: str,
             device: torch.device) -> Run:
    """A Run for a job: parse the run name, load the verified dataset tensors."""
    return Run(RunSpec.parse(run), cfg, load_prepared(tensors_path, manifest_path), int(seed), device)


def random_label_agreement(feats: torch.Tensor, labels: torch.Tensor, k: int) -> float:
    """Leave-one-out k-NN accuracy on the training (random) labels: how much a layer memorizes."""
    k = min(k, feats.shape[0] - 1)
    num_classes = int(labels.max()) + 1
    pred = knn_predict(feats, labels, feats, k, num_classes, exclude_self=True)
    return (pred == labels).float().mean().item()


# ---------------------------------------------------------------- config checks (before any job)


def config_errors(c: dict) -> list[str]:
    """A dataset the registry does not know; sizes the dataset cannot provide."""
    from replikit.data import datasets

    if c["dataset"] not in datasets.names():
        return [f"config key 'benign_memorization.dataset' is {c['dataset']!r}, not a registered dataset; "
                f"use one of {', '.join(datasets.names())} (docs/data.md: how to add one)"]
    return (size_errors("benign_memorization.n_train", c["n_train"], c["dataset"], "train")
            + size_errors("benign_memorization.probe_fit_size", c["probe_fit_size"], c["dataset"], "train")
            + size_errors("benign_memorization.n_test", c.get("n_test"), c["dataset"], "test"))


# ---------------------------------------------------------------- jobs (see papers.interface)

RESULTS = "results/benign_memorization"
RUN_FILES = {kind: f"{RESULTS}/runs/{{run}}/seed{{seed}}/{kind}.json" for kind in ("metrics", "layers")}
MODEL_FILE = f"{RESULTS}/runs/{{run}}/seed{{seed}}/model.pt"


def train_job(job: Job) -> None:
    """Train one run (one seed); write its evaluation history and the final model."""
    run = load_run(job.wildcards["run"], job.wildcards["seed"], job.cfg, job.input["tensors"],
                   job.input["manifest"], job.device)
    clock = Stopwatch()
    history = run.train(checkpoint=job.scratch, stopwatch=clock)
    torch_save(job.output["model"], {"state_dict": run.model.state_dict(), "run": run.spec.name,
                                     "seed": run.seed, "model": job.cfg["model"]})
    job.write("metrics", {"spec": run.spec.__dict__, "history": history, "final": history[-1],
                          "elapsed_s": round(clock.seconds(), 1), "parts": clock.parts, "n_train": run.n,
                          "epochs": job.cfg["epochs"]})


def probe_layers_job(job: Job) -> None:
    """k-NN probe of every stage of a trained model (and of its initialisation)."""
    run = load_run(job.wildcards["run"], job.wildcards["seed"], job.cfg, job.input["tensors"],
                   job.input["manifest"], job.device)
    run.model.load_state_dict(torch.load(job.input["model"], map_location=job.device)["state_dict"])
    job.write("layers", {"stages": run.model.stage_names, **run.layer_report()})


def benchmark_loop_job(job: Job) -> None:
    """The shared training loop against a bare forward/backward loop, on this paper's CNN and data."""
    from replikit.methods.benchmark import loop_throughput

    b = job.cfg["benchmark"]
    tensors = load_prepared(job.input["tensors"], job.input["manifest"])
    res = loop_throughput(tensors["x_train"], tensors["y_train"], job.cfg["model"], b["batch_size"],
                          b["steps"], job.device)
    out = {"device": describe(job.device), "threads": torch.get_num_threads(), "model": job.cfg["model"],
           "batch_size": b["batch_size"], "steps": b["steps"], **{k: round(v, 3) for k, v in res.items()}}
    write_json(job.output["benchmark"], out)
    print(out)


def run_inputs(cfg: dict, w) -> dict[str, str]:
    return dataset_files(cfg["dataset"])


RUNS = Runs(PAPER, RunSpec, experiment_runs, RUN_FILES, stages=(
    Stage("train", {"metrics": RUN_FILES["metrics"], "model": MODEL_FILE}, train_job, inputs=run_inputs,
          config=lambda cfg, w: training_config(cfg),
          scratch=f"{RESULTS}/checkpoints/{{run}}_seed{{seed}}.ckpt"),
    Stage("probe_layers", {"layers": RUN_FILES["layers"]}, probe_layers_job,
          inputs=lambda cfg, w: {**run_inputs(cfg, w), "model": MODEL_FILE.format(run=w.run, seed=w.seed)},
          config=lambda cfg, w: training_config(cfg), runtime=60),
    Stage("benchmark_training_loop", {"benchmark": "results/benchmarks/training_loop.json"},
          benchmark_loop_job, inputs=run_inputs,
          config=lambda cfg, w: {"benchmark": cfg["benchmark"], "model": cfg["model"]},
          runtime=30, gpu=False, benchmark=True),
), config_errors=config_errors)
