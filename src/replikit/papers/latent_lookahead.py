"""Noci et al. (2026), "Thinking into the Future: Latent Lookahead Training for Transformers".

A run trains one small GPT on one planning task with one method and is named

    train_task-{task}_method-{ntp|pause|lookahead}_tau-{T}_mask-{bidir|causal}

where T is a number of latent steps / pause tokens, or `A` for "the task's answer length"
(resolved from the generated data); NTP runs have tau 0, and NTP and pause runs the mask bidir,
e.g. train_task-sudoku4_method-ntp_tau-0_mask-bidir or
train_task-sudoku9_method-lookahead_tau-A_mask-causal. The accuracy table, training curves, tau
scaling and mask ablation share runs with the same name, so each runs once.
"""

from __future__ import annotations

import shutil
import time
from contextlib import nullcontext
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import ClassVar

import torch

from replikit.core.device import describe
from replikit.core.io import tensor_digest, write_json
from replikit.core.seeding import seed_everything
from replikit.core.training import LoopConfig, Stopwatch, make_optimizer, train_loop
from replikit.data.tasks import planning as pl
from replikit.models import lookahead_gpt as lg
from replikit.papers import unique_runs
from replikit.papers.interface import Job, Runs, Stage
from replikit.papers.interface import Run as NamedRun
from replikit.reporting.provenance import run_fingerprint

PAPER = "latent_lookahead"
RESULTS = "results/latent_lookahead"
METHODS = ("ntp", "pause", "lookahead")
TASK_PATTERN = "|".join(pl.TASKS)  # the data stage's {task} wildcard


@dataclass(frozen=True)
class RunSpec(NamedRun):
    """One training run: task, method, latent steps / pauses (int or "A") and latent mask, e.g.
    train_task-sudoku4_method-lookahead_tau-3_mask-bidir."""

    kind: ClassVar[str] = "train"
    task: str
    method: str
    tau: int | str = 0
    mask: str = "bidir"

    def __post_init__(self) -> None:
        if self.task not in pl.TASKS:
            raise ValueError(f"unknown task {self.task!r}; choose one of {pl.TASKS}")
        if self.method not in METHODS:
            raise ValueError(f"unknown method {self.method!r}; choose one of {METHODS}")
        if self.method != "ntp" and not (self.tau == "A" or (isinstance(self.tau, int) and self.tau >= 1)):
            raise ValueError(f"{self.method} needs tau >= 1 or 'A', got {self.tau!r}")
        if self.mask not in ("bidir", "causal"):
            raise ValueError(f"unknown latent mask {self.mask!r}; use bidir or causal")
        # one run, one name: NTP has no latent steps, and only lookahead has a latent mask
        if (self.method == "ntp" and self.tau != 0) or (self.method != "lookahead" and self.mask != "bidir"):
            raise ValueError(f"{self.method} run with tau={self.tau!r}, mask={self.mask!r}: NTP runs have "
                             "tau 0, and NTP and pause runs the mask 'bidir'")


def _tau(v: int | str) -> int | str:
    return "A" if v == "answer" else int(v)


def method_runs(task: str, tau: int | str) -> list[RunSpec]:
    """NTP, pause and (bidirectional) lookahead on one task at one tau."""
    return [RunSpec(task, "ntp"), RunSpec(task, "pause", _tau(tau)), RunSpec(task, "lookahead", _tau(tau))]


