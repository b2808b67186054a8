"""The GPU measurements that issues 33 and 38 ask for when a GPU is lent, as one short script.

    python -m replikit.tools.device_check prepare gpu_check  # here: settings, data, the plan's predictions
    python3 -m replikit.tools.device_check run gpu_check OUT --deadline 400   # on the GPU machine

`prepare` (needs the workflow's packages) resolves the paper scale (`config/paper.yaml`), writes the
4x4 Sudoku data as plain lists (the GPU machine has no `datasets`) and the plan's prediction of each
timed step: its FLOPs, its launching ops, and seconds on an H100 under the plan's assumptions.

`run` (needs torch alone) then, on the GPU:
1. **step**: times the plan's own cold-posterior steps, built by the paper's cost model (the same
   builder, real tensors on the GPU): the burn-in step of one ResNet-20 and the batched step of all
   18 chains (17 temperatures + the SGD baseline), against the plan's prediction;
2. **ll_step**: times NTP, pause and lookahead steps on 4x4 Sudoku at the paper's settings
   (`latent_lookahead.benchmark`);
3. **ll**: trains NTP, pause and lookahead at the paper's settings (d 768, tau = the answer length,
   Adam 1e-4, batch 128, bf16, 714 epochs = 9,996 steps), one process per arm and seed, all at
   once (under MPS where it starts), until the paper's steps or the deadline, whichever is first;
   every evaluation (held-out exact match and the loss on a fixed training batch) is kept, so a run
   cut by the deadline still shows how far it got.
(`prepare --task maze` trains its config's mazes instead of 4x4 Sudoku.)
Everything lands in OUT as three files: step.json, ll.json, log.txt; with `--also FOLDER` (repeatable)
the arms of other prepared folders (ladder rungs, say) train at the same time, into OUT/<its name>/ll.json.

`--kernels` or `--graphs` (on `run`, or on `steps` alone, which trains nothing) replace step 1 by
the cold-posterior batched step's cuDNN variants, its top kernels and the SG-MCMC update's own time
and kernels (`--kernels`), or by its burn-in and batched steps eager against one CUDA graph
replayed (`--graphs`).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from replikit.methods.step_cost import built_for_real

LL_TASK = "sudoku4"  # the task trained unless `prepare --task` names another
LL_SEEDS = (0, 1, 2, 3, 4)
LL_EVAL_EPOCHS = 30  # the paper block evaluates every 71 epochs; denser here, so a cut run shows its curve
FIXED_BATCH = 256  # training examples whose loss every evaluation records


# ---------------------------------------------------------------- prepare (this machine)


def cp_run(cfg: dict) -> str:
    """The cold-posterior job that the bill is made of: the plain ResNet-20, crop and flip, posterior."""
    from replikit.papers.registry import get

    wanted = ("model-plain", "augmentation-crop_flip", "prior-1.0_temper-posterior", "curation-0")
    return next(r for r in get("cold_posterior").runs_of(cfg) if all(w in r for w in wanted))


def predicted(piece, bf16: bool = False) -> dict:
    """The plan's step cost of `piece` and its predicted H100 seconds (compute and launch terms)."""
    from replikit.methods.step_cost import measure_step
    from replikit.plan.bill import ACCELERATORS, LAUNCH_S, UTILISATION, step_seconds

    c = measure_step(piece.build)
    peak = ACCELERATORS["H100"]
    compute = (c.conv_flops / peak["tf32"] + c.matmul_flops / peak["bf16" if bf16 else "fp32"]) / UTILISATION
    return {"flops": c.flops, "ops": c.ops, "peak_bytes": c.peak_bytes, "steps": piece.steps,
            "h100_compute_s": compute, "h100_launch_s": c.ops * LAUNCH_S,
            "h100_step_s": step_seconds(c, bf16, peak, UTILISATION, LAUNCH_S),
            "assumptions": {"utilisation": UTILISATION, "launch_us": LAUNCH_S * 1e6}}


