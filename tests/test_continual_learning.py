import math
import re

import numpy as np
import pandas as pd
import pytest
import torch

from replikit.core.seeding import derive_seed
from replikit.core.training import DivergenceError
from replikit.data.tasks import streams
from replikit.models.scaled import ScaledMLP, ScaledResCNN, Scaling, build_scaled
from replikit.papers import continual_learning as cl
from replikit.papers import continual_learning_analysis as an
from replikit.papers.continual_learning import RunSpec
from replikit.scoring.claims import MissingResult, evaluate

CFG = {"n_tasks": 2, "n_train": None, "n_test": None, "epochs": 2, "batch_size": 32, "lr": 1.0,
       "base_width": 64, "depth": 0, "pmnist_head": "per_task", "eval_batch": 64}


def synthetic_stream(n_tasks: int = 2, d: int = 20, n: int = 96, seed: int = 0) -> streams.TaskStream:
    """Linearly separable 2-class tasks on shared inputs with different teacher directions."""
    g = torch.Generator().manual_seed(seed)
    s = streams.TaskStream("pmnist100", [], [], [], [], 2)
    for _ in range(n_tasks):
        teacher = torch.randn(d, generator=g)
        for xs, ys in ((s.x_train, s.y_train), (s.x_test, s.y_test)):
            x = torch.randn(n, d, generator=g)
            xs.append(x)
            ys.append((x @ teacher > 0).long())
    return s


def trained(scaling: Scaling, stream: streams.TaskStream, cfg: dict, task: int = 0) -> torch.nn.Module:
    model = cl.build_model(stream, scaling, cfg, seed=0, device=torch.device("cpu"))
    cl.fit(model, stream.x_train[task], stream.y_train[task], task, scaling.lr(cfg["lr"]), cfg,
           torch.Generator().manual_seed(1))
    return model


# ---------------------------------------------------------------- parameterization


def test_scaling_table():
    assert Scaling("mup", 64, 1.0).gamma == Scaling("ntp", 64).gamma == 1.0
    mup = Scaling("mup", 256, 0.5)
    assert mup.gamma == pytest.approx(0.5 * 2) and mup.lr(30) == pytest.approx(30 * 0.25 * 4)
    assert Scaling("ntp", 1024).lr(30) == 30 and Scaling("ntp", 1024).effective_gamma0 == 0.25
    with pytest.raises(ValueError, match="parameterization"):
        Scaling("sp", 64)


def test_ntp_and_mup_gamma1_identical_at_base_width():
    stream = synthetic_stream()
    a = trained(Scaling("ntp", 64), stream, CFG)
    b = trained(Scaling("mup", 64, 1.0), stream, CFG)
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.equal(pa, pb)
    assert not torch.equal(a.head.weight, torch.zeros_like(a.head.weight))  # it did train
    # ... and whole sequential runs agree to the bit, while another gamma0 does not
    spec = RunSpec("seq", "pmnist100", "ntp", 64)
    ra = cl.train_item(spec, Scaling("ntp", 64), stream, CFG, 0, torch.device("cpu"))
    rb = cl.train_item(spec, Scaling("mup", 64, 1.0), stream, CFG, 0, torch.device("cpu"))
    rc = cl.train_item(spec, Scaling("mup", 64, 2.0), stream, CFG, 0, torch.device("cpu"))
    assert ra["acc"] == rb["acc"] and ra["loss"] == rb["loss"] and ra["loss"] != rc["loss"]


def test_rescnn_ntp_and_mup_identical_at_base_width():
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(16, 3, 8, 8, generator=g), torch.randint(0, 2, (16,), generator=g)
    models = []
    for s in (Scaling("ntp", 64), Scaling("mup", 64, 1.0)):
        m = ScaledResCNN(3, s, n_heads=2, n_out=2, n_blocks=3, generator=torch.Generator().manual_seed(3))
        opt = torch.optim.SGD(m.parameters(), lr=s.lr(5.0))
        for _ in range(3):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(m(x, 1), y).backward()
            opt.step()
        models.append(m)
    for pa, pb in zip(models[0].parameters(), models[1].parameters(), strict=True):
        assert torch.equal(pa, pb)