def experiment_runs(cfg: dict) -> dict[str, list[RunSpec]]:
    """The runs each figure needs, from the paper's config section."""
    main = [r for task in cfg["tasks"] for r in method_runs(task, cfg["training"][task]["tau"])]
    # LL-1/2/3/6's falsifier: the same puzzles in naked-single order, with sudoku4's settings
    if "sudoku4" in cfg["tasks"] and cfg.get("singles", {}).get("run", True):
        main += method_runs("sudoku4_singles", cfg["training"]["sudoku4"]["tau"])
    ts = cfg["tau_scaling"]
    scaling = [RunSpec(ts["task"], "ntp")] + [RunSpec(ts["task"], "lookahead", _tau(t)) for t in ts["taus"]]
    ab = cfg["ablation"]["task"]
    ab_tau = _tau(cfg["training"][ab]["tau"])
    ablation = [RunSpec(ab, "lookahead", ab_tau, m) for m in ("bidir", "causal")]
    # `run: false` (a budget cut, e.g. a rung of the scale ladder): the experiment is not run
    scaling = scaling if ts.get("run", True) else []
    ablation = ablation if cfg["ablation"].get("run", True) else []
    examples = {f"{t}_example": [RunSpec(t, "lookahead", _tau(cfg["training"][t]["tau"]))]
                if t in cfg["tasks"] else [] for t in ("maze", "sudoku9")}
    return {"accuracy_table": main, "training_curves": main, "tau_scaling": scaling,
            "ablation_mask": ablation, **examples}


def all_runs(cfg: dict) -> list[RunSpec]:
    return unique_runs(experiment_runs(cfg))


# Keys of the paper's config that define a training run of a task; other tasks' settings,
# experiment lists and resources are left out, so editing them retrains nothing.
def training_config(cfg: dict, task: str) -> dict:
    """The part of the paper's config that defines a training run on `task` (the `performance`
    switches only when they differ from their defaults, so adding them reran no finished job)."""
    own = pl.settings_task(task)
    out = {"task": task, "data": cfg["data"][own], "training": cfg["training"][own],
           "model": cfg["model"], "optimizer": cfg["optimizer"], "eval_max": cfg["eval_max"],
           "bf16": cfg["bf16"]}
    perf = {**PERFORMANCE, **cfg.get("performance", {})}
    if perf != PERFORMANCE:
        out["performance"] = perf
    return out


PERFORMANCE = {"kv_cache": "auto", "checkpoint_rollout": "auto", "fused_adam": "auto"}  # schema defaults
LOSS_BATCH = 256  # training examples whose loss each evaluation records
CHECKPOINT_TAU = 32  # auto checkpointing of the rollout above this many latent steps (on CUDA)


def performance(cfg: dict, device: torch.device, tau: int = 0) -> dict[str, bool]:
    """The run's switches with `auto` resolved: on on CUDA (checkpointing: when tau > 32), off
    elsewhere, so CPU runs keep the reference's numbers bitwise."""
    perf = {**PERFORMANCE, **cfg.get("performance", {})}
    cuda = device.type == "cuda"
    auto = {"kv_cache": cuda, "fused_adam": cuda, "checkpoint_rollout": cuda and tau > CHECKPOINT_TAU}
    return {k: auto[k] if v == "auto" else bool(v) for k, v in perf.items()}


# ---------------------------------------------------------------- one training run


