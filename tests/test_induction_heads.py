"""Induction heads (paper nine): the fast model against its dense reference, the task, the emergence
rule and censoring, the trajectory's principal directions, the exponent fit, config errors and the
claims' ability to fail."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from replikit.methods.trajectory import SnapshotBuffer, pca_shares, random_walk_shares
from replikit.models.disentangled_transformer import DisentangledTransformer
from replikit.papers import induction_heads as ih
from replikit.papers import induction_heads_analysis as iha
from replikit.plan.bill import load
from replikit.scoring.claims import evaluate

CFG = {"contexts": [3, 4, 5, 6], "vocab": 16, "lr": 1.0, "batch_size": 16, "eval_every": 25,
       "eval_sequences": 128, "emergence_level": 0.5, "stop_after": 1.5, "plateau_accuracy": 0.9,
       "max_steps": 6000, "snapshots": 16, "pca_window": [0.5, 1.5], "margins": {"exponent": 0.5}}


def test_the_fast_forward_and_its_gradient_equal_the_dense_one_hot_reference():
    torch.manual_seed(0)
    model = DisentangledTransformer(12, 9).double()
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.5)
    x = torch.randint(0, 12, (8, 9))
    fast, dense = model(x), model.dense_forward(x)
    assert torch.allclose(fast, dense, atol=1e-10)
    g_fast = torch.autograd.grad(fast.pow(2).sum(), list(model.parameters()))
    g_dense = torch.autograd.grad(dense.pow(2).sum(), list(model.parameters()))
    assert all(torch.allclose(a, b, atol=1e-9) for a, b in zip(g_fast, g_dense, strict=True))


def test_every_sequence_has_one_answer_found_only_in_context():
    """Distinct items; the query is one of them; the answer is the label right after it."""
    tokens, answers = ih.sequences(5, 16, 200, torch.Generator().manual_seed(0))
    assert tokens.shape == (200, 11)
    items, labels, query = tokens[:, 0:10:2], tokens[:, 1:10:2], tokens[:, -1]
    for k in range(200):
        assert len(set(items[k].tolist())) == 5
        where = (items[k] == query[k]).nonzero().flatten()
        assert len(where) == 1 and labels[k, where[0]] == answers[k]


def test_emergence_is_the_interpolated_first_crossing_of_halfway_from_chance():
    assert ih.threshold(4, 0.5) == pytest.approx(0.625)
    curve = [{"step": 0, "accuracy": 0.0}, {"step": 50, "accuracy": 0.25}, {"step": 100, "accuracy": 0.75},
             {"step": 150, "accuracy": 0.2}, {"step": 200, "accuracy": 1.0}]
    assert ih.crossing(curve, 0.625) == pytest.approx(87.5)
    assert ih.crossing(curve, 0.9) == pytest.approx(193.75)
    assert ih.crossing(curve[:3], 0.9) is None


def test_a_run_stops_once_emerged_and_plateaued_and_a_short_cap_censors_it():
    done = ih.train_context(3, CFG, 0, torch.device("cpu"))
    assert not done["censored"] and done["final_accuracy"] >= CFG["plateau_accuracy"]
    start = 1.5 * done["emergence_step"]
    assert start <= done["stopped_at"] < start + 2 * CFG["eval_every"]
    assert len(done["pca"]["shares"]) == len(done["pca"]["random_walk"]) > 3
    cut = ih.train_context(3, {**CFG, "max_steps": 100}, 0, torch.device("cpu"))
    assert cut["censored"] and cut["emergence_step"] is None and cut["stopped_at"] == 100
    assert cut["pca"]["shares"] == []


def test_the_snapshot_buffer_stays_evenly_spaced_as_it_thins():
    buf = SnapshotBuffer(capacity=8, stride=10)
    for step in range(0, 1000, 10):
        buf.offer(step, torch.tensor([float(step)]))
    gaps = set(np.diff(buf.steps))
    assert len(buf.steps) <= 8 and len(gaps) == 1 and buf.stride == gaps.pop()
    steps, points = buf.between(200, 700)
    assert all(200 <= s <= 700 for s in steps) and points.shape == (len(steps), 1)


def test_principal_shares_of_a_line_a_plane_and_a_random_walk():
    t = torch.linspace(0, 1, 50)
    line = t[:, None] * torch.randn(1, 300)
    assert pca_shares(line)[0] == pytest.approx(1.0)
    walk = random_walk_shares(400)
    assert [round(w, 2) for w in walk[:3]] == [round(6 / (math.pi ** 2 * k ** 2), 2) for k in (1, 2, 3)]
    g = torch.Generator().manual_seed(0)
    simulated = torch.randn(400, 4000, generator=g).cumsum(0)
    assert sum(pca_shares(simulated)[:3]) == pytest.approx(sum(walk[:3]), abs=0.05)


def _runs(exponents: dict[int, float], contexts=(4, 8, 16, 32), censor: tuple[int, int] | None = None,
          top: float = 0.9, adam: float | None = 1.0) -> pd.DataFrame:
    """SGD runs whose emergence time grows as N ** exponents[seed], and Adam runs (IH-1's falsifier) as
    N ** adam (None: no Adam runs)."""
    rows = []
    arms = [("train", exponents)] + ([("train_optimizer-adam", dict.fromkeys(exponents, adam))]
                                     if adam is not None else [])
    for run, by_seed in arms:
        for seed, a in by_seed.items():
            for n in contexts:
                cut = censor == (seed, n) and run == "train"
                rows.append({"run": run, "seed": seed, "context": n, "emergence_step": np.nan if cut
                             else 100.0 * n ** a, "censored": cut, "top_share": top, "walk_share": 0.83,
                             "cap": 10 ** 6})
    return pd.DataFrame(rows)


def test_the_exponent_fit_recovers_the_power_and_leaves_out_a_censored_seed():
    fits = iha.exponent_fits(_runs({0: 2.0, 1: 1.0, 2: 1.7}, censor=(2, 32), adam=None))
    assert set(fits) == {0, 1}
    assert fits[0][0] == pytest.approx(2.0) and fits[1][0] == pytest.approx(1.0)
    local = iha.local_exponents(_runs({0: 2.0, 1: 1.0, 2: 1.7}, censor=(2, 32), adam=None))
    assert set(local) == {0, 1} and local[0] == pytest.approx(2.0) and local[1] == pytest.approx(1.0)


@pytest.mark.parametrize("exponent, ih1", [(2.0, "replicated"), (1.3, "not replicated"),
                                           (2.7, "not replicated")])
def test_ih1_can_pass_and_fail_on_either_side(exponent, ih1):
    """IH-1 judges the local exponent at the two longest contexts, both sides of 2 +- 0.5; IH-2 ("faster
    than linear", implied by IH-1) is merged into it."""
    cfg = load([])["induction_heads"]
    rng = np.random.default_rng(0)
    runs = _runs({s: exponent + rng.normal(0, 0.02) for s in range(5)})
    rows = {r["id"]: r for r in evaluate(iha.claims(ih.experiment_runs(cfg), cfg), {"runs": runs}, cfg=cfg)}
    assert rows["IH-1"]["verdict"] == ih1 and "IH-2" not in rows
    assert "chosen after seeing results: SGD rather than Adam" in rows["IH-1"]["caveat"]
    assert not rows["IH-4"]["measurable"] and rows["IH-4"]["verdict"] == "inconclusive"


def test_every_censored_seed_makes_the_exponent_inconclusive_not_an_error():
    cfg = load([])["induction_heads"]
    runs = _runs({s: 2.0 for s in range(5)})
    runs["censored"], runs["emergence_step"], runs["top_share"] = True, np.nan, np.nan
    rows = {r["id"]: r for r in evaluate(iha.claims(ih.experiment_runs(cfg), cfg), {"runs": runs}, cfg=cfg)}
    assert rows["IH-1"]["verdict"] == "inconclusive" and "IH-3" not in rows
    assert "censored" in rows["IH-1"]["note"]


def test_at_the_smoke_span_the_exponent_claims_say_why_they_are_not_measured():
    cfg = load(["config/smoke.yaml"])["induction_heads"]
    rows = {r["id"]: r for r in evaluate(iha.claims(ih.experiment_runs(cfg), cfg),
                                         {"runs": _runs({s: 2.0 for s in range(5)}, contexts=(3, 4, 5, 6))},
                                         cfg=cfg)}
    assert not rows["IH-1"]["measurable"] and "factor 2" in rows["IH-1"]["note"]


def test_config_errors_name_the_key_and_the_fix():
    errors = ih.config_errors({**CFG, "contexts": [4, 8, 16, 32], "vocab": 16, "stop_after": 1.2})
    assert any("'induction_heads.contexts'" in e and "raise the vocabulary" in e for e in errors)
    assert any("'induction_heads.stop_after'" in e and "set stop_after >= 1.5" in e for e in errors)
    assert ih.config_errors({**CFG, "pca_window": [1.0, 0.5]})


def test_ih1s_falsifier_is_adam_and_reads_the_same_rule():
    """IH-1's falsifier trains the same networks under Adam: it reads "not replicated" where Adam's
    exponent is linear, and "replicated" where Adam is quadratic too (the row cannot discriminate).
    Even where it tells, the row is counted apart: its pilot ran at the verdict settings (issue 85)."""
    from replikit.scoring.claims import KNOWN_FROM_PILOT, standing

    cfg = load([])["induction_heads"]
    claims = iha.claims(ih.experiment_runs(cfg), cfg)
    for adam, falsifier, kind in ((1.0, "not replicated", KNOWN_FROM_PILOT),
                                  (2.0, "replicated", "cannot discriminate")):
        rows = {r["id"]: r for r in evaluate(claims, {"runs": _runs(dict.fromkeys(range(5), 2.0), adam=adam)},
                                             cfg=cfg)}
        row = rows["IH-1"]
        assert row["verdict"] == "replicated" and row["falsifier"]["verdict"] == falsifier
        assert standing(row) == kind and row["falsifier"]["setting"] == "Adam at rate 0.001 instead of SGD"
    with pytest.raises(Exception, match="train_optimizer-adam"):  # a claims job without the Adam runs
        evaluate(claims, {"runs": _runs(dict.fromkeys(range(5), 2.0), adam=None)}, cfg=cfg)


def test_the_adam_run_differs_from_the_sgd_run_only_in_its_optimizer_and_rate():
    cfg = load([])["induction_heads"]
    assert [r.name for r in ih.experiment_runs(cfg)["emergence_scaling"]] == ["train", "train_optimizer-adam"]
    sgd, adam = ih.run_config(cfg, "train"), ih.run_config(cfg, "train_optimizer-adam")
    assert "optimizer" not in sgd and sgd["lr"] == cfg["lr"]  # the SGD run's config is what it was
    assert adam == {**sgd, "optimizer": "adam", "lr": cfg["adam_lr"]}
    smoke = load(["config/smoke.yaml"])["induction_heads"]
    assert smoke["adam_lr"] is None and all(r.name == "train" for rs in ih.experiment_runs(smoke).values()
                                            for r in rs)
    errors = ih.config_errors({**CFG, "contexts": [4, 8, 16, 32], "vocab": 64, "adam_lr": None})
    assert any("'induction_heads.adam_lr' is null" in e and "set 'induction_heads.adam_lr'" in e
               for e in errors)
    assert not ih.config_errors({**CFG, "adam_lr": None})  # the smoke span: IH-1 is not measured anyway


def test_the_emergence_figure_draws_adam_in_its_own_panel(tmp_path, monkeypatch):
    """Where Adam is trained, the emergence-time figure has a second panel for it, with IH-1's band, and
    its table names each row's optimizer."""
    from replikit.reporting import plotting

    kept = {}
    monkeypatch.setattr(plotting, "save", lambda fig, path, title, *a: kept.update(fig=fig, title=title))
    cfg = load([])["induction_heads"]
    table = iha.figure_emergence_scaling(_runs(dict.fromkeys(range(3), 2.0)), [ih.Train(), ih.Train("adam")],
                                         tmp_path / "f.png", "default", cfg=cfg)
    axes = kept["fig"].axes
    assert [a.get_title() for a in axes] == ["SGD (the paper's setting)", "Adam (IH-1's falsifier)"]
    assert all(any(c.get_gid() == plotting.CLAIM_GID.format("IH-1") for c in a.collections) for a in axes)
    assert "SGD 2.00 (3 seeds); Adam 1.00 (3 seeds)" in kept["title"]
    assert sorted(table["optimizer"].unique()) == ["Adam", "SGD"]


def test_an_adam_network_trains_with_adams_state():
    """The optimizer is the run's: a few Adam steps leave Adam's moment estimates in the checkpointed
    state, which SGD has none of."""
    cfg = {**CFG, "contexts": [3], "max_steps": 30, "eval_every": 10, "snapshots": 4,
           "optimizer": "adam", "lr": 0.001}
    saved = []
    ih.CHECKPOINT_STEPS, old = 10, ih.CHECKPOINT_STEPS
    try:
        ih.train_context(3, cfg, 0, torch.device("cpu"), save=saved.append)
    finally:
        ih.CHECKPOINT_STEPS = old
    assert saved and "exp_avg" in next(iter(saved[-1]["optimizer"]["state"].values()))


def test_a_pilot_stopped_once_every_network_emerged_is_read_from_its_checkpoints(tmp_path):
    """The cap's rule reads only emergence times, which a checkpoint holds: the finished networks' and
    the one in training's, once it has emerged. A network not yet emerged, or a context not reached,
    is refused; the Adam run's checkpoints are not the pilot's."""
    from replikit.core.io import torch_save

    cfg = {**CFG, "contexts": [8, 16]}

    def ckpt(name: str, emerged: float | None, items=({"context": 8, "emergence_step": 500.0},)) -> Path:
        path = tmp_path / f"{name}.ckpt"
        torch_save(path, {"items": list(items), "current": {"context": 16, "step": 4000, "emerged": emerged}})
        return path

    paths = [ckpt("train_seed100", 1999.5), ckpt("train_seed101", 2100.0),
             ckpt("train_optimizer-adam_seed100", None)]
    assert iha.pilot_curves_from_checkpoints(paths, cfg) == {
        "emergence": {100: {8.0: 500.0, 16.0: 1999.5}, 101: {8.0: 500.0, 16.0: 2100.0}}}
    cap = iha.margins_from_curves(iha.pilot_curves_from_checkpoints(paths, cfg), cfg)["max_steps"]
    assert cap["margin"] == 7000  # 3 x 2,100, rounded up to 1,000
    with pytest.raises(ValueError, match="N = 16 has not emerged yet"):
        iha.pilot_curves_from_checkpoints([ckpt("train_seed102", None)], cfg)
    with pytest.raises(ValueError, match=r"contexts \[16.0\] not trained yet"):
        iha.pilot_curves_from_checkpoints([_finished(tmp_path)], cfg)


def _finished(tmp_path) -> Path:
    """A checkpoint between networks: N = 8 finished, nothing in training."""
    from replikit.core.io import torch_save

    path = tmp_path / "train_seed104.ckpt"
    torch_save(path, {"items": [{"context": 8, "emergence_step": 500.0}], "current": None})
    return path


def test_a_censored_seed_is_named_where_it_is_left_out():
    cfg = load([])["induction_heads"]
    runs = _runs({s: 2.0 for s in range(6)}, censor=(5, 32))
    rows = {r["id"]: r for r in evaluate(iha.claims(ih.experiment_runs(cfg), cfg), {"runs": runs}, cfg=cfg)}
    part = rows["IH-1"]["parts"][0]
    assert part["n_seeds"] == 5 and "seed(s) [5]" in part["label"] and rows["IH-1"]["verdict"] == "replicated"


def test_a_stopped_job_resumes_bitwise_from_its_checkpoint(monkeypatch, tmp_path):
    """A job stopped in its second network (after a checkpoint of it) and started again ends with what
    an uninterrupted job computes, and counts the time of both parts; a checkpoint of another
    configuration is not resumed."""
    cfg = ih.run_config({**CFG, "contexts": [3, 4]}, "train")
    reference = ih.run("train", cfg, 0)
    monkeypatch.setattr(ih, "CHECKPOINT_STEPS", 100)
    ckpt, original, calls = tmp_path / "job.ckpt", ih.loss_of, []
    n3 = reference["items"][0]["stopped_at"]

    def loss_then_stop(output, answer):
        calls.append(1)
        if len(calls) == n3 + 20 + 250:  # N = 4 at about step 250 (training and evaluation calls)
            raise KeyboardInterrupt
        return original(output, answer)

    monkeypatch.setattr(ih, "loss_of", loss_then_stop)
    with pytest.raises(KeyboardInterrupt):
        ih.run("train", cfg, 0, checkpoint=str(ckpt))
    saved = torch.load(ckpt, weights_only=False)
    assert len(saved["items"]) == 1 and saved["current"]["context"] == 4 and saved["current"]["step"] == 200
    monkeypatch.setattr(ih, "loss_of", original)
    resumed = ih.run("train", cfg, 0, checkpoint=str(ckpt))
    assert resumed["items"] == reference["items"]
    assert resumed["parts"] == 2 and resumed["elapsed_s"] >= saved["stopwatch"]["elapsed_s"]

    other = ih.run("train", {**cfg, "max_steps": 400}, 0, checkpoint=str(ckpt))  # another config
    assert other["parts"] == 1 and other["items"] != reference["items"]


def test_the_train_stage_runs_the_adam_run_with_the_config_it_is_given(tmp_path, monkeypatch):
    """The train stage hands its job the run's config (Stage.config = run_config), in which Adam's rate
    is already `lr`: the job builds Adam at `adam_lr` (it once looked up `adam_lr` in that config
    again and stopped with a KeyError, so no Adam run could run through the pipeline); a paper block
    passed for the Adam run, which would train under SGD, is refused."""
    from replikit.papers.interface import Job

    built = []

    def recording(name: str, make):
        def build(params, lr: float):
            built.append((name, lr))
            return make(params, lr=lr)
        return build

    monkeypatch.setattr(ih, "OPTIMIZERS", {n: recording(n, make) for n, make in ih.OPTIMIZERS.items()})
    section = {**CFG, "contexts": [3], "max_steps": 60, "eval_every": 20, "adam_lr": 0.01}
    (stage,) = ih.RUNS.stages
    outputs = {}
    for run in ("train", "train_optimizer-adam"):
        wildcards = {"run": run, "seed": "0"}
        cfg = stage.config(section, type("W", (), wildcards)())
        out = tmp_path / f"{run}.json"
        ih.train_job(Job(wildcards, {}, {"metrics": str(out)}, cfg, None, torch.device("cpu"), ih.__name__))
        outputs[run] = json.loads(out.read_text())
    assert outputs["train_optimizer-adam"]["config"]["lr"] == 0.01
    assert outputs["train_optimizer-adam"]["config"]["optimizer"] == "adam"
    assert outputs["train"]["config"]["lr"] == section["lr"]
    assert outputs["train"]["items"] != outputs["train_optimizer-adam"]["items"]
    assert built == [("sgd", section["lr"]), ("adam", 0.01)]
    with pytest.raises(ValueError, match="trains under adam, but the config passed says sgd"):
        ih.run("train_optimizer-adam", section, 0)


def test_the_sequence_of_local_exponents_is_shown_and_says_when_it_still_rises():
    """IH-1 judges one window; the report shows every step's exponent, so a reader sees whether the
    curve has settled (issue 85)."""
    rising = _runs({0: 2.0}, adam=None)
    rising["emergence_step"] *= rising["context"] ** (0.1 * np.log2(rising["context"]))
    text = iha.exponent_sequence(rising)
    assert text.startswith("local exponents, mean over seeds, N = 4 to 8: 2.") and "still rises" in text
    assert "still rises" not in iha.exponent_sequence(_runs({0: 2.0}, adam=None))
    cfg = load([])["induction_heads"]
    row = next(r for r in evaluate(iha.claims(ih.experiment_runs(cfg), cfg), {"runs": _runs({s: 2.0 for s in
                                   range(5)})}, cfg=cfg) if r["id"] == "IH-1")
    assert "local exponents, mean over seeds, N = 4 to 8: 2.00, 8 to 16: 2.00" in row["note"]