def prepare(folder: Path, configs: tuple[str, ...] = ("config/paper.yaml",),
            eval_every: int = LL_EVAL_EPOCHS, task: str = LL_TASK) -> None:
    from replikit.data.tasks import planning as pl
    from replikit.papers import cold_posterior_analysis as cpa
    from replikit.papers import latent_lookahead as ll
    from replikit.papers import latent_lookahead_analysis as lla
    from replikit.plan.bill import load

    config = load(list(configs))
    cp_cfg, ll_cfg = config["cold_posterior"], config["latent_lookahead"]
    run = cp_run(cp_cfg)
    burn_in, chains = cpa.cost(cp_cfg, run).pieces
    tcfg = ll.training_config(ll_cfg, task)
    data = tcfg["data"]
    examples = pl.generate(task, data)
    ll_pred = {}
    for spec in ll.method_runs(task, tcfg["training"]["tau"]):
        (piece,) = lla.cost(ll_cfg, spec.name).pieces
        ll_pred[spec.method] = {"run": spec.name, **predicted(piece, piece.bf16)}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "check.json").write_text(json.dumps({
        "cp": {"cfg": cp_cfg, "run": run, "burn_in": predicted(burn_in), "chains": predicted(chains)},
        "ll": {"cfg": tcfg, "task": task, "predicted": ll_pred, "eval_every": eval_every,
               "configs": list(configs)},
    }, indent=1, default=str))
    (folder / f"{task}.json").write_text(json.dumps({  # plain ints (a maze's answer holds numpy's)
        "prompt": [[int(t) for t in p] for p, _ in examples],
        "answer": [[int(t) for t in a] for _, a in examples],
        "split": pl.split_names(len(examples), data["splits"], data["seed"])}))
    print(f"wrote {folder}/check.json and {folder}/{task}.json ({len(examples)} examples); "
          f"cold posterior: {run}")


# ---------------------------------------------------------------- run (the GPU machine)


def _device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def _sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def time_piece(build, steps: int, warmup: int = 3) -> float:
    """Seconds per step of a plan builder's step, built for real on the default device."""
    setup = built_for_real(build)
    for _ in range(warmup):
        setup.step()
    _sync()
    start = time.perf_counter()
    for _ in range(steps):
        setup.step()
    _sync()
    return (time.perf_counter() - start) / steps


def cp_steps(check: dict, device: torch.device, steps: int) -> dict:
    from replikit.papers import cold_posterior_analysis as cpa

    cp = check["cp"]
    burn_in, chains = cpa.cost(cp["cfg"], cp["run"]).pieces
    with device:
        one = time_piece(burn_in.build, steps)
        many = time_piece(chains.build, steps)
    n = chains.key[-2]
    return {"run": cp["run"], "chains": n,
            "burn_in": {"measured_s": one, **cp["burn_in"]},
            "batched": {"measured_s": many, **cp["chains"]},
            "batched_vs_sequential": many / (n * one)}


def cp_kernels(check: dict, steps: int) -> dict:
    """The batched cold-posterior step with cuDNN's autotuner off and on, and the kernels that take
    its time (torch.profiler, the top ten by GPU time)."""
    from torch.profiler import ProfilerActivity, profile

    from replikit.papers import cold_posterior_analysis as cpa

    cp = check["cp"]
    _, chains = cpa.cost(cp["cfg"], cp["run"]).pieces
    out = {}
    with _device():
        for flag in (False, True):
            torch.backends.cudnn.benchmark = flag
            out[f"cudnn_benchmark_{str(flag).lower()}_s"] = time_piece(chains.build, steps, warmup=5)
        setup = chains.build()
        for _ in range(3):
            setup.step()
        _sync()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(3):
                setup.step()
            _sync()
    out["top_kernels_3_steps"] = prof.key_averages().table(sort_by="cuda_time_total", row_limit=10)
    with _device():  # the sampler's update alone: its time, and the kernels it launches
        setup.optimizer.zero_grad(set_to_none=True)
        setup.loss().backward()
        for _ in range(3):
            setup.optimizer.step()
        _sync()
        start = time.perf_counter()
        for _ in range(steps):
            setup.optimizer.step()
        _sync()
        out["sampler_step_s"] = (time.perf_counter() - start) / steps
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(3):
                setup.optimizer.step()
            _sync()
    events = prof.key_averages()
    out["sampler_kernel_launches_3_steps"] = sum(e.count for e in events
                                                  if str(getattr(e, "device_type", "")).endswith("CUDA"))
    out["sampler_top_ops_3_steps"] = events.table(sort_by="cuda_time_total", row_limit=15)
    return out


