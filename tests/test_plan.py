"""The run plan (replikit.plan.bill): FLOPs and peak memory of a step counted under FakeTensorMode, the
steps each paper's job takes, the merge of config files, the memory flags and the CLI's errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch
from torch import nn

from replikit.methods.step_cost import Setup, fake_module, launches, measure_step
from replikit.models.chains import ChainStack
from replikit.models.convnet import ConvNet
from replikit.papers.latent_lookahead_analysis import task_lengths
from replikit.papers.registry import get
from replikit.plan import bill as pl

# a rank-collapse config whose step needs a few hundred MB: large enough to read off the process's RSS
RC_SMALL = {
    "papers": ["rank_collapse"], "seeds": [0, 1],
    "rank_collapse": {"seeds": None, "extra_norms": [],
                      "model": {"width": 256, "heads": 4, "mlp_ratio": 2},
                      "data": {"vocab_size": 1024, "seq_len": 256},
                      "init": {"depths": [1, 2], "batch_size": 4, "n_batches": 3},
                      "dk_sweep": {"d_ks": [32, 64]},
                      # model/data null: the training run uses the shared ones (default has its own)
                      "training": {"depth": 4, "steps": 2, "batch_size": 32, "eval_every": 1,
                                   "model": None, "data": None}},
}


@pytest.fixture()
def small_config(tmp_path):
    path = tmp_path / "small.yaml"
    path.write_text(json.dumps(RC_SMALL))
    return pl.load([str(path)])


def test_linear_step_flops_and_memory_are_counted_exactly():
    """A bias-free linear layer on an input without gradient: 2 * batch * d_in * d_out FLOPs forward,
    as many for the weight's gradient; nothing is allocated for real."""
    batch, d_in, d_out = 64, 512, 256

    def build() -> Setup:
        model = nn.Linear(d_in, d_out, bias=False)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        x = torch.randn(batch, d_in)
        return Setup(model, lambda: model(x).square().mean(), opt, [x])

    cost = measure_step(build)
    assert cost.matmul_flops == 4 * batch * d_in * d_out and cost.conv_flops == 0
    weights, inputs, outputs = 4 * d_in * d_out, 4 * batch * d_in, 4 * batch * d_out
    # weights + gradient + input + the saved output at least; never more than a few copies of each
    assert 2 * weights + inputs + outputs <= cost.peak_bytes <= 3 * (2 * weights + inputs + outputs)


def test_metadata_queries_are_not_launches():
    """prim::device (asked ~3 times per op of a convolutional step) and profiler markers launch no
    kernel; aten ops that compute do, views do not."""
    assert not launches(torch.ops.prim.device.default)
    assert launches(torch.ops.aten.add.Tensor) and launches(torch.ops.aten.convolution.default)
    assert not launches(torch.ops.aten.view.default)


def test_a_chain_stack_step_costs_c_networks_in_flops_and_memory_but_not_in_ops():
    """C stacked chains: C times one network's FLOPs (torch's own counter would over-count the grouped
    convolutions' weight gradient), C times its memory less the shared data, and about the ops of one
    network (the point of stacking: one set of launches for every chain)."""
    def build(chains: int | None):
        def setup() -> Setup:
            x, y = torch.randn(64, 3, 16, 16), torch.randint(0, 10, (64,))
            model = fake_module(lambda: ConvNet(10, 8, batchnorm=True) if chains is None
                                else ChainStack([ConvNet(10, 8, batchnorm=True)] * chains))
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            if chains is None:
                return Setup(model, lambda: nn.functional.cross_entropy(model(x), y), opt, [x, y])
            return Setup(model, lambda: model(x).logsumexp(-1).sum(), opt, [x, y], chains=chains,
                         one_chain=build(None))
        return setup

    one, stack = measure_step(build(None)), measure_step(build(6))
    assert stack.flops == pytest.approx(6 * one.flops)
    data = 64 * 3 * 16 * 16 * 4 + 64 * 8
    assert stack.peak_bytes == 6 * (one.peak_bytes - data) + data
    assert stack.ops < 2 * one.ops


