"""Musat, Pimentel, Noci, Stolfo, Sachan, Hofmann (2025), "On the Emergence of Induction Heads for
In-Context Learning" (arXiv 2511.01033): runs and the training job.

One job per (run, seed), which trains one network per context length in turn:

    train[_optimizer-adam]

`train` is the paper's setting, plain SGD; `train_optimizer-adam` trains the same networks under Adam at
rate `adam_lr` instead, IH-1's falsifier (config key `adam_lr`; null: not trained).

The task (our reading of "a minimal ICL task formulation"; the paper's is in its body): a sequence of
N item-label pairs and a query, 2N + 1 tokens from a vocabulary of V,

    x_1 y_1 x_2 y_2 ... x_N y_N x_q,    the answer y_q,

with the items x_i distinct (drawn without replacement), the labels y_i uniform (repeats allowed) and
the query one of the items, uniform. Only an in-context lookup answers it: the pairs are fresh in every
sequence. N is the context length the claims scale.

The model is `replikit.models.disentangled_transformer` (two attention-only layers, concatenated residual
stream, one-hot tokens and positions, zero initialization), trained by plain SGD at a constant rate on the
squared error between its output and the answer's one-hot code, on fresh sequences every step (the
population loss, sampled). Every `eval_every` steps, on a fixed set of `eval_sequences` sequences, the
accuracy (argmax of the output = the answer) and the loss are measured. Under Adam everything but the
optimizer and its rate is the same, the cap `max_steps` included.

Emergence time (defined before any run, in the config): the first step at which the evaluation accuracy
reaches `chance + emergence_level * (1 - chance)`, with chance = 1 / N (the accuracy of a guess among the
context's labels, which needs no induction head), interpolated linearly between the two evaluations
around the crossing. A run stops at the first evaluation at or after `stop_after` times its emergence
time whose accuracy is at least `plateau_accuracy` (emerged and plateaued), or at `max_steps`, the cap:
a run that has not emerged by then is censored, and has no emergence time.

The parameter trajectory: snapshots of every parameter at evaluation steps, evenly spaced (at most
`snapshots`, methods/trajectory.py), from which the job computes the principal directions' shares of
the variance within the emergence window, `pca_window` times the emergence time.

Pairing: within a seed, the evaluation sequences of a context length are fixed; the training sequences
are drawn from a generator of (seed, N).

Checkpoints: a job saves its finished networks and, every `CHECKPOINT_STEPS` steps, the one in training
(weights, optimizer, generator, curve, snapshots), so a job stopped (a session's end, a cluster's time
limit) and started again resumes where it stopped and ends bitwise identical to an uninterrupted one.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

import torch
import torch.nn.functional as F

from replikit.core.io import torch_save
from replikit.core.progress import Progress
from replikit.core.seeding import derive_seed, seed_everything
from replikit.core.training import Stopwatch, load_checkpoint
from replikit.papers.interface import OMITTED_AT_DEFAULT, Job, Run, Runs, Stage

PAPER = "induction_heads"
RESULTS = f"results/{PAPER}"
RUN_FILES = {"metrics": f"{RESULTS}/runs/{{run}}/seed{{seed}}/metrics.json"}
RUN_KEYS = ("contexts", "vocab", "lr", "batch_size", "eval_every", "eval_sequences", "emergence_level",
            "stop_after", "plateau_accuracy", "max_steps", "snapshots", "pca_window")
PCA_KEEP = 10  # principal directions written per run
CHECKPOINT_STEPS = 10_000  # steps between checkpoints of the network in training (about 3 min at N = 64)
OPTIMIZERS = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam}
MIN_SPAN = 8  # the contexts must span at least this factor for an exponent (issue 35)


@dataclass(frozen=True)
class Train(Run):
    """Every context length, one network each, under SGD (`train`) or another optimizer
    (`train_optimizer-adam`)."""

    kind: ClassVar[str] = "train"
    optimizer: str = field(default="sgd", metadata=OMITTED_AT_DEFAULT)


def experiment_runs(cfg: dict) -> dict[str, list[Train]]:
    """Every figure reads the SGD run; the emergence-time figure the Adam run too, where it is trained."""
    adam = [Train("adam")] if cfg.get("adam_lr") is not None else []
    return {"accuracy_curves": [Train()], "emergence_scaling": [Train(), *adam], "trajectory_pca": [Train()]}


def config_errors(cfg: dict) -> list[str]:
    """What the schema cannot check: distinct items fit the vocabulary, the stopping rule covers the
    window, the window has two sides."""
    errors, key = [], PAPER
    if max(cfg["contexts"]) > cfg["vocab"]:
        errors.append(f"config key '{key}.contexts' has {max(cfg['contexts'])} pairs, more than "
                      f"'{key}.vocab' ({cfg['vocab']}) distinct items: raise the vocabulary or shorten "
                      "the context")
    lo, hi = cfg["pca_window"]
    if not 0 <= lo < hi:
        errors.append(f"config key '{key}.pca_window' {cfg['pca_window']} is not [start, stop] with "
                      "0 <= start < stop (fractions of the emergence time)")
    if cfg["stop_after"] < hi:
        errors.append(f"config key '{key}.stop_after' ({cfg['stop_after']}) stops a run before the end of "
                      f"'{key}.pca_window' ({hi}): set stop_after >= {hi}")
    if cfg.get("adam_lr") is None and max(cfg["contexts"]) >= MIN_SPAN * min(cfg["contexts"]):
        errors.append(f"config key '{key}.adam_lr' is null, but the contexts {sorted(cfg['contexts'])} span "
                      f"a factor of {MIN_SPAN} or more, so IH-1 would be judged without its falsifier "
                      f"(Adam): set '{key}.adam_lr' (e.g. 0.001, Adam's usual rate)")
    return errors


def run_config(cfg: dict, run: str) -> dict:
    """The keys that define the run: under Adam, its rate `adam_lr` is the run's `lr`."""
    spec = Train.parse(run)
    out = {k: cfg[k] for k in RUN_KEYS}
    if spec.optimizer != "sgd":
        out.update(optimizer=spec.optimizer, lr=cfg[f"{spec.optimizer}_lr"])
    return out