def _movement(mode: str, width: int, gamma0: float) -> float:
    stream = synthetic_stream(n_tasks=1, d=30, n=128)
    cfg = {**CFG, "epochs": 3, "lr": 2.0}
    model = cl.build_model(stream, Scaling(mode, width, gamma0), cfg, 0, torch.device("cpu"))
    init = model.first_layer.detach().clone()
    cl.fit(model, stream.x_train[0], stream.y_train[0], 0, Scaling(mode, width, gamma0).lr(cfg["lr"]), cfg,
           torch.Generator().manual_seed(0))
    return cl.relative_movement(model, init)


def test_first_layer_movement_set_by_gamma0_not_width():
    mup = {n: _movement("mup", n, 0.5) for n in (128, 512, 2048)}
    assert max(mup.values()) / min(mup.values()) < 1.3, mup  # width barely matters under muP
    assert _movement("mup", 512, 2.0) > 3 * mup[512]  # gamma0 does
    ntp = {n: _movement("ntp", n, 1.0) for n in (128, 2048)}
    assert ntp[128] / ntp[2048] > 2.5, ntp  # NTP gets lazier with width (~ 1/sqrt(N))


def test_readout_starts_at_zero_and_heads_are_separate():
    m = ScaledMLP(10, Scaling("mup", 32, 1.0), n_heads=3, n_out=4)
    x = torch.randn(5, 10)
    assert torch.equal(m(x, 0), torch.zeros(5, 4))
    m.head.weight.data[1] = 1.0
    out = m(x, torch.tensor([0, 1, 1, 2, 0]))
    assert torch.equal(out[[0, 3, 4]], torch.zeros(3, 4)) and (out[[1, 2]] != 0).all()
    with pytest.raises(ValueError, match="unknown scaled model"):
        build_scaled("vit", (10,), Scaling("ntp", 8), 1, 2, 0)


# ---------------------------------------------------------------- task streams


def test_center_order_and_partial_permutation():
    order = streams.center_order(28, 28)
    assert sorted(order[:4].tolist()) == [13 * 28 + 13, 13 * 28 + 14, 14 * 28 + 13, 14 * 28 + 14]
    g = torch.Generator().manual_seed(0)
    assert torch.equal(streams.partial_permutation(28, 28, 0.0, g), torch.arange(784))
    perm = streams.partial_permutation(28, 28, 0.25, g)
    moved = (perm != torch.arange(784)).nonzero().flatten()
    assert set(moved.tolist()) <= set(order[:196].tolist()) and moved.numel() > 150
    assert sorted(perm.tolist()) == list(range(784))
    full = streams.partial_permutation(28, 28, 1.0, g)
    assert (full != torch.arange(784)).float().mean() > 0.95
    with pytest.raises(ValueError, match="fraction"):
        streams.partial_permutation(28, 28, 1.5, g)


def test_permuted_mnist_similarity(tiny_images):
    data = {k: v for k, v in tiny_images.items()}
    data["x_train"] = data["x_train"][:, :1]
    data["x_test"] = data["x_test"][:, :1]
    s = streams.permuted_stream(data, 3, 0.25, None, None, seed=0, device=torch.device("cpu"),
                                shared_head=False)
    assert s.n_tasks == 3 and s.input_shape == (256,) and s.name == "pmnist25" and not s.shared_head
    same = (s.x_train[0] == s.x_train[1]).all(0).float().mean().item()
    assert same >= 0.75 - 1e-6  # only the inner quarter of the pixels moves
    assert torch.equal(s.y_train[0], s.y_train[2])
    shared = streams.permuted_stream(data, 2, 1.0, 10, 5, seed=0, device=torch.device("cpu"),
                                     shared_head=True)
    assert shared.n_heads == 1 and shared.head(1) == 0 and len(shared.y_test[0]) == 5
    # MNIST's record normalises as the runs always did, bitwise
    mnist = streams.permuted_stream(data, 1, 1.0, None, None, 0, torch.device("cpu"), mean=(0.1307,),
                                    std=(0.3081,))
    assert torch.equal(mnist.x_train[0], ((data["x_train"].float() / 255 - 0.1307) / 0.3081).flatten(1))


