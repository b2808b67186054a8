"""Rank collapse (Noci et al., NeurIPS 2022): run names, run configs, the model, measurements,
claims and figures on a tiny configuration."""

from __future__ import annotations

import copy
import math
import re

import pytest
import torch

from replikit.core.config import load_config
from replikit.core.io import write_json
from replikit.models.signal_transformer import SignalConfig, SignalTransformer
from replikit.papers import rank_collapse as rc
from replikit.papers import rank_collapse_analysis as an
from replikit.papers import registry
from replikit.scoring.claims import MissingResult, claim_fidelity, evaluate
from replikit.scoring.fidelity import deviations, paper_settings

TINY = {
    "seeds": None, "norm": "post", "extra_norms": ["pre"],
    "model": {"width": 16, "heads": 2, "d_k": None, "mlp_ratio": 2, "init_std": None, "positional": True},
    "data": {"vocab_size": 16, "seq_len": 8, "zipf_exponent": 1.0},
    "init": {"depths": [1, 3], "batch_size": 4, "n_batches": 2},
    "dk_sweep": {"d_ks": [4, 16], "alpha": "1/sqrt(L)"},
    "training": {"depth": 2, "falsifier_depth": 1, "steps": 10, "batch_size": 8, "optimizer": "adam",
                 "lr": 0.001, "warmup_steps": 2, "eval_every": 5, "eval_batches": 1},
    "resources": {"mem_mb": 1000, "runtime": 5, "gpu": 0},
}
SEEDS = (0, 1)


@pytest.fixture(autouse=True)
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def tiny_results(tmp_path_factory) -> dict[str, list]:
    """Every run of TINY for two seeds, written as the workflow would: {run name: [metrics paths]}."""
    root = tmp_path_factory.mktemp("rank_collapse")
    torch.set_num_threads(1)
    files: dict[str, list] = {}
    for spec in rc.all_runs(TINY):
        for seed in SEEDS:
            path = root / spec.name / f"seed{seed}.json"
            write_json(path, {**rc.run(spec, rc.run_config(TINY, spec), seed), "device": "cpu"})
            files.setdefault(spec.name, []).append(path)
    return files


def _paths(files: dict[str, list], drop: str | None = None) -> list:
    return [p for name, ps in files.items() if name != drop for p in ps]


def _model(depth: int, norm: str = "post", alpha: str = "1", seed: int = 0, **kw) -> SignalTransformer:
    cfg = SignalConfig(vocab_size=32, seq_len=16, depth=depth, width=32, norm=norm, alpha=alpha, **kw)
    return SignalTransformer(cfg, torch.Generator().manual_seed(seed))


# ---------------------------------------------------------------- run names and configs


def test_run_names_round_trip_and_match_the_pattern():
    names = ["init_norm-post_scaling-1_d_k-16_depth-none",
             "init_norm-pre_scaling-1oversqrtL_d_k-128_depth-none",
             "init_norm-none_scaling-1_d_k-1_depth-none",
             "train_norm-post_scaling-1_d_k-none_depth-16",
             "train_norm-pre_scaling-1oversqrtL_d_k-none_depth-3"]
    names += [s.name for s in rc.all_runs(TINY)]
    for name in names:
        assert re.fullmatch(rc.RunSpec.pattern(), name)
        assert rc.RunSpec.parse(name).name == name
    spec = rc.RunSpec.parse("init_norm-pre_scaling-1oversqrtL_d_k-128_depth-none")
    assert (spec.kind, spec.norm, spec.alpha, spec.d_k, spec.depth) == ("init", "pre", "1/sqrt(L)", 128, None)
    assert spec.scaling == "1oversqrtL" and spec.label == "pre-LN, alpha=1/sqrt(L)"
    spec = rc.RunSpec.parse("train_norm-post_scaling-1_d_k-none_depth-16")
    assert (spec.kind, spec.norm, spec.alpha, spec.d_k, spec.depth) == ("train", "post", "1", None, 16)
    for old in ("init_postln_alpha1_dk16", "train_postln_alpha1oversqrtL_L3",
                "init_norm-post_scaling-1_d_k-16"):  # the former names; a key missing
        assert not re.fullmatch(rc.RunSpec.pattern(), old)


@pytest.mark.parametrize("name", ["init_norm-post_scaling-1_d_k-none_depth-16",
                                  "train_norm-post_scaling-1_d_k-16_depth-none",
                                  "init_norm-post_scaling-2_d_k-16_depth-none",
                                  "init_norm-post_scaling-1_d_k-0_depth-none",
                                  "init_norm-post_scaling-1_d_k-016_depth-none",
                                  "init_norm-mid_scaling-1_d_k-8_depth-none",
                                  "init_norm-post_scaling-1_d_k-8_depth-none_x",
                                  "sweep_norm-post_scaling-1_d_k-8_depth-none",
                                  "init_postln_alpha1_dk16"])
