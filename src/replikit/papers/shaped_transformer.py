"""Noci, Li, Li, He, Hofmann, Maddison, Roy (NeurIPS 2023), "The Shaped Transformer: Attention Models
in the Infinite Depth-and-Width Limit" (arXiv 2306.17759): runs and the measuring job.

One kind of run, one job per (run, seed), on the attention-only transformer of
`replikit.models.signal_transformer` (no MLP, no layer norm, one head, d_k = width):

    init_attention-{shaped|softmax}_width-{n}

`networks` fresh networks of width n and depth max(ratios) x n, each fed `sequences` input sequences
of `tokens` Gaussian tokens whose pairwise correlation is `input_correlation` in expectation. A block
is x <- sqrt(1 - gamma^2) x + gamma A x W_V W_O, with A the shaped attention
I + Softmax(Q K^T / tau) - (1/T) 1 1^T (tau = tau0 sqrt(n d_k)) or the standard Softmax(Q K^T /
sqrt(d_k)). The output of block l of a network of depth D is the output of a network of depth l (a
block does not depend on the depth), so one run measures every depth-to-width ratio l / n up to
max(ratios).

Measured per layer: the tokens' mean pairwise cosine similarity of every (network, sequence), its
mean and standard deviation over them; and at the layers l = r n of the configured ratios r, every
sample (the distribution the claims compare).

Pairing: within a seed and width, network k has the same weights and inputs under both attentions.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import ClassVar

import torch

from replikit.core.progress import Progress
from replikit.core.seeding import derive_seed, seed_everything
from replikit.methods.token_geometry import token_similarity
from replikit.models.signal_transformer import ATTENTIONS, SignalConfig, SignalTransformer
from replikit.papers import unique_runs
from replikit.papers.interface import Job, Run, Runs, Stage

PAPER = "shaped_transformer"
RESULTS = "results/shaped_transformer"
RUN_KEYS = ("tokens", "input_correlation", "tau0", "gamma", "networks", "sequences", "ratios")


@dataclass(frozen=True)
class RunSpec(Run):
    """One run: `attention` (shaped or softmax) at `width`, e.g. init_attention-shaped_width-32."""

    kind: ClassVar[str] = "init"
    attention: str
    width: int

    def __post_init__(self) -> None:
        if self.attention not in ATTENTIONS or self.width < 2:
            raise ValueError(f"not a shaped-transformer run: attention {self.attention!r}, "
                             f"width {self.width}")


def depth_of(cfg: dict, width: int) -> int:
    """The depth of a run's networks: max(ratios) x width."""
    return round(max(cfg["ratios"]) * width)


def layer_of(ratio: float, width: int) -> int:
    """The block whose output has depth-to-width ratio `ratio` at `width`."""
    return round(ratio * width)


def experiment_runs(cfg: dict) -> dict[str, list[RunSpec]]:
    """The runs each figure needs: shaped attention at every width (the ratio figure); both attentions
    at the contrast width, and shaped attention at the largest width (the depth figure)."""
    n, widest = int(cfg["softmax_width"]), max(int(w) for w in cfg["widths"])
    return {"correlation_by_ratio": [RunSpec("shaped", int(w)) for w in cfg["widths"]],
            "correlation_vs_depth": unique_runs({"": [*(RunSpec(a, n) for a in ATTENTIONS),
                                                      RunSpec("shaped", widest)]})}


def config_errors(cfg: dict) -> list[str]:
    """What the schema cannot check: every ratio lands on a block at every width, the equivalence
    ratio is one of the ratios, and the contrast width is one of the widths."""
    errors = []
    for w in cfg["widths"]:
        bad = [r for r in cfg["ratios"] if not math.isclose(r * w, round(r * w)) or round(r * w) < 1]
        if bad:
            errors.append(f"shaped_transformer.ratios {bad} times width {w} is not a whole number of blocks "
                          "(>= 1); use ratios that are multiples of 1 / min(widths)")
    if cfg["equivalence_ratio"] not in cfg["ratios"]:
        errors.append(f"shaped_transformer.equivalence_ratio {cfg['equivalence_ratio']} is not one of "
                      f"shaped_transformer.ratios {cfg['ratios']}")
    if cfg["softmax_width"] not in cfg["widths"]:
        errors.append(f"shaped_transformer.softmax_width {cfg['softmax_width']} is not one of "
                      f"shaped_transformer.widths {cfg['widths']}")
    if len(cfg["widths"]) < 3:
        errors.append("shaped_transformer.widths needs at least 3 widths (ST-1 compares at least three "
                      "(depth, width) pairs at one ratio)")
    return errors


