"""He, Noci, Paliotta, Schlag, Hofmann (NeurIPS 2024), "Understanding and Minimising Outlier Features in
Transformer Training" (arXiv 2405.19279): runs, the data and training jobs, and the cost model.

Two stages. `data`: the committed corpus (a fixed slice of CPython 3.11.7's standard library, PSF
licensed; `replikit/data/corpora/`, NOTICE there) is checked against its md5 and written as the
bytes every training job reads. `train`: one job per (run, seed),

    train_lr-{lr}

trains the arms of its rate (`arms_at`: the block, its residual-branch weight beta and Adam's epsilon)
in turn, each a fresh `replikit.models.outlier_lm` byte-level causal LM, at learning rate `lr` (the
config's `lrs.high`: every arm; `lrs.low`: all but Adam's larger epsilon; `lrs.higher`: Pre-Norm, OP
and the unnormalised block only) with Adam, on next-byte prediction over random windows of the corpus's first
90 % (`TRAIN_SHARE`). Every `eval_every` steps, on a fixed set of `eval_sequences` windows of the last
10 %, it records the loss and, per block l = 1..L, on the residual stream leaving the block: the
kurtosis of the neurons' activation RMS (`activation_kurtosis`) and the tokens' mean pairwise cosine
similarity (`token_similarity`, signal propagation: 1 is rank collapse).

Pairing: within a seed, every arm at both rates starts from the same weights (the same draws, where
shapes agree: the blocks differ only in norms, which start at gain 1 and bias 0), reads the same
training batches in the same order and is evaluated on the same windows.
"""

from __future__ import annotations

import hashlib
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import torch
import torch.nn.functional as F

from replikit.core.progress import Progress
from replikit.core.seeding import derive_seed, seed_everything
from replikit.papers.interface import Job, Run, Runs, Stage

PAPER = "outlier_features"
RESULTS = f"results/{PAPER}"
CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpora" / "cpython311_stdlib_slice.txt"
CORPUS_MD5 = "04bbe4bf0476a17ce128812e0bc7c174"  # 1,157,604 bytes: 25 files of Lib/ (CPython 3.11.7)
DATA = f"resources/{PAPER}/corpus.bin"
TRAIN_SHARE = 0.9  # the corpus's first 90 % trains, the last 10 % evaluates
RUN_KEYS = ("lrs", "model", "batch_size", "steps", "eval_every", "eval_sequences", "op_beta", "adam_eps",
            "large_eps")


@dataclass(frozen=True)
class Arm:
    """One network of a run: `block` (pre, op or none), residual-branch weight `beta`, Adam's `eps`."""

    name: str
    block: str
    beta: float
    eps: float


def arms(cfg: dict) -> list[Arm]:
    """Every arm a run trains: the standard Pre-Norm block, the OP block (our reading) at its branch
    weight `op_beta`, each at the other's weight too (the residual scaling as a setting), the Pre-Norm
    block with its norms simply removed (`none`), and Pre-Norm with Adam's `large_eps`."""
    b, eps = float(cfg["op_beta"]), float(cfg["adam_eps"])
    return [Arm("pre", "pre", 1.0, eps), Arm("pre_scaled", "pre", b, eps), Arm("op", "op", b, eps),
            Arm("op_unscaled", "op", 1.0, eps), Arm("none", "none", 1.0, eps),
            Arm("pre_large_eps", "pre", 1.0, float(cfg["large_eps"]))]


def arms_at(cfg: dict, lr: float) -> list[Arm]:
    """The arms a run at rate `lr` trains: every arm at `lrs.high` (the claims' rate); all but Adam's
    larger epsilon at `lrs.low` (the falsifiers' rate); Pre-Norm, OP and `none` at `lrs.higher` (the
    stability test and its falsifier)."""
    every, lrs = arms(cfg), cfg["lrs"]
    if math.isclose(lr, lrs["high"]):
        return every
    if math.isclose(lr, lrs["low"]):
        return [a for a in every if a.name != "pre_large_eps"]
    if math.isclose(lr, lrs["higher"]):
        return [a for a in every if a.name in ("pre", "op", "none")]
    raise ValueError(f"lr {lr:g} is none of {PAPER}.lrs {lrs}")


