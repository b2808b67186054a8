"""The cold posterior effect (CPE): Noci et al. (NeurIPS 2021) and Bachmann et al. (ICML 2022),
in the SG-MCMC setup of Wenzel et al. (2020).

One job samples one *condition* for one seed at every temperature of the config. A condition
is named by what defines its posterior:

    chain_model-{plain|inv}_augmentation-{none|crop_flip|d4}_n_augs-{K|none}_prior-{scale}_
        temper-{posterior|likelihood|prior}_curation-{annotators}

(one name, e.g. chain_model-plain_augmentation-crop_flip_n_augs-none_prior-1.0_temper-posterior_curation-0).
`inv` wraps the network in a D4 group average; `n_augs` fixes the views K per image (view 0 is the
image itself; none = fresh augmentations every step); `prior` is the std of the Gaussian prior
on conv and linear weights; the tempering mode (`temper`) says what T tempers:

    posterior   p(D|theta)^(1/T) p(theta)^(1/T)   (Wenzel et al.; sampler temperature T)
    likelihood  p(D|theta)^(1/T) p(theta)          (= posterior tempering with prior^T)
    prior       p(D|theta) p(theta)^(1/T)          (sampler temperature 1, prior weight 1/T)

`curation-{S}`: training labels kept only where S simulated annotators agree (0 = CIFAR labels).
The likelihood of a batch of augmented views is their mean NLL times n, with n = N images
(`n_convention: n`) or N*K views (`nK`, finite K only). All temperatures of a job share one
burn-in (temperature factor 0, i.e. momentum SGD to the MAP) up to `ramp_start`; each then
branches from the same state with the same data order and noise draws (paired across T).
T = 0 (the `sgd_baseline`) continues the burn-in without noise: SGD/MAP. The branches run as one
batched computation: the burn-in network copied once per temperature into a
`replikit.models.chains.ChainStack`, sampled by one SG-MCMC optimizer in chain mode, so a step
advances every temperature on the same batch with one set of kernel launches.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from replikit.core.io import torch_save
from replikit.core.seeding import derive_seed, seed_everything
from replikit.core.training import LoopConfig, Stopwatch, load_checkpoint, steps_per_epoch, train_loop
from replikit.data import augment as aug
from replikit.data.datasets import size_errors
from replikit.data.prepare import data_identity, load_prepared, require_count, select_subset
from replikit.methods.posterior import Ensemble, gaussian_prior_energy, prior_parameters
from replikit.methods.samplers import SGMCMC, Schedule
from replikit.models.chains import ChainStack
from replikit.models.convnet import ConvNet
from replikit.models.invariant import GROUP_SIZE, Canonicalize, GroupAverage, d4_batch
from replikit.models.resnet20 import ResNet20
from replikit.papers import unique_runs
from replikit.papers.dataset_setting import dataset_errors, run_dataset
from replikit.papers.interface import OMITTED_AT_DEFAULT, Job, Runs, Stage, dataset_files
from replikit.papers.interface import Run as NamedRun
from replikit.reporting.provenance import run_fingerprint

PAPER = "cold_posterior"
RESULTS = "results/cold_posterior"
AUGMENTATIONS = ("none", "crop_flip", "d4")
TEMPERING = ("posterior", "likelihood", "prior")
DATASET = "cifar10"  # the paper's; runs on another (config key `dataset`) carry it in their names


@dataclass(frozen=True)
class RunSpec(NamedRun):
    """One posterior (up to its temperature): model, augmentation, K views, prior, tempering, curation,
    e.g. chain_model-inv_augmentation-d4_n_augs-4_prior-1.0_temper-posterior_curation-0, and the dataset
    where it is not the paper's (None: CIFAR-10; left out of the name then)."""

    kind: ClassVar[str] = "chain"
    model: str = "plain"
    augmentation: str = "crop_flip"
    n_augs: int | None = None  # None = fresh augmentations every step
    prior: float = 1.0
    temper: str = "posterior"
    curation: int = 0
    dataset: str | None = field(default=None, metadata=OMITTED_AT_DEFAULT)

    @property
    def data(self) -> str:
        """The dataset the chain samples on."""
        return self.dataset or DATASET

    def __post_init__(self) -> None:
        if self.model not in ("plain", "inv") or self.augmentation not in AUGMENTATIONS \
                or self.temper not in TEMPERING:
            raise ValueError(f"bad cold-posterior run: {self}")
        if self.augmentation == "none" and self.n_augs is not None:
            raise ValueError("K fixed views need an augmentation")
        if self.augmentation == "d4" and self.n_augs is not None and self.n_augs > GROUP_SIZE:
            raise ValueError(f"cold_posterior.invariance.n_augs: K={self.n_augs} views of the D4 group "
                             f"would repeat elements (it has {GROUP_SIZE}); use K <= {GROUP_SIZE}")
        if not math.isfinite(self.prior) or self.prior <= 0 or self.curation < 0 \
                or (self.n_augs is not None and self.n_augs < 1):
            raise ValueError(f"bad prior scale, curation or K in {self}")
        if self.dataset == DATASET:
            raise ValueError(f"runs on {DATASET}, the paper's dataset, are named without it (dataset=None)")