def test_bad_run_names_are_rejected(name):
    with pytest.raises(ValueError):
        rc.RunSpec.parse(name)


def test_experiment_runs_cover_the_figures():
    runs = rc.experiment_runs(TINY)
    assert set(runs) == {f.name for f in an.SPEC.figures}
    assert {s.name for s in runs["similarity_vs_depth"]} == {
        "init_norm-post_scaling-1_d_k-8_depth-none", "init_norm-post_scaling-1oversqrtL_d_k-8_depth-none",
        "init_norm-pre_scaling-1_d_k-8_depth-none", "init_norm-pre_scaling-1oversqrtL_d_k-8_depth-none"}
    assert [s.name for s in runs["gradient_ratio_vs_dk"]] == [
        "init_norm-post_scaling-1oversqrtL_d_k-4_depth-none",
        "init_norm-post_scaling-1oversqrtL_d_k-16_depth-none"]
    assert [s.name for s in runs["training_loss"]] == ["train_norm-post_scaling-1_d_k-none_depth-2",
                                                       "train_norm-post_scaling-1oversqrtL_d_k-none_depth-2",
                                                       "train_norm-post_scaling-1_d_k-none_depth-1",
                                                       "train_norm-post_scaling-1oversqrtL_d_k-none_depth-1"]


def test_rc5s_falsifier_must_be_shallower_than_its_claim():
    cfg = copy.deepcopy(TINY)
    cfg["training"]["falsifier_depth"] = 2
    (err,) = rc.config_errors(cfg)
    assert "rank_collapse.training.falsifier_depth (2) must be below rank_collapse.training.depth (2)" in err


def test_run_config_holds_only_run_defining_keys():
    init, train = "init_norm-post_scaling-1_d_k-8_depth-none", "train_norm-post_scaling-1_d_k-none_depth-2"
    assert set(rc.run_config(TINY, init)) == {"model", "data", "init"}
    assert "d_k" not in rc.run_config(TINY, init)["model"]  # an init run's d_k is in its name
    assert set(rc.run_config(TINY, train)) == {"model", "data", "training"}
    assert rc.run_config(TINY, train)["model"]["d_k"] == 8
    assert "depth" not in rc.run_config(TINY, train)["training"]  # a training run's depth is in its name
    # figure-only and other runs' keys retrain nothing
    edited = copy.deepcopy(TINY)
    edited["extra_norms"] = []
    edited["dk_sweep"] = {"d_ks": [2, 64], "alpha": "1"}
    edited["training"]["depth"] = 7
    edited["resources"]["runtime"] = 99
    edited["init"]["depths"] = [1, 2, 3]
    assert rc.run_config(edited, train) == rc.run_config(TINY, train)
    assert rc.run_config(edited, init) != rc.run_config(TINY, init)  # the depth sweep defines an init run
    edited["training"]["lr"] = 0.01
    assert rc.run_config(edited, train) != rc.run_config(TINY, train)


def test_config_errors_name_the_keys():
    assert rc.config_errors(TINY) == []
    bad = copy.deepcopy(TINY)
    bad["model"]["heads"], bad["extra_norms"] = 3, ["post"]
    bad["training"]["model"] = {"width": 10, "heads": 4, "mlp_ratio": 2}
    errors = rc.config_errors(bad)
    assert len(errors) == 3 and "model.width" in errors[0] and "extra_norms" in errors[2]
    assert "rank_collapse.training.model.width (10)" in errors[1]


def _with_training_override(cfg: dict, model: dict | None, data: dict | None) -> dict:
    out = copy.deepcopy(cfg)
    out["training"].update(model=model, data=data)
    return out


def test_the_training_run_has_its_own_model_and_data_where_set():
    """training.model / training.data replace the shared model and data of the training runs only;
    absent, null, or repeating the shared settings, they leave every run config as it was."""
    init, train = "init_norm-post_scaling-1_d_k-8_depth-none", "train_norm-post_scaling-1_d_k-none_depth-2"
    own = _with_training_override(TINY, {"width": 12, "heads": 3, "mlp_ratio": 4},
                                  {"vocab_size": 6, "seq_len": 5})
    cfg = rc.run_config(own, train)
    assert cfg["model"] == {"width": 12, "heads": 3, "mlp_ratio": 4, "d_k": 4, "init_std": None,
                            "positional": True}
    assert cfg["data"] == {"vocab_size": 6, "seq_len": 5, "zipf_exponent": 1.0}
    assert rc.run_config(own, init) == rc.run_config(TINY, init)  # the init runs keep the shared model
    assert rc.base_d_k(own) == 8 and rc.experiment_runs(own) == rc.experiment_runs(TINY)
    same = _with_training_override(TINY, {k: TINY["model"][k] for k in ("width", "heads", "mlp_ratio")},
                                   {k: TINY["data"][k] for k in ("vocab_size", "seq_len")})
    for edited in (same, _with_training_override(TINY, None, None)):
        assert all(rc.run_config(edited, s) == rc.run_config(TINY, s) for s in rc.all_runs(TINY))
    out = rc.run(train, cfg, 0)  # the network is built at the override's sizes
    assert out["history"][-1]["step"] == TINY["training"]["steps"]
    assert an.baseline_accuracy(cfg["data"]) > an.baseline_accuracy(TINY["data"])  # RC-5's bar reads it