@dataclass(frozen=True)
class Train(Run):
    """Every arm at learning rate `lr`, e.g. train_lr-0.01."""

    kind: ClassVar[str] = "train"
    lr: float

    def __post_init__(self) -> None:
        if not self.lr > 0:
            raise ValueError(f"not an outlier-features run: lr {self.lr}")


def experiment_runs(cfg: dict) -> dict[str, list[Train]]:
    """Every rate feeds every figure (the low and the higher rate are the falsifiers' settings)."""
    every = [Train(float(cfg["lrs"][k])) for k in ("high", "low", "higher")]
    return {"kurtosis_vs_step": every, "loss_vs_step": every, "kurtosis_vs_correlation": every}


def config_errors(cfg: dict) -> list[str]:
    """What the schema cannot check: the rates are ordered, the heads divide the width, evaluations
    land on the last step."""
    errors = []
    lrs = cfg["lrs"]
    if not lrs["low"] < lrs["high"] < lrs["higher"]:
        errors.append(f"{PAPER}.lrs {lrs}: must be low < high < higher")
    m = cfg["model"]
    if m["width"] % m["heads"]:
        errors.append(f"{PAPER}.model.width {m['width']} is not a multiple of {PAPER}.model.heads "
                      f"{m['heads']}")
    if cfg["steps"] % cfg["eval_every"]:
        errors.append(f"{PAPER}.steps {cfg['steps']} is not a multiple of {PAPER}.eval_every "
                      f"{cfg['eval_every']}: the last evaluation must be the last step")
    return errors


def run_config(cfg: dict, run: str) -> dict:
    """The keys that define one run (its rate is in its name)."""
    return {k: cfg[k] for k in RUN_KEYS}


# ---------------------------------------------------------------- data


def corpus_bytes(path: str | Path = CORPUS) -> bytes:
    """The committed corpus, checked against CORPUS_MD5 (a changed or corrupt copy is an error)."""
    data = Path(path).read_bytes()
    got = hashlib.md5(data).hexdigest()
    if got != CORPUS_MD5:
        raise ValueError(f"{path}: md5 {got}, expected {CORPUS_MD5}; fix: restore the committed file "
                         f"(git checkout -- {Path(path).name}), the corpus every run of this paper reads")
    return data


def data_job(job: Job) -> None:
    """Check the committed corpus's md5 and write its bytes where the training jobs read them."""
    from replikit.core.io import _atomic

    data = corpus_bytes()
    _atomic(job.output["data"], lambda tmp: Path(tmp).write_bytes(data))
    print(f"{CORPUS.name}: {len(data)} bytes, md5 {CORPUS_MD5}")


def load_tokens(path: str) -> torch.Tensor:
    """The prepared corpus as byte tokens (int64), checked again against its md5."""
    return torch.frombuffer(bytearray(corpus_bytes(path)), dtype=torch.uint8).long()