class Run:
    """One seed of one RunSpec: task tensors on the device, model, method-specific loss."""

    def __init__(self, spec: RunSpec, cfg: dict, ds, seed: int, device: torch.device) -> None:
        self.spec, self.cfg, self.seed, self.device = spec, cfg, seed, device
        self.train_prompt, self.train_answer = (t.to(device) for t in pl.to_tensors(ds, "train"))
        test_prompt, test_answer = pl.to_tensors(ds, "test")
        self.data_id = tensor_digest(self.train_prompt, self.train_answer, test_prompt, test_answer)
        k = cfg["eval_max"]
        self.test_prompt, self.test_answer = test_prompt[:k].to(device), test_answer[:k].to(device)
        self.answer_len = self.train_answer.shape[1]
        self.tau = self.answer_len if spec.tau == "A" else int(spec.tau)
        if spec.method == "lookahead" and self.tau > self.answer_len:
            raise ValueError(f"{spec.name}: tau={self.tau} exceeds the answer length {self.answer_len}")
        self.generator = seed_everything(seed, device=device)
        self.perf = performance(cfg, device, self.tau)
        m, t = cfg["model"], cfg["training"]
        self.model = lg.LookaheadGPT(lg.GPTConfig(
            vocab_size=pl.VOCAB_SIZE, block_size=m["block_size"], n_layer=m["n_layer"],
            n_head=m["n_head"], n_embd=m["n_embd"], dropout=t["dropout"])).to(device)
        self.steps_per_epoch = self.n // min(t["batch_size"], self.n)

    @property
    def n(self) -> int:
        return self.train_prompt.shape[0]

    def _autocast(self):
        if self.cfg["bf16"] and self.device.type == "cuda":
            return torch.autocast("cuda", dtype=torch.bfloat16)
        return nullcontext()

    def method_loss(self, prompt: torch.Tensor, answer: torch.Tensor) -> torch.Tensor:
        s = self.spec
        with self._autocast():
            if s.method == "ntp":
                return lg.ntp_loss(self.model, prompt, answer, pl.PAD)
            if s.method == "pause":
                return lg.pause_loss(self.model, prompt, answer, pl.PAD, pl.PAUSE, self.tau)
            return lg.lookahead_loss(self.model, prompt, answer, pl.PAD, self.tau, s.mask == "bidir",
                                     kv_cache=self.perf["kv_cache"],
                                     checkpoint=self.perf["checkpoint_rollout"])

    def loss(self, idx: torch.Tensor) -> torch.Tensor:
        idx = idx.to(self.device)
        return self.method_loss(self.train_prompt[idx], self.train_answer[idx])

    def predict(self, prompt: torch.Tensor, chunk: int = 256) -> torch.Tensor:
        out = []
        with self._autocast():
            for s in range(0, prompt.shape[0], chunk):
                out.append(lg.generate(self.model, prompt[s:s + chunk], self.answer_len, self.spec.method,
                                       self.tau, pl.PAUSE, self.spec.mask == "bidir", self.perf["kv_cache"]))
        return torch.cat(out)

    def exact_match(self, prompt: torch.Tensor) -> float:
        """Fraction of prompts whose greedy answer the task's verifier accepts."""
        pred = self.predict(prompt).tolist()
        prompts = prompt.tolist()
        ok = [pl.verify(self.spec.task, p, a, self.cfg["data"]) for p, a in zip(prompts, pred, strict=True)]
        return sum(ok) / len(ok)

    def examples(self, k: int = 4) -> list[dict]:
        """The first k held-out prompts with the true and the generated answer, for the figures that
        draw one maze or one Sudoku."""
        self.model.eval()
        with torch.no_grad():
            pred = self.predict(self.test_prompt[:k]).tolist()
        prompts, answers = self.test_prompt[:k].tolist(), self.test_answer[:k].tolist()
        return [{"prompt": p, "answer": a, "prediction": q,
                 "correct": pl.verify(self.spec.task, p, q, self.cfg["data"])}
                for p, a, q in zip(prompts, answers, pred, strict=True)]

    def loss_terms(self, k: int = LOSS_BATCH) -> dict[str, float]:
        """Lookahead's two loss terms on a fixed batch (the first `k` training examples), without
        dropout, so a plateau shows in each (the history's `train_loss` is the epoch's running mean
        of their sum); empty for NTP and pause, whose loss has one term."""
        if self.spec.method != "lookahead":
            return {}
        self.model.eval()
        with torch.no_grad(), self._autocast():
            nxt, lat = lg.lookahead_terms(self.model, self.train_prompt[:k], self.train_answer[:k], pl.PAD,
                                          self.tau, self.spec.mask == "bidir", kv_cache=self.perf["kv_cache"])
        self.model.train()
        return {"next_token_loss": float(nxt), "latent_loss": float(lat)}

    def evaluate(self, epoch: int) -> dict[str, float]:
        return {"step": epoch * self.steps_per_epoch, "exact_match": self.exact_match(self.test_prompt),
                **self.loss_terms()}

    def make_optimizer(self, name: str, lr: float) -> torch.optim.Optimizer:
        if name == "adam" and self.perf["fused_adam"]:
            return torch.optim.Adam(self.model.parameters(), lr=lr, fused=True)
        return make_optimizer(name, self.model.parameters(), lr)

    def train(self, checkpoint: str | None = None, progress: bool = True,
              stopwatch: Stopwatch | None = None) -> list[dict[str, float]]:
        """Train; `stopwatch`, when given, is checkpointed with the run (its seconds span every part
        of a resumed run)."""
        t = self.cfg["training"]
        o = self.cfg["optimizer"]
        opt = self.make_optimizer(o["name"], o["lr"])
        loop = LoopConfig(epochs=t["epochs"], batch_size=t["batch_size"], eval_every=t["eval_every"],
                          checkpoint_every=t["checkpoint_every"])
        fingerprint = run_fingerprint(self.spec.name, self.seed, self.cfg, self.data_id, module=__name__)
        return train_loop(self.model, opt, self.loss, self.n, loop, self.generator, self.evaluate,
                          checkpoint=checkpoint, progress=progress, fingerprint=fingerprint,
                          state_objects={"torch_rng": TorchRNG(),
                                         **({"stopwatch": stopwatch} if stopwatch else {})})


