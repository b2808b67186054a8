"""What each paper's training job computes, for `replikit.plan`: its pieces (a step at the real
shapes, and how many times it runs), built from the papers' own model builders, optimizers and loss
functions.

The papers' training steps live in `Run` objects that load the prepared data and digest it, which
fake tensors cannot do; so each `_setup` below builds the same model with the same config and runs
the same loss on a batch of the real shape, with the data the job keeps on the device. Evaluation
passes are not counted (training steps only). Steps per job, with `n` training examples:

- benign memorization: epochs * floor(n / batch)  (train_loop drops the last partial batch);
- cold posterior: floor(n / batch) * ramp_start steps of the shared burn-in (one network), then
  floor(n / batch) * (epochs - ramp_start) steps of the chain stack, which advances all T chains at
  once (T = the temperatures, + 1 with sgd_baseline); curation runs train on curated_size images;
- continual learning, per network of the run's sweep: sequential n_tasks * epochs * ceil(n_task /
  batch), joint epochs * ceil(n_tasks * n_task / batch) (the last partial batch is kept);
- latent lookahead: epochs * floor(n_train / batch), n_train from the task's split fractions;
  sequences at the longest prompt and answer the task's generator can make (Sudoku: exact; mazes:
  every cell on the path; ProsQA: the most edges and the deepest target), an upper bound;
- rank collapse: an init run is one forward and backward (no optimizer) per batch, n_batches per depth
  of init.depths; a training run `training.steps` steps.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from . import augment as aug
from .datasets import sizes as full_sizes
from .plan_cost import Builder, Setup, fake_module
from .probes import to_float
from .training import make_optimizer

IMAGE_SHAPES = {"cifar10": (3, 32, 32), "mnist": (1, 28, 28)}
NUM_CLASSES = 10


@dataclass(frozen=True)
class Piece:
    """`steps` steps of the step `build` makes; `key` names its shapes (equal keys, equal cost)."""

    key: tuple
    build: Builder
    steps: int
    bf16: bool = False  # matrix products under bf16 autocast on a GPU


@dataclass(frozen=True)
class JobPlan:
    pieces: list[Piece]
    formula: str  # how the steps were counted
    memory_setting: str  # the config key that lowers the job's peak memory


def _batches(n: int, batch: int, drop_last: bool = True) -> int:
    b = min(batch, n)
    return n // b if drop_last else -(-n // b)


def _sgd_or_adam(name: str, params, lr: float, weight_decay: float = 0.0,
                 momentum: float = 0.9) -> torch.optim.Optimizer:
    return make_optimizer(name, params, lr, weight_decay, momentum)


# ---------------------------------------------------------------- benign memorization


def benign_memorization(cfg: dict, run: str) -> JobPlan:
    from .models import build_model
    from .papers.benign_memorization import RunSpec

    spec = RunSpec.parse(run)
    n = cfg["n_train"] or full_sizes(cfg["dataset"])[0]
    b = min(cfg["batch_size"], n)
    shape = IMAGE_SHAPES[cfg["dataset"]]
    m, o = cfg["model"], cfg["optimizer"]

    def setup() -> Setup:
        """benign_memorization.Run.loss: the run's augmentation of a uint8 batch, MSE on one-hot labels."""
        model = fake_module(lambda: build_model(m["name"], NUM_CLASSES, m["width"], m["projector_width"],
                                                in_channels=shape[0]))
        opt = _sgd_or_adam(o["name"], model.parameters(), o["lr"], o["weight_decay"])
        x, y = torch.empty(n, *shape, dtype=torch.uint8), torch.zeros(n, dtype=torch.long)
        preset = aug.PRESETS[spec.augmentation]

        def loss() -> torch.Tensor:
            idx = torch.randint(0, n, (b,))
            xb = to_float(x[idx])
            if not preset.is_identity:
                xb = aug.augment(xb, torch.rand(b, aug.N_UNIFORMS), preset)
            return F.mse_loss(model(xb), F.one_hot(y[idx], NUM_CLASSES).float())

        return Setup(model, loss, opt, [x, y])

    key = ("bm", str(m), str(o), n, b, spec.augmentation)
    steps = cfg["epochs"] * _batches(n, b)
    return JobPlan([Piece(key, setup, steps)], f"epochs {cfg['epochs']} x floor({n}/{b})",
                   "benign_memorization.batch_size")


# ---------------------------------------------------------------- cold posterior


