import pytest
import torch

from replikit.core import training
from replikit.core.seeding import seed_everything
from replikit.core.training import DivergenceError, LoopConfig, Stopwatch, train_loop
from replikit.papers.benign_memorization import Run, RunSpec

CFG = {
    "n_train": 24, "subset_seed": 0, "probe_fit_size": None, "probe_k": 3,
    "model": {"name": "cnn4", "width": 4, "projector_width": 16},
    "optimizer": {"name": "adam", "lr": 1e-3, "weight_decay": 0.0},
    "epochs": 4, "batch_size": 8, "eval_every": 2, "checkpoint_every": 1, "eval_views_max": 64,
}
# 100% random labels: light augmentation with fresh views; 3 fixed views of full augmentation, a label each
LIGHT = "train_noise-1.0_augmentation-light_n_augs-none_label_per_view-false"
K3 = "train_noise-1.0_augmentation-full_n_augs-3_label_per_view-true"


def _run(tiny_images, spec=LIGHT, seed=0):
    torch.set_num_threads(1)
    return Run(RunSpec.parse(spec), CFG, tiny_images, seed, torch.device("cpu"))


def _weights(model):
    return torch.cat([p.detach().flatten() for p in model.state_dict().values() if p.is_floating_point()])


@pytest.mark.parametrize("spec", [LIGHT, K3])
def test_same_seed_is_bitwise_reproducible(tiny_images, spec):
    a, b = _run(tiny_images, spec), _run(tiny_images, spec)
    ha, hb = a.train(progress=False), b.train(progress=False)
    assert ha == hb
    assert torch.equal(_weights(a.model), _weights(b.model))
    c = _run(tiny_images, spec, seed=1)
    c.train(progress=False)
    assert not torch.equal(_weights(a.model), _weights(c.model))


def test_killed_run_resumes_to_the_same_result(tiny_images, tmp_path):
    ckpt = tmp_path / "run.ckpt"
    reference = _run(tiny_images)
    ref_history = reference.train(progress=False)

    killed = _run(tiny_images)
    original, calls = killed.loss, []

    def loss_then_die(idx):
        calls.append(1)
        if len(calls) == 8:  # 3 steps per epoch: killed mid-way through the third epoch
            raise KeyboardInterrupt
        return original(idx)

    killed.loss = loss_then_die
    with pytest.raises(KeyboardInterrupt):
        killed.train(checkpoint=str(ckpt), progress=False)
    assert ckpt.exists()

    resumed = _run(tiny_images)  # fresh model, optimizer and generator, as in a new process
    history = resumed.train(checkpoint=str(ckpt), progress=False)
    assert history == ref_history
    assert torch.equal(_weights(resumed.model), _weights(reference.model))


def test_a_resumed_run_counts_the_seconds_of_every_part(tiny_images, tmp_path, monkeypatch):
    """A job's elapsed_s spans its parts: a run stopped and resumed counts the first part up to its
    last checkpoint (the steps after it are redone) plus the second, as an uninterrupted run would."""
    now = [0.0]
    monkeypatch.setattr(training.time, "perf_counter", lambda: now[0])

    def timed(run, die_at=None):
        original, calls = run.loss, []

        def loss(idx):  # each step takes 1 s of the fake clock
            calls.append(1)
            now[0] += 1.0
            if len(calls) == die_at:
                raise KeyboardInterrupt
            return original(idx)
        run.loss = loss
        return run

    clock = Stopwatch()
    timed(_run(tiny_images)).train(progress=False, stopwatch=clock)
    assert (clock.seconds(), clock.parts) == (12.0, 1)  # 4 epochs of 3 steps

    ckpt, now[0] = tmp_path / "run.ckpt", 1000.0
    first = Stopwatch()
    with pytest.raises(KeyboardInterrupt):  # in the third epoch: the checkpoint holds 2 epochs, 6 s
        timed(_run(tiny_images), die_at=8).train(checkpoint=str(ckpt), progress=False, stopwatch=first)
    now[0] = 5000.0  # a new process: its clock starts anywhere
    second = Stopwatch()
    timed(_run(tiny_images)).train(checkpoint=str(ckpt), progress=False, stopwatch=second)
    assert (second.seconds(), second.parts) == (12.0, 2)