def time_graph(build, steps: int, warmup: int = 3) -> float:
    """Seconds per step of a plan builder's step captured once as a CUDA graph and replayed: the
    same kernels without their launches from Python (what CUDA graphs would give a launch-bound
    step). The warm-up runs on a side stream, as torch's documentation asks before a capture."""
    setup = built_for_real(build)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(warmup):
            setup.step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    noise = getattr(setup.optimizer, "generator", None)  # the sampler's own seeded noise generator
    if noise is not None and noise.device.type == "cuda":
        graph.register_generator_state(noise)
    with torch.cuda.graph(graph):
        setup.step()
    for _ in range(warmup):
        graph.replay()
    _sync()
    start = time.perf_counter()
    for _ in range(steps):
        graph.replay()
    _sync()
    return (time.perf_counter() - start) / steps


def cp_graphs(check: dict, steps: int) -> dict:
    """The cold-posterior burn-in and batched chain steps, eager against one CUDA graph replayed, with
    the plan's compute and launch terms beside them (issue 33: how much of the step is launches)."""
    from replikit.papers import cold_posterior_analysis as cpa

    if not torch.cuda.is_available():
        return {"skipped": "CUDA graphs need a CUDA device"}
    cp = check["cp"]
    burn_in, chains = cpa.cost(cp["cfg"], cp["run"]).pieces
    out = {"chains": chains.key[-2]}
    with _device():
        for name, piece, plan in (("burn_in", burn_in, cp["burn_in"]), ("batched", chains, cp["chains"])):
            row = {"eager_s": time_piece(piece.build, steps)}
            try:
                row["graph_s"] = time_graph(piece.build, steps)
            except Exception as e:  # noqa: BLE001 - a step that cannot be captured is itself a finding
                row["graph_error"] = repr(e)
            out[name] = {**row, **{k: plan[k] for k in ("h100_compute_s", "h100_launch_s", "h100_step_s",
                                                         "ops", "flops")}}
    return out


def ll_dataset(folder: Path) -> dict:
    """The task data that `prepare` wrote (4x4 Sudoku in folders prepared before `--task` existed)."""
    task = json.loads((folder / "check.json").read_text())["ll"].get("task", LL_TASK)
    return json.loads((folder / f"{task}.json").read_text())


class Deadline(Exception):
    """The run reached the deadline."""


def train_one(folder: Path, method: str, seed: int, deadline: float, log: Path) -> None:
    """One arm and seed at the paper's settings; one JSON line per evaluation in `log`."""
    from replikit.papers import latent_lookahead as ll

    torch.set_num_threads(1)
    check = json.loads((folder / "check.json").read_text())
    cfg = check["ll"]["cfg"]
    every = check["ll"].get("eval_every", LL_EVAL_EPOCHS)
    cfg["training"] = {**cfg["training"], "eval_every": every, "checkpoint_every": 0}
    spec = ll.RunSpec.parse(check["ll"]["predicted"][method]["run"])
    run = ll.Run(spec, cfg, ll_dataset(folder), seed, _device())
    evaluate, start = run.evaluate, time.time()

    def logged(epoch: int) -> dict:
        row = evaluate(epoch)
        run.model.eval()
        with torch.no_grad():
            row["fixed_batch_loss"] = float(run.method_loss(run.train_prompt[:FIXED_BATCH],
                                                            run.train_answer[:FIXED_BATCH]))
        run.model.train()
        row.update(epoch=epoch, wall_s=round(time.time() - start, 1))
        with log.open("a") as f:
            f.write(json.dumps(row) + "\n")
        if time.time() > deadline:
            raise Deadline
        return row

    run.evaluate = logged
    try:
        run.train(checkpoint=None, progress=False)
    except Deadline:
        pass