def test_a_permuted_stream_of_colour_images_moves_each_pixel_in_every_channel_alike(tiny_images):
    """On another dataset (3 channels here) every channel takes the same pixel permutation, and without
    a mean and std in the record the training images' own normalise them."""
    s = streams.permuted_stream(tiny_images, 2, 1.0, None, None, seed=0, device=torch.device("cpu"),
                                name="p100tiny")
    assert s.name == "p100tiny" and s.input_shape == (3 * 16 * 16,) and s.n_out == len(tiny_images["classes"])
    x0, x1 = (x.view(-1, 3, 256) for x in (s.x_train[0], s.x_train[1]))
    perm = streams.partial_permutation(16, 16, 1.0, torch.Generator().manual_seed(
        derive_seed(0, "permutations", 1.0)))
    assert not torch.equal(perm, torch.arange(256))
    assert all(torch.equal(x1[:, c], x0[:, c][:, perm]) for c in range(3))
    assert x0.mean((0, 2)).abs().max() < 1e-4  # normalised by the training images' own statistics


def test_split_cifar_and_joint_data(tiny_images):
    s = streams.split_stream(tiny_images, 2, None, None, seed=0, device=torch.device("cpu"),
                             mean=(0.4914, 0.4822, 0.4465), std=(0.2470, 0.2435, 0.2616))
    assert s.n_out == 2 and s.n_heads == 2 and s.input_shape == (3, 16, 16)
    assert all(set(y.tolist()) == {0, 1} for y in s.y_train)
    x, y, t = streams.joint_data(s)
    assert x.shape[0] == y.shape[0] == t.shape[0] == sum(len(v) for v in s.y_train)
    assert set(t.tolist()) == {0, 1}
    with pytest.raises(ValueError, match="a split stream of 4 classes has 1 to 2 two-class tasks, not 6"):
        streams.split_stream(tiny_images, 6, None, None, 0, torch.device("cpu"))


# ---------------------------------------------------------------- metrics, runs, resume


def test_cl_metrics_by_hand():
    acc = torch.tensor([[0.9, 0.1, 0.1], [0.8, 0.9, 0.1], [0.6, 0.7, 0.95]])
    loss = torch.tensor([[0.2, 2.0, 2.0], [0.1, 0.3, 2.0], [0.5, 0.6, 0.1]])
    m = cl.cl_metrics(acc, loss)
    assert m["LA"] == pytest.approx((0.9 + 0.9 + 0.95) / 3)
    assert m["AA"] == pytest.approx((0.6 + 0.7 + 0.95) / 3)
    assert m["CF"] == pytest.approx((0.3 + 0.2) / 2)
    assert m["CFr"] == pytest.approx((0.3 / 0.9 + 0.2 / 0.9) / 2)
    assert m["CF_loss"] == pytest.approx(((0.5 - 0.1) + (0.6 - 0.3)) / 2)


def test_run_names_round_trip_and_reject_nonsense():
    for spec in [RunSpec("seq", "pmnist100", "ntp"), RunSpec("seq", "pmnist30", "mup", gamma0=0.3),
                 RunSpec("joint", "splitcifar10", "mup", 256), RunSpec("seq", "pmnist100", "mup", 64, 10.0)]:
        assert RunSpec.parse(spec.name) == spec
    name = "seq_stream-pmnist100_mode-mup_width-none_gamma0-0.3"
    assert RunSpec("seq", "pmnist100", "mup", gamma0=0.3).name == name and RunSpec.parse(name).regime == "seq"
    assert RunSpec("seq", "pmnist100", "mup", 64, 1) == RunSpec.parse(
        "seq_stream-pmnist100_mode-mup_width-64_gamma0-1.0")
    for spec in cl.all_runs(small_config()):
        assert RunSpec.parse(spec.name) == spec and re.fullmatch(RunSpec.pattern(), spec.name)
    for bad in ["seq_stream-pmnist100_mode-ntp_width-64_gamma0-1.0",  # NTP has no gamma0
                "seq_stream-pmnist100_mode-mup_width-64",
                "mixed_stream-pmnist100_mode-ntp_width-64_gamma0-none",
                "seq_stream-pmnist250_mode-mup_width-64_gamma0-none",  # more than 100% permuted
                "seq_stream-pmnist100_mode-mup_width-none_gamma0-none",  # sweeps both
                "seq_stream-pmnist100_mode-mup_width-64_gamma0-1",  # not the canonical name (1.0)
                "seq_stream-pmnist100_mode-mup_width-64_gamma0-1e-05",  # not a plain decimal
                "seq_stream-pmnist100_mode-sp_width-64_gamma0-1.0", "seq_pmnist100_mup_N64_gsweep"]:
        with pytest.raises(ValueError):
            RunSpec.parse(bad)