def _scale_fidelity(root, config_name: str) -> dict[str, tuple[str, list[dict], list[str]]]:
    """Each claim's fidelity at a scale against config/paper.yaml, through the claims job's own
    functions (paper_settings, deviations, claim_fidelity), without training anything."""
    schema = root / "workflow/schemas/config.schema.yaml"
    ours, paper_cfg = (load_config(root / "config" / n, schema) for n in (config_name, "paper.yaml"))
    spec = registry.get("rank_collapse")
    settings = paper_settings(paper_cfg, "rank_collapse", spec.departures, spec.unverified, spec.figure_only)
    cfg = ours["rank_collapse"]
    devs = deviations(cfg, settings["cfg"], cfg["seeds"] or ours["seeds"], settings["seeds"], False,
                      spec.figure_only) + settings["departures"]
    claims = spec.claims(spec.experiments(cfg), cfg)
    keys = {k for c in claims for k in c.uses}
    return {c.id: claim_fidelity(c, keys, devs, settings["unverified"]) for c in claims}


def test_default_init_claims_run_at_the_paper_model_sizes(root):
    """At the default scale RC-1..RC-4 measure the paper block's model and data: their rows list only
    the init budget cut and the paper's declared departure (synthetic data); RC-5's row lists its
    training run's own smaller model and data, and no training key reaches RC-1..RC-4."""
    schema = root / "workflow/schemas/config.schema.yaml"
    default, paper = (load_config(root / "config" / n, schema)["rank_collapse"] for n in ("config.yaml",
                                                                                          "paper.yaml"))
    assert default["model"] == paper["model"] and default["data"] == paper["data"]
    assert default["init"]["depths"] == paper["init"]["depths"]
    init = rc.run_config(default, "init_norm-post_scaling-1_d_k-128_depth-none")
    assert init["model"]["width"] == 512 and init["data"]["vocab_size"] == 1024
    train = rc.run_config(default, f"train_norm-post_scaling-1_d_k-none_depth-{default['training']['depth']}")
    assert (train["model"]["width"], train["model"]["heads"], train["data"]["vocab_size"]) == (64, 1, 32)
    rows = _scale_fidelity(root, "config.yaml")
    for cid in ("RC-1", "RC-2", "RC-3", "RC-4"):
        label, devs, unverified = rows[cid]
        assert label == "proxy", cid
        assert [d["key"] for d in devs] == ["init.batch_size", "init.n_batches", "data"], (cid, devs)
        assert "model" in unverified and "training" not in unverified
    label, devs, _ = rows["RC-5"]
    keys = {d["key"] for d in devs}
    assert label == "proxy" and {"training.model.width", "training.model.heads", "training.model.mlp_ratio",
                                 "training.data.vocab_size", "training.data.seq_len", "data"} <= keys
    assert not any(k.startswith(("model.", "init.", "dk_sweep.")) for k in keys)


# ---------------------------------------------------------------- model and measurements


def test_residual_scaling_scales_the_branches_and_nothing_else():
    plain, scaled = _model(4, "none", "1"), _model(4, "none", "1/sqrt(L)")
    for a, b in zip(plain.parameters(), scaled.parameters(), strict=True):
        assert torch.equal(a, b)  # same weights: runs of a seed are paired
    for m in (plain, scaled):
        torch.nn.init.zeros_(m.blocks[0].mlp.proj.weight)  # block 0 = x + alpha * Attn(x)
    x = torch.randint(0, 32, (2, 16), generator=torch.Generator().manual_seed(1))
    d_plain = plain.hidden_states(x)[1] - plain.hidden_states(x)[0]
    d_scaled = scaled.hidden_states(x)[1] - scaled.hidden_states(x)[0]
    assert d_plain.abs().max() > 0.1
    torch.testing.assert_close(d_scaled, d_plain / 2)  # alpha = 1/sqrt(4)
    # at depth 1 the scaled network is the standard one
    x1 = torch.randint(0, 32, (2, 16))
    torch.testing.assert_close(_model(1, alpha="1/sqrt(L)")(x1), _model(1, alpha="1")(x1))