class TorchRNG:
    """Checkpointable global torch RNG state (dropout draws from it), so a resumed run with
    dropout ends bitwise identical to an uninterrupted one."""

    def state_dict(self) -> dict:
        state = {"cpu": torch.get_rng_state()}
        if torch.cuda.is_available():
            state["cuda"] = torch.cuda.get_rng_state_all()
        return state

    def load_state_dict(self, state: dict) -> None:
        torch.set_rng_state(state["cpu"])
        if "cuda" in state and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state["cuda"])


def load_dataset(path: str):
    """The task dataset saved by the data rule (a clear error when it is missing)."""
    import datasets

    try:
        return datasets.load_from_disk(path)
    except FileNotFoundError as e:
        raise FileNotFoundError(f"no latent-lookahead task dataset at {path}: run its data rule") from e


def load_run(run: str, seed: int | str, cfg: dict, data_path: str, device: torch.device) -> Run:
    spec = RunSpec.parse(run)
    if spec.task != cfg["task"]:
        raise ValueError(f"run {run} is on {spec.task} but its config is for {cfg['task']}")
    return Run(spec, cfg, load_dataset(data_path), int(seed), device)


# ---------------------------------------------------------------- throughput benchmark

PEAK_BF16_FLOPS = {"H100": 989e12, "H200": 989e12, "A100": 312e12}  # dense bf16 tensor-core peaks


def _peak(device: torch.device) -> float | None:
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    return next((v for k, v in PEAK_BF16_FLOPS.items() if k in name), None)


def benchmark(cfg: dict, ds, device: torch.device, batch_size: int, steps: int) -> dict:
    """Training tokens/s (visible prompt + answer tokens) of NTP, pause and lookahead on the same
    model and batches; FLOPs per step counted with torch's FlopCounterMode; on a known GPU the
    fraction of the bf16 matmul peak."""
    from torch.utils.flop_counter import FlopCounterMode

    out: dict = {}
    tau = cfg["training"]["tau"]
    for method in METHODS:
        spec = RunSpec(cfg["task"], method, 0 if method == "ntp" else _tau(tau))
        run = Run(spec, cfg, ds, 0, device)
        opt = run.make_optimizer("adam", 1e-4)
        b = min(batch_size, run.n)
        prompt, answer = run.train_prompt[:b], run.train_answer[:b]

        def step(run=run, opt=opt, prompt=prompt, answer=answer) -> None:
            loss = run.method_loss(prompt, answer)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()

        run.model.train()
        with FlopCounterMode(display=False) as fc:
            step()  # warm-up, counted
        flops = fc.get_total_flops()
        if device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        if device.type == "cuda":
            torch.cuda.synchronize()
        dt = (time.perf_counter() - t0) / steps
        tokens = b * (prompt.shape[1] + answer.shape[1])
        peak = _peak(device)
        out[method] = {"tau": run.tau if method != "ntp" else 0, "s_per_step": dt,
                       "tokens_per_s": tokens / dt, "flops_per_step": flops,
                       "achieved_flops_per_s": flops / dt,
                       "bf16_peak_fraction": flops / dt / peak if peak else None}
    out["lookahead_slowdown_vs_ntp"] = out["ntp"]["tokens_per_s"] / out["lookahead"]["tokens_per_s"]
    out["batch_size"] = b
    out["spec"] = asdict(RunSpec(cfg["task"], "lookahead", _tau(tau)))
    return out