def test_another_dataset_is_in_the_run_names_and_the_defaults_keep_theirs():
    """Config key `dataset` puts the dataset in the stream token; MNIST and CIFAR-10 keep the names
    their runs always had."""
    assert cl.stream_name("pmnist", 1.0) == "pmnist100"
    assert cl.stream_name("split_cifar10") == "splitcifar10"
    assert cl.stream_name("pmnist", 1.0, "mnist") == "pmnist100"
    assert cl.stream_name("pmnist", 0.3, "blobs") == "p30blobs"
    assert cl.stream_name("split_cifar10", 1.0, "blobs") == "splitblobs"
    cases = [("p30blobs", "blobs", 0.3, False), ("splitblobs", "blobs", None, True),
             ("pmnist10", "mnist", 0.1, False), ("splitcifar10", "cifar10", None, True)]
    for stream, dataset, fraction, split in cases:
        spec = RunSpec("seq", stream, "mup", 64)
        assert (spec.dataset, spec.permuted_fraction, spec.split) == (dataset, fraction, split)
        assert RunSpec.parse(spec.name) == spec
    with pytest.raises(ValueError, match="named pmnist100"):
        RunSpec("seq", "p100mnist", "ntp")  # one name per run
    runs = cl.all_runs(small_config(dataset="blobs"))
    assert {r.dataset for r in runs} == {"blobs"} and all("blobs" in r.name for r in runs)
    default = {r.name for r in cl.all_runs(small_config())}
    assert {r.name for r in cl.all_runs(small_config(dataset=None))} == default
    assert cl.config_errors(small_config(dataset="nope", n_train=None, n_test=None)) == [
        "config key 'continual_learning.dataset' is 'nope', not a registered dataset; use one of cifar10, "
        "mnist (docs/data.md: how to add one)"]


def test_margins_from_another_datasets_pilot_make_cl2_and_cl5_inconclusive():
    """CL-2's and CL-5's margins came from an MNIST pilot: on other data their parts carry no evidence
    until a pilot there is committed (pilot_dataset), and say so."""
    assert an.foreign_margin(small_config()) == ""
    assert an.foreign_margin(small_config(dataset="mnist", pilot_dataset="mnist")) == ""
    text = an.foreign_margin(small_config(stream="split_cifar10"))
    assert text.startswith("margin from another dataset's pilot (MNIST, not CIFAR-10)")
    assert "pilot_dataset: cifar10" in text
    assert an.foreign_margin(small_config(stream="split_cifar10", pilot_dataset="cifar10")) == ""


def small_config(**over) -> dict:
    cfg = {**CFG, "stream": "pmnist", "permuted_fraction": 1.0, "main_width": 64,
           "width_sweep": {"widths": [32, 64], "gamma0": 1.0},
           "gamma_sweep": {"widths": [32, 64], "gammas": [0.3, 1.0, 3.0]},
           "similarity": {"permuted_fractions": [1.0, 0.1]}, "cl2_tolerance": 0.05, "cl5_tolerance": 0.2}
    return {**cfg, **over}


def test_experiments_share_runs_and_configs_are_run_specific():
    runs = cl.experiment_runs(small_config())
    assert runs["similarity"][0] == runs["forgetting_vs_gamma"][1] == runs["joint_vs_sequential"][0]
    assert len(cl.all_runs(small_config())) == 2 + 2 + 1 + 1
    cfg = small_config()
    assert "gammas" not in cl.run_config(cfg, "seq_stream-pmnist100_mode-ntp_width-none_gamma0-none")
    assert cl.run_config(cfg, "seq_stream-pmnist100_mode-ntp_width-none_gamma0-none")["widths"] == [32, 64]
    assert "widths" not in cl.run_config(cfg, "seq_stream-pmnist100_mode-mup_width-64_gamma0-none")
    similar = "seq_stream-pmnist10_mode-mup_width-64_gamma0-none"
    assert cl.run_config(cfg, similar)["gammas"] == [0.3, 1.0, 3.0]
    name = "seq_stream-pmnist100_mode-mup_width-64_gamma0-none"
    assert RunSpec.parse(name).items(cl.run_config(cfg, name))[-1] == Scaling("mup", 64, 3.0)