def all_runs(cfg: dict) -> list[RunSpec]:
    return unique_runs(experiment_runs(cfg))


def run_config(cfg: dict, spec: RunSpec | str) -> dict:
    """The config keys that define one run (attention and width are in its name)."""
    return {k: cfg[k] for k in RUN_KEYS}


# ---------------------------------------------------------------- networks, inputs, measurement


def build_network(cfg: dict, spec: RunSpec, seed: int, k: int, device: torch.device) -> SignalTransformer:
    """Network k of the seed at the run's width; its weights depend on (seed, width, k) only, so both
    attentions share them."""
    n = spec.width
    net = SignalConfig(vocab_size=1, seq_len=cfg["tokens"], depth=depth_of(cfg, n), width=n, heads=1,
                       d_k=n, norm="none", init_std=None, positional=False, mlp_ratio=0,
                       attention=spec.attention, tau0=cfg["tau0"], gamma=cfg["gamma"])
    g = torch.Generator().manual_seed(derive_seed(seed, "network", n, k))
    return SignalTransformer(net, g).to(device)


def inputs(cfg: dict, width: int, seed: int, k: int, device: torch.device) -> torch.Tensor:
    """Network k's input sequences (sequences, tokens, width) with an exact Gram matrix: every token
    has squared norm `width` and every pair of tokens cosine similarity `input_correlation`, so the
    start of the correlation's path is a point, not a distribution (random orthonormal directions
    mixed by the Cholesky factor of the target correlation matrix)."""
    g = torch.Generator().manual_seed(derive_seed(seed, "inputs", width, k))
    rho, b, t = cfg["input_correlation"], cfg["sequences"], cfg["tokens"]
    q = torch.linalg.qr(torch.randn(b, width, t, generator=g, dtype=torch.float64)).Q  # (b, width, t)
    target = torch.full((t, t), rho, dtype=torch.float64).fill_diagonal_(1.0)
    chol = torch.linalg.cholesky(target)  # (t, t), lower
    return (math.sqrt(width) * (q @ chol.T).transpose(1, 2)).float().to(device)


@torch.no_grad()
def measure(spec: RunSpec, cfg: dict, seed: int, device: torch.device) -> dict:
    """Every layer's token similarity over all (network, sequence) samples: mean and std per layer,
    and the samples at the configured ratios."""
    n = spec.width
    per_network = []
    report = Progress("network", cfg["networks"])
    for k in range(cfg["networks"]):
        model = build_network(cfg, spec, seed, k, device)
        hs = model.propagate(inputs(cfg, n, seed, k, device))
        per_network.append(torch.stack([token_similarity(h) for h in hs]))  # (layers + 1, sequences)
        report.update(k + 1, output_similarity=per_network[-1][-1].mean().item())
    sims = torch.cat(per_network, dim=1).double()  # (layers + 1, samples)
    samples = {f"{r:g}": sims[layer_of(r, n)].tolist() for r in cfg["ratios"]}
    return {"depth": depth_of(cfg, n), "mean_layers": sims.mean(1).tolist(),
            "std_layers": sims.std(1).tolist(), "samples": samples}


def run(spec: RunSpec | str, cfg: dict, seed: int, device: torch.device | str = "cpu") -> dict:
    """One run for one seed, JSON-ready. `cfg` is the run's config, `run_config(section, spec)`."""
    spec = RunSpec.parse(spec) if isinstance(spec, str) else spec
    device = torch.device(device)
    seed_everything(seed, device=device)
    start = time.time()
    out = measure(spec, cfg, seed, device)
    return {"run": spec.name, "seed": int(seed), "attention": spec.attention, "width": spec.width, **out,
            "elapsed_s": round(time.time() - start, 2)}


# ---------------------------------------------------------------- the job (see papers.interface)

RUN_FILES = {"metrics": f"{RESULTS}/runs/{{run}}/seed{{seed}}/metrics.json"}


def measure_job(job: Job) -> None:
    """One (run, seed) job: measure, then write the metrics with the run's config and device."""
    seed = int(job.wildcards["seed"])
    job.write("metrics", run(job.wildcards["run"], job.cfg, seed, torch.device(job.device)))


RUNS = Runs(PAPER, RunSpec, experiment_runs, RUN_FILES,
            stages=(Stage("measure", RUN_FILES, measure_job, config=lambda cfg, w: run_config(cfg, w.run)),),
            config_errors=config_errors)