def windows(tokens: torch.Tensor, lo: int, hi: int, count: int, length: int,
            generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """`count` random windows of `length` + 1 bytes from tokens[lo:hi]: inputs and next-byte targets."""
    starts = torch.randint(lo, hi - length - 1, (count,), generator=generator)
    x = tokens[starts[:, None] + torch.arange(length + 1)]
    return x[:, :-1], x[:, 1:]


# ---------------------------------------------------------------- one network


def build_model(cfg: dict, arm: Arm, seed: int):
    from replikit.models.outlier_lm import OutlierLM, OutlierLMConfig

    m = cfg["model"]
    net = OutlierLMConfig(seq_len=m["seq_len"], depth=m["depth"], width=m["width"], heads=m["heads"],
                          block=arm.block, beta=arm.beta)
    return OutlierLM(net, torch.Generator().manual_seed(derive_seed(seed, "init")))


@torch.no_grad()
def evaluate(model, x: torch.Tensor, y: torch.Tensor) -> dict:
    """Loss, and per block (the residual stream leaving it) the activation kurtosis and token similarity."""
    from replikit.methods.token_geometry import token_similarity
    from replikit.models.outlier_lm import activation_kurtosis

    hs = model.hidden_states(x)
    loss = F.cross_entropy(model.logits(hs).flatten(0, 1), y.flatten()).item()
    return {"loss": loss, "kurtosis": [activation_kurtosis(h).item() for h in hs[1:]],
            "correlation": [token_similarity(h).mean().item() for h in hs[1:]]}


def train_arm(cfg: dict, arm: Arm, lr: float, seed: int, tokens: torch.Tensor) -> dict:
    """One arm at rate `lr`: its curve of evaluations, every `eval_every` steps from step 0."""
    model = build_model(cfg, arm, seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr, eps=arm.eps)
    length, split = cfg["model"]["seq_len"], int(TRAIN_SHARE * len(tokens))
    x_eval, y_eval = windows(tokens, split, len(tokens), cfg["eval_sequences"], length,
                             torch.Generator().manual_seed(derive_seed(seed, "eval")))
    g = torch.Generator().manual_seed(derive_seed(seed, "batches"))
    curve, diverged_at = [], None
    for step in range(cfg["steps"] + 1):
        if step % cfg["eval_every"] == 0:
            curve.append({"step": step, **evaluate(model, x_eval, y_eval)})
        if step == cfg["steps"]:
            break
        x, y = windows(tokens, 0, split, cfg["batch_size"], length, g)
        loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
        if not math.isfinite(loss.item()):
            diverged_at = step
            break
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return {"arm": arm.name, "block": arm.block, "beta": arm.beta, "eps": arm.eps, "lr": lr,
            "diverged_at": diverged_at, "curve": curve}


def run(spec: Train | str, cfg: dict, seed: int, data_path: str, device: torch.device | str = "cpu") -> dict:
    """Every arm of one run for one seed, JSON-ready. `cfg` is the run's config,
    `run_config(section, run)`."""
    spec = Train.parse(spec) if isinstance(spec, str) else spec
    seed_everything(seed, device=torch.device(device))
    start, tokens = time.time(), load_tokens(data_path)
    out, todo = [], arms_at(cfg, spec.lr)
    report = Progress("arm", len(todo))
    for k, arm in enumerate(todo, 1):
        out.append(train_arm(cfg, arm, spec.lr, seed, tokens))
        last = out[-1]["curve"][-1]
        report.update(k, arm=arm.name, loss=last["loss"], kurtosis=max(last["kurtosis"]))
    return {"lr": spec.lr, "arms": out, "elapsed_s": round(time.time() - start, 2)}


# ---------------------------------------------------------------- jobs (see papers.interface)

RUN_FILES = {"metrics": f"{RESULTS}/runs/{{run}}/seed{{seed}}/metrics.json"}


def train_job(job: Job) -> None:
    """One (run, seed) job: every arm, written with the run's config."""
    seed = int(job.wildcards["seed"])
    job.write("metrics", run(job.wildcards["run"], job.cfg, seed, job.input["data"], job.device))


RUNS = Runs(PAPER, Train, experiment_runs, RUN_FILES, stages=(
    Stage("data", {"data": DATA}, data_job, config=lambda cfg, w: {"md5": CORPUS_MD5}, runtime=5,
          mem_mb=500, gpu=False, threads=False),
    Stage("train", RUN_FILES, train_job, inputs=lambda cfg, w: {"data": DATA},
          config=lambda cfg, w: run_config(cfg, w.run)),
), config_errors=config_errors)


# ---------------------------------------------------------------- cost (the plan)


def cost(cfg: dict, run: str):
    """The plan's cost model of one job (`replikit.plan.bill`): every arm's `steps` Adam steps of
    `batch_size` windows (the evaluations, forward only on `eval_sequences` windows every `eval_every`
    steps, are left out: a few percent)."""
    from replikit.methods.step_cost import JobPlan, Piece, Setup, fake_module

    rc = run_config(cfg, run)
    m, lr = rc["model"], Train.parse(run).lr

    def setup_of(arm: Arm):
        def setup() -> Setup:
            """outlier_features.train_arm: one Adam step on a batch of windows."""
            model = fake_module(lambda: build_model(rc, arm, 0))
            x = torch.zeros(rc["batch_size"], m["seq_len"], dtype=torch.long)
            opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=arm.eps)
            return Setup(model, lambda: F.cross_entropy(model(x).flatten(0, 1), x.flatten()), opt, [x])
        return setup

    pieces = [Piece(("of-step", arm.block, m["width"], m["depth"], m["seq_len"], rc["batch_size"]),
                    setup_of(arm), rc["steps"]) for arm in arms_at(rc, lr)]
    return JobPlan(pieces, f"{len(pieces)} arms x {rc['steps']} steps", f"{PAPER}.batch_size")