def test_sweep_resumes_bitwise(monkeypatch, tmp_path):
    stream = synthetic_stream()
    monkeypatch.setattr(cl, "build_stream", lambda *a, **k: stream)
    spec = RunSpec("seq", "pmnist100", "mup", 32)
    cfg = {**CFG, "gammas": [0.5, 1.0, 2.0]}
    full = cl.run_sweep(spec, cfg, {}, 0, torch.device("cpu"))
    real, calls = cl.train_item, []

    def flaky(*a, **k):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt("killed")
        return real(*a, **k)

    monkeypatch.setattr(cl, "train_item", flaky)
    ckpt = tmp_path / "ckpt.json"
    with pytest.raises(KeyboardInterrupt):
        cl.run_sweep(spec, cfg, {}, 0, torch.device("cpu"), checkpoint=ckpt)
    assert ckpt.exists()
    monkeypatch.setattr(cl, "train_item", real)
    resumed = cl.run_sweep(spec, cfg, {}, 0, torch.device("cpu"), checkpoint=ckpt)
    assert resumed == full
    # a checkpoint of another configuration is ignored
    other = cl.run_sweep(spec, {**cfg, "lr": 0.5}, {}, 0, torch.device("cpu"), checkpoint=ckpt)
    assert other[0]["loss"] != full[0]["loss"]


def test_divergence_raises():
    stream = synthetic_stream(n_tasks=1)
    with pytest.raises(DivergenceError, match="diverged"):
        trained(Scaling("mup", 64, 1.0), stream, {**CFG, "lr": 1e30})


# ---------------------------------------------------------------- claims


GRID = [0.1, 0.3, 1.0, 3.0, 10.0]


def synthetic_items(seeds=range(5)) -> pd.DataFrame:
    """Results in which NTP forgets less with width, muP is flat, forgetting grows with gamma0, the
    sequential optimum is interior and grows with similarity, joint prefers large gamma0, and the
    optimum does NOT transfer across widths (0.3 at N=32, 3.0 at N=64; both inside the grid)."""
    rows = []

    def add(run, seed, **kw):
        learned = {} if kw.get("regime") == "joint" else {"LA": 0.9}  # joint runs have no LA, as in real runs
        rows.append({"run": run, "seed": seed, "permuted_fraction": kw.pop("p", 1.0), **learned, **kw})

    for s in seeds:
        e = 0.002 * s
        for n, cfr in ((32, 0.2), (64, 0.05)):
            add("seq_stream-pmnist100_mode-ntp_width-none_gamma0-none", s, mode="ntp", width=n, gamma0=1.0,
                CFr=cfr + e, CF=cfr, AA=0.8, regime="seq")
            add("seq_stream-pmnist100_mode-mup_width-none_gamma0-1.0", s, mode="mup", width=n, gamma0=1.0,
                CFr=0.1 + e, CF=0.1, AA=0.8, regime="seq")
        for n, best in ((32, 0.3), (64, 3.0)):
            for g in GRID:
                aa = 0.9 if g == best else 0.8
                add(f"seq_stream-pmnist100_mode-mup_width-{n}_gamma0-none", s, mode="mup", width=n, gamma0=g,
                    CF=0.1 * g + e, CFr=0.1, AA=aa, regime="seq")
        for g in GRID:
            add("seq_stream-pmnist10_mode-mup_width-64_gamma0-none", s, mode="mup", width=64, gamma0=g,
                CF=0.0, CFr=0.0, AA=0.9 if g == 10.0 else 0.8, regime="seq", p=0.1)
            add("joint_stream-pmnist100_mode-mup_width-64_gamma0-none", s, mode="mup", width=64, gamma0=g,
                AA=0.8 + 0.01 * g + e, regime="joint")
    df = pd.DataFrame(rows)
    df["error"] = 1 - df["AA"]
    return df