def test_estimated_peak_matches_a_measured_cpu_peak(small_config):
    """The fake estimate against a real step in a fresh process: the growth of its resident set over
    the built model and data (glibc told to return every freed block over 64 KiB to the system, so
    that the resident set follows the live tensors), plus the model's and the data's bytes."""
    cfg = small_config["rank_collapse"]
    run = "train_norm-post_scaling-1_d_k-none_depth-4"
    piece = get("rank_collapse").cost(cfg, run).pieces[0]
    estimate = measure_step(piece.build).peak_bytes
    script = textwrap.dedent(f"""
        import json, resource, torch
        from replikit.papers.registry import get
        torch.set_num_threads(1)
        setup = get("rank_collapse").cost(json.loads({json.dumps(json.dumps(cfg))}), {run!r}) \\
            .pieces[0].build()
        static = sum(t.numel() * t.element_size() for t in [*setup.model.parameters(), *setup.resident])
        before = int(open("/proc/self/statm").read().split()[1]) * resource.getpagesize()
        setup.step()
        setup.step()
        # the peak of this address space (VmHWM); ru_maxrss would not do: Linux keeps it across execve, so
        # it starts at the forking pytest process's resident set, and a large parent inflated the growth
        hwm = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
        print(hwm * 1024 - before + static)
    """)
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "65536"}
    measured = int(subprocess.run([sys.executable, "-c", script], check=True, capture_output=True,
                                  text=True, env=env).stdout.split()[-1])
    assert measured > 200e6, "the step must be large enough for the resident set to measure it"
    assert 0.85 < estimate / measured < 1.15, (estimate, measured)


def test_plan_has_a_row_per_job_with_the_documented_steps(small_config):
    requests = {"rc_train": "1 if wildcards.run.startswith('train') else 10**6"}
    jobs = pl.plan(small_config, requests, {"H100": pl.ACCELERATORS["H100"]})
    cfg = small_config["rank_collapse"]
    runs = get("rank_collapse").runs_of(cfg)
    assert sorted((j.run, j.seed) for j in jobs) == sorted((r, s) for r in runs for s in (0, 1))
    for j in jobs:
        expected = 2 if j.run.startswith("train") else len(cfg["init"]["depths"]) * cfg["init"]["n_batches"]
        assert j.steps == expected and j.flops > 0 and j.hours["H100"] > 0
        # the training jobs' 1 MB request is too small, the init jobs' 1 TB is not
        assert bool(j.flags) == j.run.startswith("train")
        if j.flags:
            assert "raise gpu_mem_mb of rc_train" in j.flags[0]
    text = pl.report(jobs, "H100", ["H100"], 0.4, 1e-5, 1e9)
    flagged = 2 * sum(r.startswith("train") for r in runs)
    assert "TOTAL" in text and f"FLAGGED: {flagged} of {2 * len(runs)} jobs" in text


def test_a_job_over_80_gb_names_the_setting_to_change(monkeypatch):
    monkeypatch.setattr(pl, "GPU_BYTES", 1e6)
    flags = pl.memory_flags(2_000_000, 10**6, "rc_train", "rank_collapse.training.batch_size")
    assert flags == ["needs 0.0 GB, more than an 80 GB GPU: lower rank_collapse.training.batch_size"]
    assert "no gpu_mem_mb requested for rc_train" in pl.memory_flags(1, None, "rc_train", "x")[0]