# Config keys that change what a chain computes; experiment lists and resources are left out, so
# editing them never re-samples existing conditions.
TRAINING_KEYS = ("dataset", "n_train", "n_test", "image_size", "subset_seed", "model", "sampler",
                 "batch_size", "epochs", "cycle_epochs", "ramp_start", "sample_start",
                 "samples_per_cycle", "temperatures", "sgd_baseline", "n_convention",
                 "checkpoint_every", "annotator_noise", "curated_size")


def training_config(cfg: dict) -> dict:
    """The part of the paper's config that defines a chain."""
    return {k: cfg[k] for k in TRAINING_KEYS}


def branch_temperatures(cfg: dict) -> list[float]:
    """Temperatures each job samples, coldest last; 0 (SGD/MAP) first when `sgd_baseline`."""
    temps = sorted({float(t) for t in cfg["temperatures"]}, reverse=True)
    if 1.0 not in temps:
        raise ValueError(f"cold_posterior.temperatures must contain 1 (the Bayes posterior): {temps}")
    return ([0.0] if cfg["sgd_baseline"] else []) + temps


def experiment_runs(cfg: dict) -> dict[str, list[RunSpec]]:
    """The conditions each figure needs. Shared conditions (e.g. the main augmented run at the
    main prior scale) have one name, so they are sampled once. The prior figure also tempers the
    prior and the likelihood apart without augmentation (CPE-7's falsifier)."""
    main_aug, prior, ds = cfg["augmentation"], float(cfg["prior_scale"]), run_dataset(cfg, DATASET)
    sweep = [RunSpec("plain", a, None, prior, dataset=ds) for a in cfg["temperature_sweep"]["augmentations"]]
    curation = [RunSpec("plain", "none", None, prior, curation=int(s), dataset=ds)
                for s in cfg["curation"]["annotators"]]
    scales = [RunSpec("plain", main_aug, None, float(s), dataset=ds) for s in cfg["prior"]["scales"]]
    scales += [RunSpec("plain", main_aug, None, prior, dataset=ds)]
    modes = [RunSpec("plain", main_aug, None, prior, temper=t, dataset=ds) for t in cfg["prior"]["tempering"]]
    if main_aug != "none" and modes:  # CPE-7's falsifier: the same tempering without augmentation
        modes += [RunSpec("plain", "none", None, prior, temper=t, dataset=ds)
                  for t in cfg["prior"]["tempering"]]
        modes += [RunSpec("plain", "none", None, prior, dataset=ds)]  # its whole-posterior reference
    inv = [RunSpec(m, "d4", int(k), prior, dataset=ds) for m in cfg["invariance"]["models"]
           for k in cfg["invariance"]["n_augs"]]
    return {"temperature_sweep": sweep, "curation": curation, "prior": scales + modes, "invariance": inv}


def all_runs(cfg: dict) -> list[RunSpec]:
    return unique_runs(experiment_runs(cfg))