# ---------------------------------------------------------------- the task


def sequences(n_pairs: int, vocab: int, count: int, generator: torch.Generator,
              device: torch.device | str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """`count` sequences x_1 y_1 ... x_N y_N x_q (tokens, (count, 2N + 1)) and their answers y_q."""
    items = torch.rand(count, vocab, generator=generator).argsort(1)[:, :n_pairs]
    labels = torch.randint(0, vocab, (count, n_pairs), generator=generator)
    pick = torch.randint(0, n_pairs, (count, 1), generator=generator)
    pairs = torch.stack([items, labels], 2).reshape(count, 2 * n_pairs)
    tokens = torch.cat([pairs, items.gather(1, pick)], 1)
    return tokens.to(device), labels.gather(1, pick)[:, 0].to(device)


def threshold(n_pairs: int, level: float) -> float:
    """The accuracy that marks emergence: `level` of the way from chance (1 / N) to 1."""
    chance = 1.0 / n_pairs
    return chance + level * (1.0 - chance)


def crossing(curve: list[dict], level: float) -> float | None:
    """The first step at which the curve's accuracy reaches `level`, interpolated linearly between
    evaluations (None: never)."""
    for prev, point in zip([None, *curve[:-1]], curve, strict=True):
        if point["accuracy"] >= level:
            if prev is None or point["accuracy"] == prev["accuracy"]:
                return float(point["step"])
            frac = (level - prev["accuracy"]) / (point["accuracy"] - prev["accuracy"])
            return prev["step"] + frac * (point["step"] - prev["step"])
    return None


# ---------------------------------------------------------------- one network


def loss_of(output: torch.Tensor, answer: torch.Tensor) -> torch.Tensor:
    """Half the squared error to the answer's one-hot code, summed over the vocabulary, mean over
    sequences."""
    return 0.5 * (output - F.one_hot(answer, output.shape[1]).to(output.dtype)).pow(2).sum(1).mean()


def train_context(n_pairs: int, cfg: dict, seed: int, device: torch.device, resume: dict | None = None,
                  save: Callable[[dict], None] | None = None) -> dict:
    """One network at context length N, until it has emerged and plateaued or hits the cap. `save`,
    when given, gets the network's state every `CHECKPOINT_STEPS` steps; `resume`, such a state,
    continues from it."""
    from replikit.methods.trajectory import SnapshotBuffer, pca_shares, random_walk_shares
    from replikit.models.disentangled_transformer import DisentangledTransformer

    vocab, every = cfg["vocab"], cfg["eval_every"]
    model = DisentangledTransformer(vocab, 2 * n_pairs + 1).to(device)
    opt = OPTIMIZERS[cfg.get("optimizer", "sgd")](model.parameters(), lr=cfg["lr"])
    x_eval, y_eval = sequences(n_pairs, vocab, cfg["eval_sequences"],
                               torch.Generator().manual_seed(derive_seed(seed, "eval", n_pairs)), device)
    g = torch.Generator().manual_seed(derive_seed(seed, "train", n_pairs))
    level = threshold(n_pairs, cfg["emergence_level"])
    buffer = SnapshotBuffer(cfg["snapshots"], every)
    curve, emerged, diverged_at, step, first = [], None, None, 0, 0
    if resume is not None:
        model.load_state_dict(resume["model"])
        opt.load_state_dict(resume["optimizer"])
        g.set_state(resume["generator"])
        curve, emerged, first = resume["curve"], resume["emerged"], resume["step"]
        buffer.stride, buffer.steps, buffer.points = resume["buffer"]["stride"], resume["buffer"]["steps"], \
            list(resume["buffer"]["points"])
    for step in range(first, cfg["max_steps"] + 1):
        if step % every == 0:
            with torch.no_grad():
                out = model(x_eval)
                curve.append({"step": step, "accuracy": (out.argmax(1) == y_eval).float().mean().item(),
                              "loss": loss_of(out, y_eval).item()})
            buffer.offer(step, model.flat())
            if emerged is None:
                emerged = crossing(curve, level)
            if emerged is not None and step >= cfg["stop_after"] * emerged \
                    and curve[-1]["accuracy"] >= cfg["plateau_accuracy"]:
                break
        if step == cfg["max_steps"]:
            break
        x, y = sequences(n_pairs, vocab, cfg["batch_size"], g, device)
        loss = loss_of(model(x), y)
        if not math.isfinite(loss.item()):
            diverged_at = step
            break
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if save is not None and (step + 1) % CHECKPOINT_STEPS == 0:
            save({"context": n_pairs, "step": step + 1, "model": model.state_dict(),
                  "optimizer": opt.state_dict(), "generator": g.get_state(), "curve": curve,
                  "emerged": emerged, "buffer": {"stride": buffer.stride, "steps": buffer.steps,
                                                 "points": buffer.points}})
    pca = {"window": None, "steps": [], "shares": [], "random_walk": []}
    if emerged is not None:
        lo, hi = cfg["pca_window"]
        steps, points = buffer.between(lo * emerged, hi * emerged)
        if points is not None and len(steps) >= 3:
            pca = {"window": [lo * emerged, hi * emerged], "steps": [steps[0], steps[-1], len(steps)],
                   "shares": pca_shares(points)[:PCA_KEEP],
                   "random_walk": random_walk_shares(len(steps))[:PCA_KEEP]}
    return {"context": n_pairs, "threshold": level, "emergence_step": emerged, "censored": emerged is None,
            "stopped_at": step, "diverged_at": diverged_at, "final_accuracy": curve[-1]["accuracy"],
            "parameters": sum(p.numel() for p in model.parameters()), "curve": curve, "pca": pca}


def run(spec: Train | str, cfg: dict, seed: int, device: torch.device | str = "cpu",
        checkpoint: str | None = None) -> dict:
    """Every context length for one seed, shortest first: JSON-ready. `cfg` is the run's config,
    `run_config(section, run)`, as the train stage passes it (under Adam its `lr` is `adam_lr`). With
    `checkpoint` (a path), the finished networks and the one in training are saved there, and a
    checkpoint of this run and code found there is resumed (one of another run, config or code is
    ignored, and said so)."""
    from replikit.reporting.provenance import run_fingerprint

    name = spec if isinstance(spec, str) else spec.name
    wanted, given = Train.parse(name).optimizer, cfg.get("optimizer", "sgd")
    if given != wanted:  # a paper block passed for an Adam run would train under SGD
        raise ValueError(f"run {name} trains under {wanted}, but the config passed says {given}: pass the "
                         "run's config, run_config(section, run)")
    device = torch.device(device)
    seed_everything(seed, device=device)
    clock = Stopwatch()
    fingerprint = run_fingerprint(name, seed, cfg, module=__name__)
    state = load_checkpoint(checkpoint)
    if state is not None and state.get("fingerprint") != fingerprint:
        print(f"ignoring {checkpoint}: it belongs to another run, configuration or code; training starts "
              "from scratch", file=sys.stderr)
        state = None
    items, current = (state["items"], state["current"]) if state else ([], None)
    if state is not None:
        clock.load_state_dict(state["stopwatch"])
        print(f"resumed from {checkpoint}: {len(items)} networks finished"
              + (f", N = {current['context']} at step {current['step']}" if current else ""), file=sys.stderr)

    def save(in_training: dict | None) -> None:
        torch_save(checkpoint, {"fingerprint": fingerprint, "items": items, "current": in_training,
                                "stopwatch": clock.state_dict()})

    contexts = sorted(int(n) for n in cfg["contexts"])
    report = Progress("context", len(contexts), len(items))
    for k, n_pairs in enumerate(contexts[len(items):], len(items) + 1):  # one progress line per network
        resume = current if current is not None and current["context"] == n_pairs else None
        items.append(train_context(n_pairs, cfg, seed, device, resume, save if checkpoint else None))
        if checkpoint:
            save(None)
        last = items[-1]
        report.update(k, context=n_pairs, emergence_step=last["emergence_step"] or "censored",
                      steps=last["stopped_at"], accuracy=last["final_accuracy"])
    return {"items": items, "elapsed_s": round(clock.seconds(), 2), "parts": clock.parts}


def train_job(job: Job) -> None:
    """One (run, seed) job: every context length, written with the run's config and device."""
    seed = int(job.wildcards["seed"])
    job.write("metrics", run(job.wildcards["run"], job.cfg, seed, job.device, checkpoint=job.scratch))


RUNS = Runs(PAPER, Train, experiment_runs, RUN_FILES,
            stages=(Stage("train", RUN_FILES, train_job, config=lambda cfg, w: run_config(cfg, w.run),
                          scratch=f"{RESULTS}/checkpoints/{{run}}_seed{{seed}}.ckpt"),),
            config_errors=config_errors)