def test_paper_steps_follow_the_papers_settings():
    """Paper scale: latent lookahead trains about 10k steps per task (the paper's budget), benign
    memorization 10,000 epochs of floor(50,000 / 256) steps; no step is counted here."""
    config = pl.load([str(pl.ROOT / "config/paper.yaml")])
    ll = config["latent_lookahead"]
    for task in ll["tasks"]:
        run = f"train_task-{task}_method-ntp_tau-0_mask-bidir"
        steps = get("latent_lookahead").cost(ll, run).pieces[0].steps
        assert 9900 <= steps <= 10000, (task, steps)
    bm_main = "train_noise-1.0_augmentation-full_n_augs-none_label_per_view-false"
    assert get("benign_memorization").cost(config["benign_memorization"], bm_main).pieces[0].steps \
        == 10000 * (50000 // 256)
    cl = get("continual_learning").cost(config["continual_learning"],
                               "seq_stream-splitcifar10_mode-mup_width-none_gamma0-1.0")
    assert [p.steps for p in cl.pieces] == [5 * 5 * 79] * 6  # 6 widths, 5 tasks x 5 epochs x ceil(10000/128)


def test_task_lengths_are_the_serialized_lengths():
    assert task_lengths("sudoku4", {}) == (20, 19)
    assert task_lengths("sudoku9", {}) == (90, 89)
    assert task_lengths("maze", {"grid_n": 7}) == (49 + 4, 49 + 1)


def test_config_files_merge_key_by_key(tmp_path):
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text("scale: paper\nrank_collapse: {training: {steps: 7, lr: 0.1}}\n")
    b.write_text("rank_collapse: {training: {steps: 9}}\n")
    tc = pl.load([str(a), str(b)])["rank_collapse"]["training"]
    assert (tc["steps"], tc["lr"], tc["depth"]) == (9, 0.1, 24)  # depth: the paper block's


def test_gpu_profile_requests_are_evaluated_per_run():
    requests = pl.gpu_requests(pl.ROOT / "profiles/gpu")
    sudoku4 = pl.request_of(requests, "ll_train", "train_task-sudoku4_method-ntp_tau-0_mask-bidir", 0)
    sudoku9 = pl.request_of(requests, "ll_train", "train_task-sudoku9_method-lookahead_tau-A_mask-bidir", 0)
    assert sudoku4 and sudoku9 and sudoku9 > sudoku4


def test_cli_errors(tmp_path, capsys):
    assert pl.main([str(tmp_path / "missing.yaml")]) == 1
    assert "no such config file" in capsys.readouterr().err
    with pytest.raises(pl.PlanError, match="no training job"):
        pl.plan({"papers": [], "seeds": [0]}, {}, {})


def test_cli_prints_every_job_and_writes_json(tmp_path, capsys):
    config, out = tmp_path / "small.yaml", tmp_path / "plan.json"
    config.write_text(json.dumps(RC_SMALL))
    assert pl.main([str(config), "--accelerator", "A100", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    rows = json.loads(out.read_text())
    # 2 seeds x (3 init runs + the training pair at depth 4 and at RC-5's falsifier depth, 2)
    assert len(rows) == 14 and all(f"{r['run']} " in printed for r in rows)
    assert "h A100" in printed and "TOTAL" in printed


def test_a_paper_without_a_cost_model_is_skipped_and_the_document_feeds_the_report(small_config, tmp_path):
    """A paper without a cost model (Paper(cost=...)) is named and left out, not a crash; the plan
    as rule cost_plan writes it renders as the report's "Cost of the paper scale"."""
    import io

    from replikit.reporting.report import cost_plan

    config = {**small_config, "papers": ["no_such_paper", "rank_collapse"]}
    log = io.StringIO()
    peaks = {"H100": pl.ACCELERATORS["H100"]}
    jobs = pl.plan(config, {"rc_train": 10**6}, peaks, log=log)
    assert "no cost model for no_such_paper: not planned" in log.getvalue()
    assert {j.paper for j in jobs} == {"rank_collapse"} and pl.not_planned(config) == ["no_such_paper"]
    doc = pl.document(config, ["small.yaml"], jobs, peaks, 0.4, 1e-5)
    assert doc["papers"] == ["rank_collapse"] and doc["not_planned"] == ["no_such_paper"]
    (tmp_path / "plan.json").write_text(json.dumps(doc))
    section = cost_plan(str(tmp_path / "plan.json"))
    assert [r["paper"] for r in section["rows"]] == ["rank_collapse"] and section["n_jobs"] == len(jobs)
    assert section["not_planned"] == ["no_such_paper"] and section["accelerators"] == ["H100"]


def test_help_names_the_module_and_every_option_with_its_meaning_and_default(capsys):
    """`python -m replikit.plan --help`: the usage line, every option's meaning and default, the
    module docstring's assumptions, the example and the expected run time (issue 31, item 5)."""
    from replikit.plan import bill as plan

    with pytest.raises(SystemExit):
        plan.main(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert out.startswith("usage: python -m replikit.plan")
    for option, default in (("--profile PROFILE", "profiles/gpu"), ("--accelerator {", "H100"),
                            ("--utilisation UTILISATION", "0.4"), ("--launch-us LAUNCH_US", "10.0"),
                            ("--json JSON", "none")):
        at = out.index(option, out.index("options:"))
        assert "(default: " in out[at:at + 400] and default in out[at:at + 400], option
    assert "Utilisation and overhead are assumptions" in out and "about 10 minutes" in out
    assert "example: python -m replikit.plan config/paper.yaml" in out


def test_a_timed_step_runs_real_tensors_and_restores_the_thread_count():
    """`time_step` trains for real (the weights move) on resident data drawn at random (a builder
    may leave it uninitialized), on the threads asked for, and leaves torch's thread count as it
    found it; zero repeats is refused."""
    from replikit.methods.step_cost import time_step

    model = nn.Linear(8, 1)
    before = model.weight.detach().clone()
    seen = []

    def build() -> Setup:
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        x = torch.full((16, 8), float("nan"))  # what torch.empty may hold

        def loss():
            seen.append(torch.get_num_threads())
            return model(x).square().mean()
        return Setup(model, loss, opt, [x])

    threads = torch.get_num_threads()
    seconds = time_step(build, repeats=3, threads=1)
    assert seconds > 0 and seen == [1] * 4  # one step to create the optimizer state, three timed
    assert not torch.equal(before, model.weight) and torch.get_num_threads() == threads
    assert torch.isfinite(model.weight).all()
    with pytest.raises(ValueError, match="repeats"):
        time_step(build, repeats=0)


def test_a_timed_plan_adds_start_up_and_steps_and_leaves_long_steps_untimed(small_config):
    """`plan(timed=True)`: each timed job's CPU hours are at least its process start-up; a job whose
    step the model prices above `max_timed_step_s` (here the training runs: 35 s a step at the 10
    GFLOP/s this test gives the CPU) is not timed (None, not a guess); untimed plans carry None."""
    from replikit.methods.step_cost import job_startup_seconds

    peaks = pl.with_cpu(1e10)
    timed = pl.plan(small_config, {}, peaks, timed=True)
    startup = job_startup_seconds("replikit.papers.rank_collapse")
    init = [j for j in timed if j.run.startswith("init")]
    assert init and all(j.cpu_timed_hours is not None and j.cpu_timed_hours * 3600 > 0.5 * startup
                        for j in init)
    assert all(j.cpu_timed_hours is None for j in timed if j.run.startswith("train"))
    assert all(j.cpu_timed_hours is None for j in pl.plan(small_config, {}, peaks, timed=True,
                                                           max_timed_step_s=0.0))
    assert all(j.cpu_timed_hours is None for j in pl.plan(small_config, {}, peaks))
    with pytest.raises(pl.PlanError, match="CPU"):
        pl.plan(small_config, {}, {"H100": pl.ACCELERATORS["H100"]}, timed=True)


def test_a_cpu_job_is_priced_as_the_cpu_runs_it():
    """Latent lookahead's `auto` switches turn the KV cache on only on CUDA. So at `auto` a lookahead
    job's CPU hours price the recomputing reference step that a CPU job runs (several times the cached
    step's FLOPs on 5x5 mazes at tau 8), and its GPU hours the cached step. With the cache asked for
    (`kv_cache: true`), both price the cached step. The GPU hours are the same either way, and so are
    an NTP job's (no rollout)."""
    scope = {"tasks": ["maze"], "tau_scaling": {"run": False}, "ablation": {"run": False},
             "training": {"maze": {"tau": 8, "epochs": 1}}}
    peaks = pl.with_cpu(1e11)

    def hours(performance: dict) -> dict[str, dict[str, float]]:
        config = pl.load([], {"papers": ["latent_lookahead"],
                              "latent_lookahead": {**scope, "seeds": [0], "performance": performance}})
        return {j.run.split("_")[2]: j.hours for j in pl.plan(config, {}, peaks) if j.seed == 0}

    auto, cached = hours({}), hours({"kv_cache": True})
    assert auto["method-lookahead"]["CPU"] > 2 * cached["method-lookahead"]["CPU"]
    for method in ("method-lookahead", "method-ntp"):
        assert auto[method]["H100"] == pytest.approx(cached[method]["H100"])
    assert auto["method-ntp"]["CPU"] == pytest.approx(cached["method-ntp"]["CPU"])