def test_checkpoint_of_another_configuration_is_not_resumed(tiny_images, tmp_path):
    ckpt = tmp_path / "run.ckpt"
    _run(tiny_images).train(checkpoint=str(ckpt), progress=False)  # leaves epoch-3 checkpoint
    assert ckpt.exists()
    longer = dict(CFG, optimizer={"name": "adam", "lr": 5e-3, "weight_decay": 0.0})
    torch.set_num_threads(1)
    run = Run(RunSpec.parse(LIGHT), longer, tiny_images, 0, torch.device("cpu"))
    fresh = Run(RunSpec.parse(LIGHT), longer, tiny_images, 0, torch.device("cpu"))
    assert run.train(checkpoint=str(ckpt), progress=False) == fresh.train(progress=False)


def test_nan_loss_raises_a_clear_error():
    seed_everything(0)
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def loss_fn(idx):
        return model(torch.ones(idx.numel(), 2)).sum() * float("nan")

    with pytest.raises(DivergenceError, match="diverged.*epoch 0, step 0"):
        train_loop(model, opt, loss_fn, 8, LoopConfig(epochs=2, batch_size=4), torch.Generator(),
                   progress=False)


def test_loop_visits_every_item_once_per_epoch():
    seen = []
    model = torch.nn.Linear(1, 1)

    def loss_fn(idx):
        seen.extend(idx.tolist())
        return model(torch.ones(1, 1)).sum()

    train_loop(model, torch.optim.SGD(model.parameters(), lr=0.0), loss_fn, 10,
               LoopConfig(epochs=3, batch_size=5), torch.Generator().manual_seed(0), progress=False)
    assert sorted(seen) == sorted(list(range(10)) * 3)


def test_deferred_divergence_check_names_the_first_bad_step():
    seed_everything(0)
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    calls = []

    def loss_fn(idx):
        calls.append(1)
        scale = float("inf") if len(calls) == 6 else (float("nan") if len(calls) > 6 else 1.0)
        return (model(torch.ones(idx.numel(), 2)).sum() ** 2 + 1) * scale

    with pytest.raises(DivergenceError, match=r"loss is inf at epoch 1, step 1; lower the learning rate"):
        train_loop(model, opt, loss_fn, 16, LoopConfig(epochs=3, batch_size=4, check_every=4),
                   torch.Generator(), progress=False)
    assert len(calls) == 8  # steps go on until the check: 4 of epoch 0, then 4 of epoch 1
    calls.clear()  # a window cut short by the end of an epoch is checked before the epoch ends
    model = torch.nn.Linear(2, 1)  # the inf/nan steps above made the weights nan
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    with pytest.raises(DivergenceError, match="epoch 1, step 1"):
        train_loop(model, opt, loss_fn, 16, LoopConfig(epochs=3, batch_size=4, check_every=50),
                   torch.Generator(), progress=False, evaluate=lambda e: {})
    assert len(calls) == 8


def test_running_loss_is_the_float64_sum_of_the_step_losses():
    model = torch.nn.Linear(3, 1)
    x = torch.randn(30, 3, generator=torch.Generator().manual_seed(1))
    losses = []

    def loss_fn(idx):
        loss = model(x[idx]).pow(2).mean() * 1.37
        losses.append(loss.item())
        return loss

    hist = train_loop(model, torch.optim.SGD(model.parameters(), lr=0.01), loss_fn, 30,
                      LoopConfig(epochs=2, batch_size=4, check_every=3), torch.Generator().manual_seed(0),
                      evaluate=lambda e: {}, progress=False)
    running = 0.0
    for v in losses[7:]:
        running += v
    assert hist[-1]["train_loss"] == running / 7  # bitwise: the Python-float sum it replaced