def test_similarity_and_stable_rank_of_known_representations():
    t, d = 6, 8
    collapsed = torch.randn(1, d).expand(t, d) * torch.arange(1.0, t + 1).unsqueeze(1)  # rank one
    orthogonal = torch.eye(d)[:t]
    h = torch.stack([collapsed, orthogonal])
    torch.testing.assert_close(rc.token_similarity(h), torch.tensor([1.0, 0.0]))
    torch.testing.assert_close(rc.stable_rank(h), torch.tensor([1.0, float(t)]))


def test_zipf_tokens_follow_the_rank_order():
    x = rc.zipf_tokens(torch.Generator().manual_seed(0), 400, 50, 10, 1.0)
    counts = torch.bincount(x.flatten(), minlength=10).float() / x.numel()
    assert x.shape == (400, 50) and x.min() >= 0 and x.max() < 10
    p = 1 / torch.arange(1.0, 11)
    torch.testing.assert_close(counts, p / p.sum(), atol=0.01, rtol=0)


def test_post_ln_tokens_align_with_depth_unless_residuals_are_scaled():
    x = rc.zipf_tokens(torch.Generator().manual_seed(0), 2 * 8, 16, 32, 1.0).view(2, 8, 16)
    sim = {(depth, alpha): rc.measure_at_init(_model(depth, "post", alpha), x)["similarity"]
           for depth in (2, 32) for alpha in ("1", "1/sqrt(L)")}
    assert sim[32, "1"] > sim[2, "1"] + 0.3  # measured: ~1.0 against ~0.4
    assert sim[32, "1/sqrt(L)"] < sim[32, "1"] - 0.3  # measured: ~0.3


def test_gradient_norms_are_finite_positive_and_per_layer():
    x = rc.zipf_tokens(torch.Generator().manual_seed(0), 8, 16, 32, 1.0).view(2, 4, 16)
    out = rc.measure_at_init(_model(5, "pre", heads=2, d_k=4), x)
    for w in ("q", "k", "v"):
        layers = out[f"grad_{w}_layers"]
        assert len(layers) == 5 and all(math.isfinite(g) and g > 0 for g in layers)
        assert out[f"grad_{w}"] == pytest.approx(sum(layers) / 5)
    assert len(out["similarity_layers"]) == 6  # the embedding and every block


def test_runs_are_deterministic_per_seed():
    spec = "train_norm-post_scaling-1_d_k-none_depth-2"
    a, b = (rc.run(spec, rc.run_config(TINY, spec), 3) for _ in range(2))
    assert a["history"] == b["history"]
    other = rc.run(spec, rc.run_config(TINY, spec), 4)
    assert other["history"] != a["history"]


# ---------------------------------------------------------------- results, claims, figures


def test_claims_read_every_seed_and_fail_loudly_on_a_missing_run(tiny_results):
    df = an.load_results(_paths(tiny_results))
    claims = an.claims(rc.experiment_runs(TINY), TINY)
    rows = evaluate(claims, {"rows": df}, min_seeds=2)
    assert [r["id"] for r in rows] == ["RC-1", "RC-2", "RC-3", "RC-4", "RC-5"]
    for r in rows:
        assert r["parts"] and all(set(map(int, p["per_seed"])) == set(SEEDS) for p in r["parts"])
        assert all(math.isfinite(v) for p in r["parts"] for v in p["per_seed"].values())
    # ten steps learn nothing: RC-5 compares two plateaus and says so, and so does its falsifier, the
    # same pair one layer deep
    assert "neither arm learned" in rows[4]["parts"][0]["no_evidence"]
    (part,) = rows[4]["falsifier"]["parts"]
    assert part["label"].startswith("L=1: mean held-out loss")
    assert "neither arm learned" in part["no_evidence"]
    assert set(map(int, part["per_seed"])) == set(SEEDS)
    for missing in ("init_norm-post_scaling-1_d_k-8_depth-none",
                    "init_norm-post_scaling-1oversqrtL_d_k-16_depth-none",
                    "train_norm-post_scaling-1_d_k-none_depth-2",
                    "train_norm-post_scaling-1_d_k-none_depth-1"):
        df = an.load_results(_paths(tiny_results, drop=missing))
        with pytest.raises(MissingResult, match=missing):
            evaluate(claims, {"rows": df}, min_seeds=2)


def test_figures_write_a_png_and_their_table(tiny_results, tmp_path):
    df = an.load_results(_paths(tiny_results))
    runs = rc.experiment_runs(TINY)
    for fig in an.SPEC.figures:
        out = tmp_path / f"{fig.name}.png"
        table = fig.draw({"rows": df}, runs[fig.name], out, "smoke", False)
        assert fig.caption and out.stat().st_size > 1000
        assert set(table["run"]) == {s.name for s in runs[fig.name]}
        assert set(table["seed"]) == set(SEEDS)