# ---------------------------------------------------------------- jobs (see papers.interface)

RUN_FILES = {"metrics": f"{RESULTS}/runs/{{run}}/seed{{seed}}/metrics.json"}


def data_dir(task: str) -> str:
    return f"resources/latent_lookahead/{task}"


def data_job(job: Job) -> None:
    """Generate one task (seeded), check every answer with the task's verifier, save it."""
    task, cfg = job.wildcards["task"], job.cfg
    ds = pl.build_dataset(task, cfg)
    bad = sum(not pl.verify(task, p, a, cfg) for p, a in zip(ds["prompt"], ds["answer"], strict=True))
    if bad:
        raise RuntimeError(f"{task}: {bad} generated answers fail their own verifier")
    out, tmp = Path(job.output["data"]), Path(job.output["data"] + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    ds.save_to_disk(str(tmp))
    tmp.replace(out)
    print(task, len(ds), {s: ds["split"].count(s) for s in set(ds["split"])},
          "max prompt", max(map(len, ds["prompt"])), "max answer", max(map(len, ds["answer"])))


def train_job(job: Job) -> None:
    """Train one run (one seed) and write its held-out exact-match history."""
    run = load_run(job.wildcards["run"], job.wildcards["seed"], job.cfg, job.input["data"], job.device)
    clock = Stopwatch()
    history = run.train(checkpoint=job.scratch, stopwatch=clock)
    job.write("metrics", {
        "spec": run.spec.__dict__, "tau": run.tau, "answer_len": run.answer_len, "history": history,
        "final": history[-1], "elapsed_s": round(clock.seconds(), 1), "parts": clock.parts, "n_train": run.n,
        "n_eval": int(run.test_prompt.shape[0]), "steps": history[-1]["step"], "examples": run.examples(),
    })


def benchmark_job(job: Job) -> None:
    """Training tokens/s of NTP, pause and lookahead on the same model and batch."""
    cfg, b = job.cfg["training_config"], job.cfg["benchmark"]
    res = benchmark(cfg, load_dataset(job.input["data"]), job.device, b["batch_size"], b["steps"])
    out = {"device": describe(job.device), "threads": torch.get_num_threads(), "task": cfg["task"],
           "model": cfg["model"], "steps": b["steps"], **res}
    write_json(job.output["benchmark"], out)
    print(out)


RUNS = Runs(PAPER, RunSpec, experiment_runs, RUN_FILES, stages=(
    Stage("data", {"data": data_dir("{task}")}, data_job,
          config=lambda cfg, w: cfg["data"][pl.settings_task(w.task)],
          wildcards={"task": TASK_PATTERN}, runtime=60, mem_mb=4000, gpu=False, threads=False,
          directory=True),
    Stage("train", RUN_FILES, train_job, inputs=lambda cfg, w: {"data": data_dir(RunSpec.parse(w.run).task)},
          config=lambda cfg, w: training_config(cfg, RunSpec.parse(w.run).task),
          scratch=f"{RESULTS}/checkpoints/{{run}}_seed{{seed}}.ckpt"),
    Stage("benchmark", {"benchmark": f"{RESULTS}/benchmark.json"}, benchmark_job,
          inputs=lambda cfg, w: {"data": data_dir(cfg["benchmark"]["task"])},
          config=lambda cfg, w: {"training_config": training_config(cfg, cfg["benchmark"]["task"]),
                                 "benchmark": cfg["benchmark"]}, runtime=30, benchmark=True),
))
