"""Noci et al. (NeurIPS 2022), "Signal propagation in transformers: theoretical perspectives and the
role of rank collapse" (arXiv 2206.03126).

Two kinds of run, one job per (run, seed), on the transformer of `replikit.models.signal_transformer`:

    init_norm-{post|pre|none}_scaling-{1|1oversqrtL}_d_k-{d_k}_depth-none
        measurements at initialization, one fresh network per depth of init.depths
    train_norm-{post|pre|none}_scaling-{1|1oversqrtL}_d_k-none_depth-{depth}
        a short training run of one network

`scaling-1` is the standard residual x + f(x) (alpha = 1); `scaling-1oversqrtL` the paper's
x + f(x) / sqrt(L) (alpha = 1/sqrt(L)). Init runs use the shared `model` and `data`; a training run may
have its own (`training.model`, `training.data`, `training_model`), so that the init measurements run
at the paper's sizes where training cannot.

Data (generated from the seed, no download): i.i.d. tokens from a Zipf law p(k) ~ 1 / k^s over the
vocabulary (a few frequent tokens, as in text) and, as the task, the sequence reversed: position i
predicts token n - 1 - i. A network solves it only by attending by position, i.e. by learning its
queries and keys, which is what rank collapse is said to block. At initialization the loss is that
task's cross-entropy; gradients are those of the mean over all positions of a batch.

Pairing: within a seed every run draws the same data, and networks of the same depth and shapes the
same initial weights (whatever the layer norm or residual scaling), so differences between runs
of a seed are paired comparisons.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from replikit.core.progress import Progress
from replikit.core.seeding import derive_seed, seed_everything
from replikit.core.training import DivergenceError, make_optimizer
from replikit.methods.token_geometry import stable_rank, token_similarity
from replikit.models.signal_transformer import SignalConfig, SignalTransformer
from replikit.papers import unique_runs
from replikit.papers.interface import Job, Run, Runs, Stage

PAPER = "rank_collapse"
RESULTS = "results/rank_collapse"
NORMS = ("post", "pre", "none")
# residual scaling: its token in a run name -> alpha, as the model, figures and claims write it
SCALINGS = {"1": "1", "1oversqrtL": "1/sqrt(L)"}
SCALING_OF = {alpha: token for token, alpha in SCALINGS.items()}  # alpha (as the config writes it) -> token
MODEL_KEYS = ("width", "heads", "mlp_ratio", "init_std", "positional")
DATA_KEYS = ("vocab_size", "seq_len", "zipf_exponent")
INIT_KEYS = ("depths", "batch_size", "n_batches")
TRAIN_KEYS = ("steps", "batch_size", "optimizer", "lr", "warmup_steps", "eval_every", "eval_batches")
WEIGHTS = ("q", "k", "v")  # the attention weights whose gradients are recorded


@dataclass(frozen=True)
class RunSpec(Run):
    """One run: `init` (a depth sweep at d_k) or `train` (one network of `depth` layers), e.g.
    init_norm-post_scaling-1oversqrtL_d_k-128_depth-none or train_norm-post_scaling-1_d_k-none_depth-16.
    `scaling` is the token of the residual scaling (a key of SCALINGS); `alpha` its value."""

    kind: str
    norm: str
    scaling: str
    d_k: int | None = None
    depth: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("init", "train"):
            raise ValueError(f"run kind must be init or train, not {self.kind!r}")
        if self.norm not in NORMS or self.scaling not in SCALINGS:
            raise ValueError(f"unknown layer norm {self.norm!r} or residual scaling {self.scaling!r}")
        sized = self.d_k if self.kind == "init" else self.depth
        other = self.depth if self.kind == "init" else self.d_k
        if sized is None or other is not None:
            raise ValueError("an init run names d_k (not depth), a training run its depth (not d_k)")
        if sized < 1:
            raise ValueError(f"not a rank-collapse run: {self}")

    @property
    def alpha(self) -> str:
        """The residual scaling, "1" or "1/sqrt(L)" (the model's, figures' and claims' spelling)."""
        return SCALINGS[self.scaling]

    @property
    def label(self) -> str:
        """For legends: e.g. 'post-LN, alpha=1'."""
        return f"{self.norm}-LN, alpha={self.alpha}" if self.norm != "none" else f"no LN, alpha={self.alpha}"


# ---------------------------------------------------------------- experiments and run configs


def base_d_k(cfg: dict) -> int:
    """The per-head key dimension of the main runs: model.d_k, or width / heads when null."""
    m = cfg["model"]
    return int(m["d_k"] or m["width"] // m["heads"])


def experiment_runs(cfg: dict) -> dict[str, list[RunSpec]]:
    """The runs each figure needs. The claims test `norm` (the paper's collapsing architecture is
    post-LN); `extra_norms` are drawn for comparison only. The training pair is trained at
    `training.depth` and, for RC-5's falsifier, at `training.falsifier_depth`."""
    norm, dk = cfg["norm"], base_d_k(cfg)
    pairs = [RunSpec("init", n, s, d_k=dk) for n in [norm, *cfg["extra_norms"]] for s in SCALINGS]
    sweep, scaling = cfg["dk_sweep"], SCALING_OF[cfg["dk_sweep"]["alpha"]]
    return {
        "similarity_vs_depth": pairs,
        "gradients_vs_depth": pairs,
        "gradient_ratio_vs_dk": [RunSpec("init", norm, scaling, d_k=int(d)) for d in sweep["d_ks"]],
        "training_loss": [RunSpec("train", norm, s, depth=int(cfg["training"][key]))
                          for key in ("depth", "falsifier_depth") for s in SCALINGS],
    }


def training_model(cfg: dict) -> tuple[dict, dict]:
    """The model and data of the training run: the shared `model` and `data` with the keys of
    `training.model` and `training.data` (each null or absent = the shared settings) put in."""
    tc = cfg["training"]
    return {**cfg["model"], **(tc.get("model") or {})}, {**cfg["data"], **(tc.get("data") or {})}


def config_errors(cfg: dict) -> list[str]:
    """What the schema cannot check: the width splits into heads (of the shared model and of the
    training run's own); `norm` is not also an extra norm; RC-5's falsifier is shallower than its claim."""
    errors = []
    for key, m in (("model", cfg["model"]), ("training.model", cfg["training"].get("model"))):
        if m and m["width"] % m["heads"]:
            errors.append(f"rank_collapse.{key}.width ({m['width']}) must be a multiple of "
                          f"rank_collapse.{key}.heads ({m['heads']})")
    tc = cfg["training"]
    if tc["falsifier_depth"] >= tc["depth"]:
        errors.append(f"rank_collapse.training.falsifier_depth ({tc['falsifier_depth']}) must be below "
                      f"rank_collapse.training.depth ({tc['depth']}): RC-5's falsifier is a shallower "
                      "network, where alpha = 1 should not collapse")
    if cfg["norm"] in cfg["extra_norms"]:
        errors.append(f"rank_collapse.extra_norms repeats rank_collapse.norm ({cfg['norm']!r})")
    return errors


def all_runs(cfg: dict) -> list[RunSpec]:
    return unique_runs(experiment_runs(cfg))


def run_config(cfg: dict, spec: RunSpec | str) -> dict:
    """The config keys that define one run. Layer norm, scaling, d_k (init) and depth (training)
    are in its name; figure-only keys (extra_norms, dk_sweep) and resources are left out. A training
    run's model and data are `training_model(cfg)` (the shared ones unless it has its own), in the
    same keys, so a run config does not change when an override repeats the shared settings."""
    spec = RunSpec.parse(spec) if isinstance(spec, str) else spec
    model, data = (cfg["model"], cfg["data"]) if spec.kind == "init" else training_model(cfg)
    out = {"model": {k: model[k] for k in MODEL_KEYS}, "data": {k: data[k] for k in DATA_KEYS}}
    if spec.kind == "init":
        out["init"] = {k: cfg["init"][k] for k in INIT_KEYS}
    else:
        out["model"]["d_k"] = base_d_k({"model": model})
        out["training"] = {k: cfg["training"][k] for k in TRAIN_KEYS}
    return out


# ---------------------------------------------------------------- data and measurements


def zipf_tokens(generator: torch.Generator, n: int, seq_len: int, vocab: int,
                exponent: float) -> torch.Tensor:
    """n sequences (n, seq_len) of i.i.d. tokens with p(k) ~ 1 / (k + 1)^exponent, k = 0..vocab-1."""
    p = torch.arange(1, vocab + 1, dtype=torch.float64).pow(-exponent)
    return torch.multinomial(p / p.sum(), n * seq_len, replacement=True, generator=generator).view(n, seq_len)


def task_data(seed: int, purpose: str, n: int, data: dict, device: torch.device) -> torch.Tensor:
    """The seed's `purpose` sequences, drawn on the CPU (the same on every device), then moved."""
    g = torch.Generator().manual_seed(derive_seed(seed, "data", purpose))
    return zipf_tokens(g, n, data["seq_len"], data["vocab_size"], data["zipf_exponent"]).to(device)


def task_loss(model: SignalTransformer, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean cross-entropy of predicting the reversed sequence, and the logits."""
    logits = model(x)
    return F.cross_entropy(logits.flatten(0, 1), x.flip(1).flatten()), logits


def build_model(cfg: dict, spec: RunSpec, depth: int, d_k: int, seed: int, purpose: str,
                device: torch.device) -> SignalTransformer:
    """The seed's network; its weights depend on (seed, purpose, depth) and the shapes only."""
    m, data = cfg["model"], cfg["data"]
    net_cfg = SignalConfig(vocab_size=data["vocab_size"], seq_len=data["seq_len"], depth=depth,
                           width=m["width"], heads=m["heads"], d_k=d_k, norm=spec.norm, alpha=spec.alpha,
                           init_std=m["init_std"], positional=m["positional"], mlp_ratio=m["mlp_ratio"])
    g = torch.Generator().manual_seed(derive_seed(seed, purpose, depth))
    return SignalTransformer(net_cfg, g).to(device)


def measure_at_init(model: SignalTransformer, batches: torch.Tensor) -> dict:
    """Token similarity and stable rank of every layer's output, and the Frobenius norm of the loss
    gradient of each layer's W_Q, W_K, W_V, averaged over the batches (n_batches, B, T)."""
    depth = len(model.blocks)
    sims = torch.zeros(depth + 1, device=batches.device)
    ranks = torch.zeros(depth + 1, device=batches.device)
    grads = {w: torch.zeros(depth, device=batches.device) for w in WEIGHTS}
    for x in batches:
        model.zero_grad(set_to_none=True)
        hs = model.hidden_states(x)
        logits = model.head(model.ln_f(hs[-1]))
        F.cross_entropy(logits.flatten(0, 1), x.flip(1).flatten()).backward()
        with torch.no_grad():
            h = torch.stack(hs).detach()  # (L + 1, B, T, d)
            sims += torch.stack([token_similarity(layer).mean() for layer in h])
            ranks += torch.stack([stable_rank(layer).mean() for layer in h])
            for w in WEIGHTS:
                grads[w] += torch.stack([p.grad.norm() for p in model.attention_weights(w)])
    n = batches.shape[0]
    layers = {f"grad_{w}_layers": (g / n).tolist() for w, g in grads.items()}
    out = {"similarity": sims[-1].item() / n, "stable_rank": ranks[-1].item() / n,
           "similarity_input": sims[0].item() / n, "similarity_layers": (sims / n).tolist(),
           "stable_rank_layers": (ranks / n).tolist()}
    # per-layer average of the gradient norms (the figure and claims read these)
    out.update({f"grad_{w}": sum(v) / depth for w, v in ((w, layers[f"grad_{w}_layers"]) for w in WEIGHTS)})
    return {**out, **layers}


def run_init(spec: RunSpec, cfg: dict, seed: int, device: torch.device) -> dict:
    """One fresh network per depth of init.depths, all measured on the seed's same batches."""
    ic = cfg["init"]
    batches = task_data(seed, "init", ic["n_batches"] * ic["batch_size"], cfg["data"], device)
    batches = batches.view(ic["n_batches"], ic["batch_size"], -1)
    items = []
    for depth in sorted(int(d) for d in ic["depths"]):
        model = build_model(cfg, spec, depth, spec.d_k, seed, "init", device)
        items.append({"depth": depth, **measure_at_init(model, batches)})
    return {"kind": "init", "norm": spec.norm, "alpha": spec.alpha, "d_k": spec.d_k, "items": items}


@torch.no_grad()
def evaluate(model: SignalTransformer, x: torch.Tensor, batch: int) -> tuple[float, float]:
    """Held-out cross-entropy and per-token accuracy on the reversal task."""
    losses, correct = [], []
    for s in range(0, x.shape[0], batch):
        loss, logits = task_loss(model, x[s:s + batch])
        losses.append(loss)
        correct.append((logits.argmax(-1) == x[s:s + batch].flip(1)).float().mean())
    return torch.stack(losses).mean().item(), torch.stack(correct).mean().item()


def run_train(spec: RunSpec, cfg: dict, seed: int, device: torch.device) -> dict:
    """Train one network on fresh batches every step (linear warm-up, then a constant rate);
    evaluate on the seed's held-out sequences every eval_every steps."""
    tc = cfg["training"]
    model = build_model(cfg, spec, spec.depth, cfg["model"]["d_k"], seed, "train", device)
    opt = make_optimizer(tc["optimizer"], model.parameters(), tc["lr"])
    b, steps = tc["batch_size"], tc["steps"]
    train_x = task_data(seed, "train", steps * b, cfg["data"], device).view(steps, b, -1)
    eval_x = task_data(seed, "eval", tc["eval_batches"] * b, cfg["data"], device)
    loss0, acc0 = evaluate(model, eval_x, b)
    history = [{"step": 0, "train_loss": None, "eval_loss": loss0, "eval_accuracy": acc0}]
    window: list[torch.Tensor] = []
    report = Progress("step", steps)
    for step in range(1, steps + 1):
        for group in opt.param_groups:
            group["lr"] = tc["lr"] * min(1.0, step / max(1, tc["warmup_steps"]))
        loss, _ = task_loss(model, train_x[step - 1])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        window.append(loss.detach())
        if step % tc["eval_every"] == 0 or step == steps:
            train_loss = torch.stack(window).mean().item()
            if not math.isfinite(train_loss):
                raise DivergenceError(f"{spec.name} seed {seed}: training loss {train_loss} by step {step}; "
                                      "lower rank_collapse.training.lr")
            eval_loss, acc = evaluate(model, eval_x, b)
            history.append({"step": step, "train_loss": train_loss, "eval_loss": eval_loss,
                            "eval_accuracy": acc})
            window.clear()
            report.update(step, loss=train_loss, eval_loss=eval_loss, eval_accuracy=acc)
    evals = [h["eval_loss"] for h in history[1:]]
    return {"kind": "train", "norm": spec.norm, "alpha": spec.alpha, "depth": spec.depth, "history": history,
            "final_eval_loss": evals[-1], "mean_eval_loss": sum(evals) / len(evals),
            "final_eval_accuracy": history[-1]["eval_accuracy"]}


def run(spec: RunSpec | str, cfg: dict, seed: int, device: torch.device | str = "cpu") -> dict:
    """One run for one seed, JSON-ready. `cfg` is the run's config, `run_config(section, spec)`."""
    spec = RunSpec.parse(spec) if isinstance(spec, str) else spec
    device = torch.device(device)
    seed_everything(seed, device=device)
    start = time.time()
    out = run_init(spec, cfg, seed, device) if spec.kind == "init" else run_train(spec, cfg, seed, device)
    return {"run": spec.name, "seed": int(seed), **out, "elapsed_s": round(time.time() - start, 2)}


# ---------------------------------------------------------------- the job (see papers.interface)

RUN_FILES = {"metrics": f"{RESULTS}/runs/{{run}}/seed{{seed}}/metrics.json"}


def train_job(job: Job) -> None:
    """One (run, seed) job: measure or train, then write the metrics with the run's config and device.
    `job` is a `papers.interface.Job` (wildcards run and seed, cfg = run_config, output metrics)."""
    device = torch.device(job.device)
    job.write("metrics", run(job.wildcards["run"], job.cfg, int(job.wildcards["seed"]), device))


RUNS = Runs(PAPER, RunSpec, experiment_runs, RUN_FILES,
            stages=(Stage("train", RUN_FILES, train_job, config=lambda cfg, w: run_config(cfg, w.run)),),
            config_errors=config_errors)