# ---------------------------------------------------------------- data


def validation_mask(n: int, seed: int) -> torch.Tensor:
    """A fixed half of the held-out images (True) on which temperatures are selected; the other
    half judges them, so no claim selects and scores on the same images."""
    order = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    mask = torch.zeros(n, dtype=torch.bool)
    mask[order[: n // 2]] = True
    return mask


def d4_view_elements(seed: int, idx: torch.Tensor, view: torch.Tensor) -> torch.Tensor:
    """D4 element of view `view` (< 8) of image `idx`: view 0 is the identity, views 1..7 a fixed
    per-image permutation of the 7 other elements, so K <= 8 views are K distinct elements."""
    u = aug.hashed_uniforms(seed, idx, GROUP_SIZE - 1)
    perm = 1 + u.argsort(dim=1)  # (n, 7): a random order of the elements 1..7
    pick = perm.gather(1, (view.long() - 1).clamp(min=0).view(-1, 1)).view(-1)
    return torch.where(view == 0, 0, pick)


def channel_stats(dataset: str, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-channel mean and std, shaped (1, C, 1, 1), that normalise the inputs: the dataset record's
    (replikit.data.datasets), else those of the training images `x` (in [0, 1]) themselves."""
    from replikit.data import datasets

    record = datasets.get(dataset)
    if record.mean is not None and record.std is not None:
        return tuple(torch.tensor(v).view(1, -1, 1, 1) for v in (record.mean, record.std))
    x = x.float()
    return x.mean(dim=(0, 2, 3)).view(1, -1, 1, 1).cpu(), x.std(dim=(0, 2, 3)).view(1, -1, 1, 1).cpu()


def to_input(images: torch.Tensor, size: int) -> torch.Tensor:
    """uint8 images -> float in [0, 1], average-pooled to `size` x `size` pixels."""
    x = images.float().div(255)
    if x.shape[-1] != size:
        if x.shape[-1] % size:
            raise ValueError(f"image_size {size} must divide the image side {x.shape[-1]}")
        x = F.avg_pool2d(x, x.shape[-1] // size)
    return x


def labeller_probs(x: torch.Tensor, y: torch.Tensor, num_classes: int, steps: int = 100) -> torch.Tensor:
    """p(y|x) of a multinomial logistic regression on 8x8 pixels fitted to (x, y): the noisy
    labelling model the simulated annotators confuse classes with (deterministic, full batch)."""
    feats = F.avg_pool2d(x, x.shape[-1] // 8).flatten(1) if x.shape[-1] > 8 else x.flatten(1)
    feats = (feats - feats.mean(0)) / (feats.std(0) + 1e-6)
    w = torch.zeros(feats.shape[1], num_classes, requires_grad=True)
    b = torch.zeros(num_classes, requires_grad=True)
    opt = torch.optim.LBFGS([w, b], lr=1, max_iter=steps, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = F.cross_entropy(feats @ w + b, y) + 1e-3 * w.pow(2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    with torch.no_grad():
        return F.softmax(feats @ w + b, 1)


def curate(y: torch.Tensor, labeller: torch.Tensor, annotators: int, noise: float, n: int,
           seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Simulated curation (Noci et al. Sec. 4): each of `annotators` annotators labels image i from
    (1-noise)*onehot(y_i) + noise*labeller_i; only images where all agree are kept, with the
    consensus label. Returns (indices of n kept images, their labels)."""
    g = torch.Generator().manual_seed(derive_seed(seed, "annotators"))
    pi = (1 - noise) * F.one_hot(y, labeller.shape[1]).float() + noise * labeller
    votes = torch.stack([torch.multinomial(pi, 1, generator=g)[:, 0] for _ in range(annotators)])
    agree = (votes == votes[0]).all(0).nonzero()[:, 0]
    if agree.numel() < n:
        raise ValueError(f"curation with {annotators} annotators keeps only {agree.numel()} of "
                         f"{y.numel()} images, fewer than n_train={n}; lower n_train or annotator_noise")
    keep = agree[torch.randperm(agree.numel(), generator=g)[:n]].sort().values
    return keep, votes[0, keep]


# ---------------------------------------------------------------- models


def build_network(cfg: dict, num_classes: int, invariant: bool, in_channels: int = 3) -> nn.Module:
    """The config's network (convnet or resnet20) for images of `in_channels` channels; made
    D4-invariant when `invariant`, by group averaging of the logits (`model.invariant: average`, 8
    forward passes) or by canonicalization (`canonical`, one forward pass)."""
    m = cfg["model"]
    if m["name"] == "convnet":
        net: nn.Module = ConvNet(num_classes=num_classes, width=m["width"], in_channels=in_channels,
                                 batchnorm=m["batchnorm"])
    elif m["name"] == "resnet20":
        net = ResNet20(num_classes=num_classes, width=m["width"], in_channels=in_channels)
    else:
        raise ValueError(f"unknown cold-posterior model {m['name']!r}; choose convnet or resnet20")
    if not invariant:
        return net
    if m["invariant"] == "average":
        return GroupAverage(net)
    return Canonicalize(net, cfg["image_size"])


# ---------------------------------------------------------------- one chain (all temperatures)


class Run:
    """One condition for one seed: data on the device, the network, the sampler, every temperature."""

    def __init__(self, spec: RunSpec, cfg: dict, data: dict, seed: int, device: torch.device) -> None:
        self.spec, self.cfg, self.seed, self.device = spec, cfg, seed, device
        self.num_classes = len(data["classes"])
        self.data_id = data_identity(data)
        require_count("cold_posterior.n_train", cfg["n_train"], data["y_train"].numel())
        require_count("cold_posterior.n_test", cfg["n_test"], data["y_test"].numel(), "test images")
        size = cfg["image_size"]
        if spec.curation:
            x_pool = to_input(data["x_train"], size)
            probs = labeller_probs(x_pool, data["y_train"], self.num_classes)
            idx, y = curate(data["y_train"], probs, spec.curation, cfg["annotator_noise"],
                            cfg["curated_size"] or cfg["n_train"] or data["y_train"].numel(), seed)
            self.x, self.y = x_pool[idx], y
        else:
            idx = select_subset(data["y_train"].numel(), cfg["n_train"], cfg["subset_seed"])
            self.x, self.y = to_input(data["x_train"][idx], size), data["y_train"][idx]
        test = select_subset(data["y_test"].numel(), cfg["n_test"], cfg["subset_seed"] + 1)
        self.x, self.y = self.x.to(device), self.y.to(device)
        self.x_test, self.y_test = to_input(data["x_test"][test], size).to(device), data["y_test"][test]
        self.val_mask = validation_mask(self.y_test.numel(), cfg["subset_seed"] + 2)
        self.mean, self.std = (v.to(device) for v in channel_stats(spec.data, self.x))
        pad = max(1, size // 8)
        self.augment_spec = aug.AugmentSpec(crop="pad", pad=pad, flip=True)
        self.aug_seed = derive_seed(seed, "augment")
        k = spec.n_augs if (cfg["n_convention"] == "nK" and spec.n_augs) else 1
        self.num_data = self.n * k
        self.generator = seed_everything(seed)
        self.model = build_network(cfg, self.num_classes, spec.model == "inv", self.x.shape[1]).to(device)
        self.prior_params = prior_parameters(self.model)

    @property
    def n(self) -> int:
        return self.x.shape[0]

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.mean) / self.std

    def views(self, idx: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """Training inputs for indices `idx` (augmented as the spec says, normalized)."""
        x = self.x[idx.to(self.device)]
        a, k = self.spec.augmentation, self.spec.n_augs
        if a == "none":
            return self.normalize(x)
        if k is None:
            u = aug.random_uniforms(idx.numel(), generator)
            if a == "d4":
                return self.normalize(d4_batch(x, (u[:, 0] * GROUP_SIZE).long().clamp(max=GROUP_SIZE - 1)))
            return self.normalize(aug.augment(x, u, self.augment_spec))
        view = torch.randint(0, k, (idx.numel(),), generator=generator)
        u = aug.hashed_uniforms(self.aug_seed, idx * k + view)
        if a == "d4":
            out = d4_batch(x, d4_view_elements(self.aug_seed, idx, view.to(idx.device)))
        else:
            out = torch.where((view == 0).view(-1, 1, 1, 1).to(self.device), x,
                              aug.augment(x, u, self.augment_spec))
        return self.normalize(out)

    def make_loss(self, prior_weight: float):
        """Per-example potential: mean NLL of the batch + prior_weight * (-log prior) / n."""
        std = self.spec.prior

        def loss(idx: torch.Tensor) -> torch.Tensor:
            nll = F.cross_entropy(self.model(self.views(idx, self.generator)), self.y[idx.to(self.device)])
            return nll + prior_weight * gaussian_prior_energy(self.prior_params, std) / self.num_data

        return loss

    def tempering(self, temperature: float) -> tuple[float, float]:
        """(sampler temperature, prior weight) that sample the spec's tempered posterior at T."""
        if temperature == 0 or self.spec.temper == "posterior":
            return temperature, 1.0
        if self.spec.temper == "likelihood":
            return temperature, temperature
        return 1.0, 1.0 / temperature

    @torch.no_grad()
    def test_probs(self, model: nn.Module | None = None) -> torch.Tensor:
        """Predictive probabilities of the test images under `model` (default: the run's network);
        a chain stack gives them per chain, (C, n_test, classes)."""
        model = model if model is not None else self.model
        model.eval()
        out = [F.softmax(model(self.normalize(self.x_test[s:s + 500])).double(), -1).cpu()
               for s in range(0, self.x_test.shape[0], 500)]
        model.train()
        return torch.cat(out, dim=-2)

    def is_sample_epoch(self, epoch: int) -> bool:
        """Samples: the last `samples_per_cycle` epochs of every cycle from `sample_start` on."""
        c = self.cfg
        return epoch >= c["sample_start"] and (epoch - 1) % c["cycle_epochs"] >= \
            c["cycle_epochs"] - c["samples_per_cycle"]

    def _loop(self, epochs: int) -> LoopConfig:
        return LoopConfig(epochs=epochs, batch_size=self.cfg["batch_size"], eval_every=1,
                          checkpoint_every=self.cfg["checkpoint_every"])

    def make_sampler(self) -> SGMCMC:
        c, s = self.cfg, self.cfg["sampler"]
        schedule = Schedule(steps_per_epoch(self.n, self._loop(1)), c["cycle_epochs"], c["ramp_start"],
                            c["sample_start"])
        return SGMCMC(self.model.parameters(), lr=s["lr"], num_data=self.num_data, method=s["method"],
                      momentum=s["momentum"], precondition=s["precondition"], schedule=schedule,
                      seed=derive_seed(self.seed, "sampler-noise"))

    def train(self, workdir: str | Path, progress: bool = True,
              stopwatch: Stopwatch | None = None) -> dict[float, dict]:
        """Burn in once, then sample every temperature from the burn-in state, all in one batched
        chain stack; returns {temperature: {"metrics", "train_loss", "sample_epochs", ...}}. `workdir`
        holds checkpoints and the finished phases, so a killed job resumes where it stopped and
        collects the same samples; `stopwatch`, when given, is saved with them (its seconds span
        every part of a resumed job)."""
        c, work = self.cfg, Path(workdir)
        clock = stopwatch or Stopwatch()
        work.mkdir(parents=True, exist_ok=True)
        fp = run_fingerprint(self.spec.name, self.seed, training_config(c), self.data_id, module=__name__)
        sampler = self.make_sampler()
        warm_file = work / "burnin_done.pt"
        warm = load_checkpoint(warm_file)
        if warm is None or warm["fingerprint"] != fp:
            train_loop(self.model, sampler, self.make_loss(1.0), self.n, self._loop(c["ramp_start"]),
                       self.generator, None, checkpoint=work / "burnin.ckpt", progress=progress,
                       fingerprint=fp + "burnin", state_objects={"stopwatch": clock})
            warm = copy.deepcopy({"model": self.model.state_dict(), "sampler": sampler.state_dict(),
                                  "generator": self.generator.get_state(), "fingerprint": fp})
            torch_save(warm_file, {**warm, "stopwatch": clock.state_dict()})
        elif "stopwatch" in warm:
            clock.load_state_dict(warm["stopwatch"])
        done = work / "chains_done.pt"
        finished = load_checkpoint(done)
        if finished is not None and finished["fingerprint"] == fp:
            clock.load_state_dict(finished["stopwatch"])
            return finished["result"]
        out = self.sample_chains(branch_temperatures(c), warm, work / "chains.ckpt", fp, progress, clock)
        torch_save(done, {"result": out, "fingerprint": fp, "stopwatch": clock.state_dict()})
        return out

    def chain_stack(self, temperatures: list[float], warm: dict) -> tuple[ChainStack, SGMCMC]:
        """One chain per temperature, each the burn-in network, and their sampler in chain mode
        (each chain with its tempering's sampler temperature, all from the burn-in sampler's state)."""
        self.model.load_state_dict(warm["model"])
        stack = ChainStack([self.model] * len(temperatures))
        s = self.cfg["sampler"]
        sampler = SGMCMC(stack.parameters(), lr=s["lr"], num_data=self.num_data, method=s["method"],
                         momentum=s["momentum"], precondition=s["precondition"],
                         temperature=[self.tempering(t)[0] for t in temperatures],
                         schedule=self.make_sampler().schedule, seed=derive_seed(self.seed, "sampler-noise"))
        sampler.load_single_chain(copy.deepcopy(warm["sampler"]))
        return stack, sampler

    def sample_chains(self, temperatures: list[float], warm: dict, ckpt: Path, fp: str,
                      progress: bool = True, stopwatch: Stopwatch | None = None) -> dict[float, dict]:
        """Every temperature from the burn-in state `warm`, as one chain stack on the same batches."""
        c = self.cfg
        stack, sampler = self.chain_stack(temperatures, warm)
        self.generator.set_state(warm["generator"])
        weights = [self.tempering(t)[1] for t in temperatures]
        ensembles = [Ensemble() for _ in temperatures]
        loss_fn, per_chain = self.make_chain_loss(stack, weights)
        steps = steps_per_epoch(self.n, self._loop(1))

        def evaluate(done: int) -> dict[str, float]:
            epoch = c["ramp_start"] + done
            if done and self.is_sample_epoch(epoch):
                for e, probs in zip(ensembles, self.test_probs(stack), strict=True):
                    e.add(epoch, probs)
            losses = (per_chain / steps).tolist()
            per_chain.zero_()
            return {f"loss_chain{i}": v for i, v in enumerate(losses)} if done else {}

        history = train_loop(stack, sampler, loss_fn, self.n, self._loop(c["epochs"] - c["ramp_start"]),
                             self.generator, evaluate, checkpoint=ckpt, progress=progress,
                             fingerprint=f"{fp}chains{temperatures}",
                             state_objects={**{f"ensemble{i}": e for i, e in enumerate(ensembles)},
                                            **({"stopwatch": stopwatch} if stopwatch else {})})
        out = {}
        for i, (t, ensemble) in enumerate(zip(temperatures, ensembles, strict=True)):
            metrics = ensemble.metrics(self.y_test.cpu(),
                                       splits={"val": self.val_mask, "heldout": ~self.val_mask})
            losses = [h[f"loss_chain{i}"] for h in history if f"loss_chain{i}" in h]
            out[t] = {"metrics": metrics, "train_loss": losses, "sample_epochs": ensemble.epochs,
                      "sampler_temperature": sampler.temperature[i], "prior_weight": weights[i]}
        return out

    def make_chain_loss(self, stack: ChainStack, prior_weights: list[float]):
        """The chains' summed per-example potentials (each chain: mean NLL of the batch + its prior
        weight * (-log prior) / n), and the float64 tensor to which every step adds each chain's own."""
        weights = torch.tensor(prior_weights, device=self.device)
        names = {id(p): n for n, p in self.model.named_parameters()}
        prior = [stack.stacked(names[id(p)]) for p in self.prior_params]
        per_chain = torch.zeros(stack.chains, dtype=torch.float64, device=self.device)
        std, chains = self.spec.prior, stack.chains

        def loss(idx: torch.Tensor) -> torch.Tensor:
            y = self.y[idx.to(self.device)]
            logits = stack(self.views(idx, self.generator))
            nll = F.cross_entropy(logits.flatten(0, 1), y.repeat(chains), reduction="none").view(chains, -1)
            potential = nll.mean(1) + weights * gaussian_prior_energy(prior, std, chains=True) / self.num_data
            per_chain.add_(potential.detach().double())
            return potential.sum()

        return loss, per_chain


def load_run(run: str, seed: int | str, cfg: dict, tensors_path: str, manifest_path: str,
             device: torch.device) -> Run:
    """A Run for a job: parse the run name, load the verified dataset tensors."""
    return Run(RunSpec.parse(run), cfg, load_prepared(tensors_path, manifest_path), int(seed), device)


# ---------------------------------------------------------------- config checks (before any job)


def _first_sample_epoch(c: dict) -> int:
    """The first epoch >= sample_start that is among the last samples_per_cycle of its cycle."""
    e = c["sample_start"]
    while (e - 1) % c["cycle_epochs"] < c["cycle_epochs"] - c["samples_per_cycle"]:
        e += 1
    return e


def config_errors(c: dict) -> list[str]:
    """Sizes the dataset cannot provide; sampling schedules that collect no sample."""
    if unknown := dataset_errors("cold_posterior.dataset", c["dataset"]):
        return unknown
    errors = (size_errors("cold_posterior.n_train", c["n_train"], c["dataset"], "train")
              + size_errors("cold_posterior.curated_size", c["curated_size"], c["dataset"], "train")
              + size_errors("cold_posterior.n_test", c["n_test"], c["dataset"], "test"))
    if c["ramp_start"] > c["sample_start"]:
        errors.append(f"config key 'cold_posterior.ramp_start' ({c['ramp_start']}) is after "
                      f"'cold_posterior.sample_start' ({c['sample_start']}): the temperature ramps in "
                      "from ramp_start and samples are collected from sample_start; "
                      "use ramp_start <= sample_start")
    first = _first_sample_epoch(c)
    if c["epochs"] < first:
        errors.append(f"config key 'cold_posterior.epochs' ({c['epochs']}) ends the chains before the first "
                      f"posterior sample (epoch {first}: sample_start {c['sample_start']}, the last "
                      f"{c['samples_per_cycle']} epoch(s) of each {c['cycle_epochs']}-epoch cycle); "
                      f"use epochs >= {first} or lower ramp_start/sample_start")
    return errors


# ---------------------------------------------------------------- jobs (see papers.interface)

RUN_FILES = {"metrics": f"{RESULTS}/runs/{{run}}/seed{{seed}}/metrics.json"}


def sample_job(job: Job) -> None:
    """Sample one condition (one seed) at every temperature; write the ensemble metrics."""
    run = load_run(job.wildcards["run"], job.wildcards["seed"], job.cfg, job.input["tensors"],
                   job.input["manifest"], job.device)
    clock = Stopwatch()
    results = run.train(job.scratch, stopwatch=clock)
    temperatures = {f"{t:g}": r for t, r in results.items()}
    job.write("metrics", {"spec": run.spec.__dict__, "temperatures": temperatures, "n_train": run.n,
                          "elapsed_s": round(clock.seconds(), 1), "parts": clock.parts,
                          "num_data": run.num_data})


RUNS = Runs(PAPER, RunSpec, experiment_runs, RUN_FILES,
            stages=(Stage("sample", RUN_FILES, sample_job,
                          inputs=lambda cfg, w: dataset_files(RunSpec.parse(w.run).data),
                          config=lambda cfg, w: training_config(cfg),
                          scratch=f"{RESULTS}/checkpoints/{{run}}_seed{{seed}}"),),
            config_errors=config_errors)