def _mps_daemon_answers(env: dict) -> bool:
    """Whether an MPS control daemon listens on `env`'s pipe directory (it answers a query)."""
    try:
        return subprocess.run(["nvidia-cuda-mps-control"], input=b"get_server_list\n", env=env,
                              capture_output=True, timeout=20, check=False).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def start_mps(log) -> bool:
    """Start the MPS daemon (kernels of the many small runs then share the GPU at once), or join the
    one an earlier call on the same machine left running; False, and the daemon stopped, when it or a
    client does not come up."""
    env = {**os.environ, "CUDA_MPS_PIPE_DIRECTORY": "/tmp/mps", "CUDA_MPS_LOG_DIRECTORY": "/tmp/mps_log"}
    try:
        Path("/tmp/mps").mkdir(exist_ok=True)
        Path("/tmp/mps_log").mkdir(exist_ok=True)
        if not _mps_daemon_answers(env):  # a warm machine keeps the daemon of the call before
            subprocess.run(["nvidia-cuda-mps-control", "-d"], env=env, check=True, timeout=20)
        subprocess.run([sys.executable, "-c", "import torch; torch.zeros(1, device='cuda').sum().item()"],
                       env=env, check=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        print(f"MPS not used: {e}", file=log, flush=True)
        subprocess.run(["nvidia-cuda-mps-control"], input=b"quit\n", env=env, timeout=20, check=False)
        return False
    os.environ.update(CUDA_MPS_PIPE_DIRECTORY="/tmp/mps", CUDA_MPS_LOG_DIRECTORY="/tmp/mps_log")
    return True


def time_steps(folder: Path, out: Path, steps: int, kernels: bool = False, graphs: bool = False) -> None:
    """The cold-posterior and latent-lookahead steps timed against the plan (step.json); with
    `kernels`, only the cold-posterior batched step's cuDNN variants and its top kernels; with
    `graphs`, only its burn-in and batched steps eager against a CUDA graph."""
    from replikit.papers import latent_lookahead as ll

    device = _device()
    check = json.loads((folder / "check.json").read_text())
    name = torch.cuda.get_device_name(0) if device.type == "cuda" else "cpu"
    step = {"device": name, "torch": torch.__version__, "timed_steps": steps}
    if graphs:
        step["cp_graphs"] = cp_graphs(check, steps)
        (out / "step.json").write_text(json.dumps(step, indent=1, default=str))
        return
    if kernels:
        step["cp_kernels"] = cp_kernels(check, steps)
        (out / "step.json").write_text(json.dumps(step, indent=1, default=str))
        return
    try:
        step["cp"] = cp_steps(check, device, steps)
    except Exception as e:  # noqa: BLE001 - the other measurements still run; the error is reported
        step["cp_error"] = repr(e)
    try:
        step["ll"] = ll.benchmark(check["ll"]["cfg"], ll_dataset(folder), device, 128, steps)
        step["ll_predicted"] = check["ll"]["predicted"]
    except Exception as e:  # noqa: BLE001
        step["ll_error"] = repr(e)
    (out / "step.json").write_text(json.dumps(step, indent=1, default=str))


def _jsonl_rows(path: Path) -> list[dict]:
    """The JSON lines a `train` process logged (none when it never started)."""
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def run_all(folder: Path, out: Path, deadline_s: float, steps: int,
            methods: tuple[str, ...] = ("ntp", "pause", "lookahead"), kernels: bool = False,
            graphs: bool = False, also: tuple[Path, ...] = ()) -> None:
    """Steps timed (in a process of its own, so that no GPU context is open when MPS starts), then
    the arms trained at once until the deadline (seconds from now). The arms of each folder in `also`
    (another prepared folder, e.g. another ladder rung) train at the same time, under the same MPS
    daemon, into OUT/<its name>/ll.json."""
    names = [f.name for f in also]
    if len(set(names)) < len(names):
        raise SystemExit(f"--also folders need distinct names (each trains into OUT/<its name>/): {names}; "
                         "rename one")
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    log = (out / "log.txt").open("a")
    print(f"torch {torch.__version__}", file=log, flush=True)
    me = [sys.executable, "-m", "replikit.tools.device_check"]
    if steps > 0:
        subprocess.run([*me, "steps", str(folder), str(out), "--steps", str(steps)]
                       + (["--kernels"] if kernels else []) + (["--graphs"] if graphs else []),
                       stdout=log, stderr=log, check=False)
        print(f"steps timed in {time.time() - t0:.0f} s", file=log, flush=True)

    mps = torch.cuda.is_available() and start_mps(log)
    deadline = t0 + deadline_s
    targets = [(folder, out)] + [(f, out / f.name) for f in also]
    procs = {}
    for i, (src, _) in enumerate(targets):
        logs = Path(tempfile.mkdtemp(prefix=f"ll_logs_{i}_"))  # its own, so two calls never mix
        for method in methods:
            for seed in LL_SEEDS:
                path = logs / f"{method}_{seed}.jsonl"
                procs[(i, method, seed)] = (path, subprocess.Popen(
                    [*me, "train", str(src), method, str(seed), "--deadline", str(deadline),
                     "--log", str(path)],
                    stdout=log, stderr=log, env={**os.environ, "OMP_NUM_THREADS": "1"}))
    for _, proc in procs.values():
        try:
            proc.wait(timeout=max(1.0, deadline + 90 - time.time()))
        except subprocess.TimeoutExpired:
            proc.kill()
    for i, (src, dest) in enumerate(targets):
        runs = [{"method": m, "seed": s, "returncode": p.returncode, "history": _jsonl_rows(path)}
                for (j, m, s), (path, p) in procs.items() if j == i]
        check = json.loads((src / "check.json").read_text())
        dest.mkdir(parents=True, exist_ok=True)
        (dest / "ll.json").write_text(json.dumps({
            "settings": check["ll"]["cfg"], "configs": check["ll"].get("configs"), "mps": mps,
            "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu",
            "eval_every_epochs": check["ll"].get("eval_every", LL_EVAL_EPOCHS), "runs": runs}, indent=1))
    print(f"done in {time.time() - t0:.0f} s", file=log, flush=True)


# ---------------------------------------------------------------- summary (any machine)


def exact_match_at(files: list[Path]) -> dict[str, dict[int, dict[int, float]]]:
    """method -> step -> seed -> held-out exact match, from `run`'s ll.json files (a later file's
    runs of a method replace an earlier file's)."""
    out: dict[str, dict[int, dict[int, float]]] = {}
    for f in files:
        runs = json.loads(Path(f).read_text())["runs"]
        for method in {r["method"] for r in runs}:
            out[method] = {}
        for r in runs:
            for h in r["history"]:
                out[r["method"]].setdefault(h["step"], {})[r["seed"]] = h["exact_match"]
    return out


def summary(files: list[Path], steps: list[int]) -> str:
    """A markdown table: each arm's exact match (mean [min, max] over seeds) at each step, and
    lookahead minus NTP per seed where both reached the step."""
    em = exact_match_at(files)

    def cell(by_seed: dict[int, float] | None) -> str:
        if not by_seed:
            return "not reached"
        v = [100 * x for x in by_seed.values()]
        return f"{sum(v) / len(v):.1f} [{min(v):.1f}, {max(v):.1f}] ({len(v)} seeds)"

    rows = ["| step | NTP | pause | lookahead | lookahead - NTP, per seed (points) |",
            "|---|---|---|---|---|"]
    for step in steps:
        got = {m: em.get(m, {}).get(step) for m in ("ntp", "pause", "lookahead")}
        both = sorted(set(got["ntp"] or {}) & set(got["lookahead"] or {}))
        diff = ", ".join(f"{100 * (got['lookahead'][s] - got['ntp'][s]):+.1f}" for s in both) or "-"
        arms = " | ".join(cell(got[m]) for m in ("ntp", "pause", "lookahead"))
        rows.append(f"| {step:,} | {arms} | {diff} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m replikit.tools.device_check",
                                 description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare", help="here: settings, data and the plan's predictions into FOLDER")
    p.add_argument("folder", type=Path)
    p.add_argument("--config", action="append", help="config files over config/config.yaml (default: "
                   "config/paper.yaml; repeatable; a ladder rung's rung.yaml runs that rung's --task)")
    p.add_argument("--eval-every", type=int, default=LL_EVAL_EPOCHS,
                   help="epochs between the trained arms' evaluations (default: %(default)s)")
    p.add_argument("--task", default=LL_TASK, choices=("sudoku4", "maze"),
                   help="the latent-lookahead task to train (default: %(default)s)")
    r = sub.add_parser("run", help="on the GPU: time the steps, train the arms, write OUT")
    r.add_argument("folder", type=Path)
    r.add_argument("out", type=Path)
    r.add_argument("--deadline", type=float, default=400, help="seconds from the start (default: 400)")
    r.add_argument("--steps", type=int, default=20,
                   help="timed steps of each step measured; 0 times nothing (default: 20)")
    r.add_argument("--methods", default="ntp,pause,lookahead", help="arms to train (default: all three)")
    r.add_argument("--kernels", action="store_true",
                   help="time only the cold-posterior batched step's cuDNN variants and top kernels")
    r.add_argument("--graphs", action="store_true",
                   help="time only the cold-posterior steps, eager against one CUDA graph replayed")
    r.add_argument("--also", type=Path, action="append", default=[],
                   help="another prepared folder whose arms train at the same time, into OUT/<its name>/ "
                   "(repeatable)")
    st = sub.add_parser("steps", help="time the steps against the plan (started by run)")
    st.add_argument("folder", type=Path)
    st.add_argument("out", type=Path)
    st.add_argument("--steps", type=int, default=20)
    st.add_argument("--kernels", action="store_true")
    st.add_argument("--graphs", action="store_true")
    t = sub.add_parser("train", help="one arm and seed (started by run)")
    t.add_argument("folder", type=Path)
    t.add_argument("method")
    t.add_argument("seed", type=int)
    t.add_argument("--deadline", type=float, required=True, help="epoch time to stop at")
    t.add_argument("--log", type=Path, required=True)
    m = sub.add_parser("summary", help="exact match per arm and step from run's ll.json files")
    m.add_argument("files", type=Path, nargs="+")
    m.add_argument("--steps", default="420,1680,2100,9996", help="steps to show (default: %(default)s)")
    a = ap.parse_args(argv)
    if a.cmd == "prepare":
        prepare(a.folder, tuple(a.config or ["config/paper.yaml"]), a.eval_every, a.task)
    elif a.cmd == "run":
        run_all(a.folder, a.out, a.deadline, a.steps, tuple(a.methods.split(",")), a.kernels, a.graphs,
                tuple(a.also))
    elif a.cmd == "summary":
        print(summary(a.files, [int(x) for x in a.steps.split(",")]))
    elif a.cmd == "steps":
        time_steps(a.folder, a.out, a.steps, a.kernels, a.graphs)
    else:
        train_one(a.folder, a.method, a.seed, a.deadline, a.log)


if __name__ == "__main__":
    main()