def _claims_config() -> dict:
    return small_config(gamma_sweep={"widths": [32, 64], "gammas": GRID})


def test_claims_from_synthetic_results():
    cfg = _claims_config()
    rows = evaluate(an.claims(cl.experiment_runs(cfg), cfg), {"items": synthetic_items()}, cfg=cfg)
    verdicts = {r["id"]: r["verdict"] for r in rows}
    assert verdicts == {"CL-1": "replicated", "CL-2": "replicated", "CL-3": "replicated",
                        "CL-4": "replicated", "CL-5": "not replicated", "CL-6": "replicated",
                        "CL-7": "replicated"}
    assert [r["id"] for r in rows if r["kind"] == "hypothesis"] == ["CL-7"]
    # the first claim that reads the missing run names it (CL-4's falsifier reads it before CL-7)
    with pytest.raises(MissingResult,
                       match=r"claim CL-\d+: (its falsifier .*)?(missing|reads) "
                             "'joint_stream-pmnist100_mode-mup_width-64_gamma0-none'"):
        evaluate(an.claims(cl.experiment_runs(cfg), cfg),
                 {"items": synthetic_items()[lambda d: ~d["run"].str.startswith("joint")]}, cfg=cfg)


def test_settings_where_training_broke_down_are_left_out():
    cfg = _claims_config()
    items = synthetic_items()
    seq = "seq_stream-pmnist100_mode-mup_width-64_gamma0-none"
    broken = (items["run"] == seq) & (items["gamma0"] == 10.0)
    items.loc[broken & (items["seed"] == 2), ["LA", "CF"]] = [0.1, 0.0]  # one seed failed to learn
    cl3 = next(r for r in evaluate(an.claims(cl.experiment_runs(cfg), cfg), {"items": items}, cfg=cfg)
               if r["id"] == "CL-3")
    part = cl3["parts"][0]
    assert "gamma0=10 left out" in part["label"]
    assert part["mean"] == pytest.approx(0.1 * 3.0 - 0.1 * 0.1)  # CF(3) - CF(0.1): 10 is gone
    joint = items["run"].str.startswith("joint") & (items["gamma0"] == 0.1)
    items.loc[joint & (items["seed"] == 0), "AA"] = 0.12  # joint training failed at gamma0 = 0.1
    cl7 = next(r for r in evaluate(an.claims(cl.experiment_runs(cfg), cfg), {"items": items}, cfg=cfg)
               if r["id"] == "CL-7")
    assert "joint: gamma0=0.1 left out" \
        in cl7["parts"][0]["label"]
    assert "gamma0=0.3 left out" not in cl7["parts"][0]["label"]
    items.loc[items["run"] == seq, "LA"] = 0.1  # nothing learned
    cl3 = next(r for r in evaluate(an.claims(cl.experiment_runs(cfg), cfg), {"items": items}, cfg=cfg)
               if r["id"] == "CL-3")
    assert cl3["verdict"] == "inconclusive" and "too few gamma0 values were learned" in cl3["note"]


def test_transfer_with_an_optimum_at_the_grid_edge_is_no_evidence():
    cfg = _claims_config()
    items = synthetic_items()
    for n in (32, 64):  # both optima at the largest gamma0: "transfer", but only because of the grid
        run = items["run"] == f"seq_stream-pmnist100_mode-mup_width-{n}_gamma0-none"
        items.loc[run, "AA"] = 0.8 + 0.01 * items.loc[run, "gamma0"]
    cl5 = next(r for r in evaluate(an.claims(cl.experiment_runs(cfg), cfg), {"items": items}, cfg=cfg)
               if r["id"] == "CL-5")
    assert cl5["verdict"] == "inconclusive" and "end of the gamma0 grid" in cl5["note"]


def _shifted_optima(shift_decades: float, rng_seed: int = 0) -> pd.DataFrame:
    """Smooth AA curves peaked at gamma0 = 0.5 for N=32 and 0.5 * 10**shift for N=64, with seed noise."""
    items = synthetic_items()
    rng = np.random.default_rng(rng_seed)
    for n, peak in ((32, math.log10(0.5)), (64, math.log10(0.5) + shift_decades)):
        run = items["run"] == f"seq_stream-pmnist100_mode-mup_width-{n}_gamma0-none"
        lg = np.log10(items.loc[run, "gamma0"].astype(float))
        items.loc[run, "AA"] = 0.9 - 0.05 * (lg - peak) ** 2 + rng.normal(0, 0.002, int(run.sum()))
    return items