def cold_posterior(cfg: dict, run: str) -> JobPlan:
    from .models.chains import ChainStack
    from .models.invariant import GROUP_SIZE, d4_batch
    from .papers import cold_posterior as cp
    from .posterior import gaussian_prior_energy, prior_parameters
    from .samplers import SGMCMC, Schedule

    spec = cp.RunSpec.parse(run)
    full_train, full_test = full_sizes(cfg["dataset"])
    n = cfg["n_train"] or full_train
    n = (cfg["curated_size"] or n) if spec.curation else n
    n_test, size, b = cfg["n_test"] or full_test, cfg["image_size"], min(cfg["batch_size"], n)
    num_data = n * (spec.n_augs if cfg["n_convention"] == "nK" and spec.n_augs else 1)
    spe = _batches(n, b)
    s = cfg["sampler"]

    temps = cp.branch_temperatures(cfg)

    def setup(chains: int | None) -> Builder:
        """cold_posterior.Run.make_loss and make_sampler (chains None: the burn-in's one network) or
        make_chain_loss and chain_stack (a stack of `chains` networks): the run's views of a float
        batch, mean NLL plus the Gaussian prior energy / n, one SG-MCMC step past the ramp (the noise
        is drawn), on the sampler's GPU path."""
        def build() -> Setup:
            def network() -> torch.nn.Module:
                return cp.build_network(cfg, NUM_CLASSES, spec.model == "inv")

            if chains is None:
                model = fake_module(network)
                params = prior_parameters(model)
            else:
                model = fake_module(lambda: ChainStack([network() for _ in range(chains)]))
                template = network()
                names = {id(p): n for n, p in template.named_parameters()}
                params = [model.stacked(names[id(p)]) for p in prior_parameters(template)]
            sampler = SGMCMC(model.parameters(), lr=s["lr"], num_data=num_data, method=s["method"],
                             momentum=s["momentum"], precondition=s["precondition"],
                             temperature=1.0 if chains is None else [1.0] * chains,
                             schedule=Schedule(spe, cfg["cycle_epochs"], cfg["ramp_start"],
                                               cfg["sample_start"]))
            sampler.step_count = spe * cfg["sample_start"]  # past the ramp: the noise is drawn
            sampler.fused = True  # the path it takes on a GPU (one noise draw, foreach norms)
            x, y = torch.empty(n, 3, size, size), torch.zeros(n, dtype=torch.long)
            x_test = torch.empty(n_test, 3, size, size)
            mean, std = (torch.tensor(v).view(1, 3, 1, 1) for v in (cp.CIFAR_MEAN, cp.CIFAR_STD))
            crop = aug.AugmentSpec(crop="pad", pad=max(1, size // 8), flip=True)

            def loss() -> torch.Tensor:
                idx = torch.randint(0, n, (b,))
                xb = x[idx]
                if spec.augmentation == "d4":
                    xb = d4_batch(xb, torch.randint(0, GROUP_SIZE, (b,)))
                elif spec.augmentation != "none":
                    xb = aug.augment(xb, torch.rand(b, aug.N_UNIFORMS), crop)
                xb = (xb - mean) / std
                if chains is None:
                    nll = F.cross_entropy(model(xb), y[idx])
                    return nll + gaussian_prior_energy(params, spec.prior) / num_data
                logits = model(xb)
                nll = F.cross_entropy(logits.flatten(0, 1), y[idx].repeat(chains), reduction="none")
                energy = gaussian_prior_energy(params, spec.prior, chains=True)
                return (nll.view(chains, -1).mean(1) + energy / num_data).sum()

            if chains is None:
                return Setup(model, loss, sampler, [x, y, x_test])
            return Setup(model, loss, sampler, [x, y, x_test], chains=chains, one_chain=setup(None))

        return build

    key = ("cp", str(cfg["model"]), spec.model, spec.augmentation, n, n_test, size, b)
    formula = (f"floor({n}/{b}) x ramp_start {cfg['ramp_start']} (burn-in) + floor({n}/{b}) x "
               f"(epochs {cfg['epochs']} - {cfg['ramp_start']}) steps of {len(temps)} chains at once")
    chain_steps = spe * (cfg["epochs"] - cfg["ramp_start"])
    return JobPlan([Piece(key + ("burn-in",), setup(None), spe * cfg["ramp_start"]),
                    Piece(key + (len(temps), "chains"), setup(len(temps)), chain_steps)],
                   formula, "cold_posterior.batch_size")


# ---------------------------------------------------------------- continual learning


def continual_learning(cfg: dict, run: str) -> JobPlan:
    from .papers import continual_learning as cl
    from .tasks.streams import TaskStream

    spec = cl.RunSpec.parse(run)
    run_cfg = cl.run_config(cfg, run)
    cifar = spec.stream == "splitcifar10"
    full_train, full_test = full_sizes(spec.dataset)
    share = 5 if cifar else 1  # a Split CIFAR-10 task holds 2 of the 10 classes
    n_task, n_test = cfg["n_train"] or full_train // share, cfg["n_test"] or full_test // share
    tasks = cfg["n_tasks"]
    shape = (3, 32, 32) if cifar else (28 * 28,)
    joint = spec.regime == "joint"
    n_fit = tasks * n_task if joint else n_task
    b = min(cfg["batch_size"], n_fit)
    shared = not cifar and cfg["pmnist_head"] == "shared"
    stream = TaskStream(spec.stream, [torch.empty(1, *shape)] * tasks, [], [], [], 2 if cifar else 10,
                        shared_head=shared)

    def item_setup(scaling) -> Builder:
        def setup() -> Setup:
            """continual_learning.fit: plain SGD on the cross-entropy through the task's head."""
            model = fake_module(lambda: cl.build_model(stream, scaling, cfg, 0, torch.device("cpu")))
            opt = _sgd_or_adam("sgd", model.parameters(), scaling.lr(cfg["lr"]), 0.0, momentum=0.0)
            data = [torch.empty(n_task, *shape) for _ in range(tasks)] + \
                [torch.empty(n_test, *shape) for _ in range(tasks)]
            x = torch.cat(data[:tasks]) if joint else data[0]
            y = torch.zeros(x.shape[0], dtype=torch.long)
            heads = torch.zeros(x.shape[0], dtype=torch.long) if joint else None

            def loss() -> torch.Tensor:
                idx = torch.randint(0, x.shape[0], (b,))
                return F.cross_entropy(model(x[idx], 0 if heads is None else heads[idx]), y[idx])

            return Setup(model, loss, opt, data + ([x, y, heads] if joint else [y]))
        return setup

    per_item = cfg["epochs"] * (_batches(n_fit, b, drop_last=False) * (1 if joint else tasks))
    pieces = [Piece(("cl", spec.stream, spec.regime, s.width, cfg["depth"], b, n_task, n_test, tasks, shared),
                    item_setup(s), per_item) for s in spec.items(run_cfg)]
    formula = (f"{len(pieces)} networks x epochs {cfg['epochs']} x ceil({n_fit}/{b})"
               + ("" if joint else f" x {tasks} tasks"))
    setting = "continual_learning.batch_size (or the widest width of the sweep)"
    return JobPlan(pieces, formula, setting)


# ---------------------------------------------------------------- latent lookahead


def task_lengths(task: str, data: dict) -> tuple[int, int]:
    """Longest prompt and answer the task's generator can make (see the module docstring)."""
    import numpy as np

    from .tasks import planning as pl

    if task in ("sudoku4", "sudoku9"):
        size = 4 if task == "sudoku4" else 9
        grid = [[0] * size for _ in range(size)]
        prompt, answer = pl.sudoku_example(grid, grid)
    elif task == "maze":
        g = data["grid_n"]
        prompt, answer = pl.maze_example(np.zeros((2, g, g), bool), (0, 0), (0, 0), [(0, 0)] * g * g)
    elif task == "prosqa":
        edges = sum(min(data["max_parents"], child) for child in range(2, data["n_nodes"]))
        return 2 * edges + 5, data["max_depth"] + 1
    else:
        raise ValueError(f"unknown latent-lookahead task {task!r}")
    return len(prompt), len(answer)


def latent_lookahead(cfg: dict, run: str) -> JobPlan:
    from .models import lookahead_gpt as lg
    from .papers import latent_lookahead as ll
    from .tasks import planning as pl

    spec = ll.RunSpec.parse(run)
    data, t, m = cfg["data"][spec.task], cfg["training"][spec.task], cfg["model"]
    n = pl.split_names(data["n"], data["splits"], data["seed"]).count("train")
    n_test = min(cfg["eval_max"], data["n"] - n)
    P, A = task_lengths(spec.task, data)
    tau = 0 if spec.method == "ntp" else (A if spec.tau == "A" else int(spec.tau))
    perf = ll.performance(cfg, torch.device("cuda"), tau)
    b = min(t["batch_size"], n)
    bf16 = bool(cfg["bf16"])

    def setup() -> Setup:
        """latent_lookahead.Run.method_loss with the switches a CUDA run resolves (KV cache, fused
        Adam, checkpointed rollout above tau 32); bf16 autocast emulated with CPU autocast."""
        model = fake_module(lambda: lg.LookaheadGPT(lg.GPTConfig(
            vocab_size=pl.VOCAB_SIZE, block_size=m["block_size"], n_layer=m["n_layer"], n_head=m["n_head"],
            n_embd=m["n_embd"], dropout=t["dropout"])))
        o = cfg["optimizer"]
        fused = o["name"] == "adam" and perf["fused_adam"]
        opt = torch.optim.Adam(model.parameters(), lr=o["lr"], fused=True) if fused \
            else _sgd_or_adam(o["name"], model.parameters(), o["lr"])
        prompts, answers = torch.zeros(n, P, dtype=torch.long), torch.zeros(n, A, dtype=torch.long)
        tests = [torch.zeros(n_test, P, dtype=torch.long), torch.zeros(n_test, A, dtype=torch.long)]

        def loss() -> torch.Tensor:
            idx = torch.randint(0, n, (b,))
            p, a = prompts[idx], answers[idx]
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                if spec.method == "ntp":
                    return lg.ntp_loss(model, p, a, pl.PAD)
                if spec.method == "pause":
                    return lg.pause_loss(model, p, a, pl.PAD, pl.PAUSE, tau)
                return lg.lookahead_loss(model, p, a, pl.PAD, tau, spec.mask == "bidir",
                                         kv_cache=perf["kv_cache"], checkpoint=perf["checkpoint_rollout"])

        return Setup(model, loss, opt, [prompts, answers, *tests])

    key = ("ll", str(m), spec.method, tau, spec.mask, P, A, b, n, t["dropout"], str(perf), bf16)
    steps = t["epochs"] * _batches(n, b)
    setting = f"latent_lookahead.training.{spec.task}.batch_size"
    if spec.method == "lookahead" and not perf["checkpoint_rollout"]:
        setting += " (or latent_lookahead.performance.checkpoint_rollout: true)"
    return JobPlan([Piece(key, setup, steps, bf16)], f"epochs {t['epochs']} x floor({n}/{b})", setting)


# ---------------------------------------------------------------- rank collapse


def rank_collapse(cfg: dict, run: str) -> JobPlan:
    from .papers import rank_collapse as rc

    spec = rc.RunSpec.parse(run)
    cfg = rc.run_config(cfg, spec)  # the run's own model and data (a training run may override them)
    T = cfg["data"]["seq_len"]

    def model_of(depth: int, d_k: int):
        return fake_module(lambda: rc.build_model(cfg, spec, depth, d_k, 0, "plan", torch.device("cpu")))

    if spec.kind == "init":
        ic = cfg["init"]

        def init_setup(depth: int) -> Builder:
            def setup() -> Setup:
                """rank_collapse.measure_at_init: hidden states, head, cross-entropy, backward."""
                model = model_of(depth, spec.d_k)
                batches = torch.zeros(ic["n_batches"], ic["batch_size"], T, dtype=torch.long)

                def loss() -> torch.Tensor:
                    x = batches[0]
                    hs = model.hidden_states(x)
                    logits = model.head(model.ln_f(hs[-1]))
                    return F.cross_entropy(logits.flatten(0, 1), x.flip(1).flatten())

                return Setup(model, loss, None, [batches])
            return setup

        pieces = [Piece(("rc-init", str(cfg["model"]), str(cfg["data"]), spec.norm, spec.d_k, int(d),
                         ic["batch_size"], ic["n_batches"]), init_setup(int(d)), ic["n_batches"])
                  for d in sorted(ic["depths"])]
        return JobPlan(pieces, f"{len(pieces)} depths x n_batches {ic['n_batches']} (no optimizer)",
                       "rank_collapse.init.batch_size")
    tc = cfg["training"]
    d_k = rc.base_d_k(cfg)

    def train_setup() -> Setup:
        """rank_collapse.run_train: task_loss on a fresh batch, the configured optimizer."""
        model = model_of(spec.depth, d_k)
        opt = _sgd_or_adam(tc["optimizer"], model.parameters(), tc["lr"])
        train_x = torch.zeros(tc["steps"], tc["batch_size"], T, dtype=torch.long)
        eval_x = torch.zeros(tc["eval_batches"] * tc["batch_size"], T, dtype=torch.long)
        return Setup(model, lambda: rc.task_loss(model, train_x[0])[0], opt, [train_x, eval_x])

    key = ("rc-train", str(cfg["model"]), str(cfg["data"]), spec.norm, spec.depth, tc["batch_size"],
           tc["steps"], tc["optimizer"])
    return JobPlan([Piece(key, train_setup, tc["steps"])], f"training.steps {tc['steps']}",
                   "rank_collapse.training.batch_size")


PLANNERS: dict[str, Callable[[dict, str], JobPlan]] = {
    "benign_memorization": benign_memorization, "cold_posterior": cold_posterior,
    "continual_learning": continual_learning, "latent_lookahead": latent_lookahead,
    "rank_collapse": rank_collapse,
}
TRAINING_STAGES = ("train", "sample")  # the stage of each paper that trains (one job per run and seed)