def test_cl5_fails_when_the_optimum_moves_one_grid_step_in_every_seed():
    """The old CL-5 took the widest grid gap (0.523 decades) as its tolerance, so an optimum one grid step
    (0.477 decades) away in every seed gave an interval of [0.477, 0.477] and "replicated"."""
    cfg = _claims_config()
    rows = {r["id"]: r for r in evaluate(an.claims(cl.experiment_runs(cfg), cfg),
                                         {"items": _shifted_optima(math.log10(3.0))}, cfg=cfg)}
    assert rows["CL-5"]["verdict"] == "not replicated"
    same = {r["id"]: r for r in evaluate(an.claims(cl.experiment_runs(cfg), cfg),
                                         {"items": _shifted_optima(0.0)}, cfg=cfg)}
    assert same["CL-5"]["verdict"] == "replicated"
    assert abs(same["CL-5"]["parts"][0]["mean"]) < 0.05


def test_interpolated_optimum_is_continuous_and_none_at_an_edge():
    curve = {g: -(math.log10(g) - math.log10(0.7)) ** 2 for g in GRID}
    assert an.interpolated_optimum(curve) == pytest.approx(math.log10(0.7))
    assert an.interpolated_optimum({g: g for g in GRID}) is None


def test_a_cl5_margin_as_wide_as_a_grid_step_is_a_config_error():
    errors = cl.config_errors({**small_config(), "n_train": None, "n_test": None, "cl5_tolerance": 0.5,
                               "gamma_sweep": {"widths": [32, 64], "gammas": [0.1, 0.3, 1.0]}})
    assert any("cl5_tolerance" in e and "grid step" in e for e in errors)


def test_optimal_gamma_and_grid_step():
    df = synthetic_items(seeds=[0])
    assert an.optimal_gamma(df, "seq_stream-pmnist100_mode-mup_width-32_gamma0-none") == {0: 0.3}
    assert an.grid_step([0.1, 0.3, 1.0, 3.0]) == pytest.approx(math.log10(1 / 0.3))


def test_training_config_is_run_specific(root):
    from replikit.core.config import load_config

    cfg = load_config(root / "config/smoke.yaml", root / "workflow/schemas/config.schema.yaml")
    c = cfg["continual_learning"]
    runs = cl.all_runs(c)
    assert len(runs) == len({r.name for r in runs})
    for r in runs:
        rc = cl.run_config(c, r.name)
        assert "resources" not in rc and "cl2_tolerance" not in rc and "similarity" not in rc


def test_cl6_reads_the_interpolated_optimum_so_a_sub_grid_shift_is_measured():
    """CL-6 (and CL-7's second part) read the interpolated optimum, as CL-5 does: optima shifted by a
    third of a grid step, with seed noise, give that shift and an interval of non-zero width (the old
    argmax read 0 in every seed, or one whole grid step)."""
    cfg = _claims_config()
    items = synthetic_items()
    rng = np.random.default_rng(1)
    shift = 0.16
    for run, peak in (("seq_stream-pmnist10_mode-mup_width-64_gamma0-none", math.log10(0.5) + shift),
                      ("seq_stream-pmnist100_mode-mup_width-64_gamma0-none", math.log10(0.5))):
        sel = items["run"] == run
        lg = np.log10(items.loc[sel, "gamma0"].astype(float))
        items.loc[sel, "AA"] = 0.9 - 0.05 * (lg - peak) ** 2 + rng.normal(0, 0.002, int(sel.sum()))
    cl6 = next(r for r in evaluate(an.claims(cl.experiment_runs(cfg), cfg), {"items": items}, cfg=cfg)
               if r["id"] == "CL-6")
    part = cl6["parts"][0]
    assert part["mean"] == pytest.approx(shift, abs=0.05)
    assert part["ci_high"] - part["ci_low"] > 0 and not part["all_equal"]
    assert "grid end" not in part["label"]
