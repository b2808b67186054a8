import pytest

from replikit.core.config import load_config
from replikit.papers import registry
from replikit.scoring.claims import claim_fidelity
from replikit.scoring.fidelity import claim_deviations, describe, deviations, flatten, paper_settings


def _cfg(root, name: str) -> dict:
    return load_config(root / "config" / name, root / "workflow/schemas/config.schema.yaml")


def test_flatten_nested_settings():
    assert flatten({"a": {"b": 1, "c": {"d": [1, 2]}}, "e": None}) == {"a.b": 1, "a.c.d": [1, 2], "e": None}


def test_paper_settings_against_themselves_are_faithful(root):
    paper = _cfg(root, "paper.yaml")
    for section in ("benign_memorization", "cold_posterior", "continual_learning", "latent_lookahead"):
        assert deviations(paper[section], paper[section], paper["seeds"], paper["seeds"]) == []


def test_smoke_deviations_are_computed_from_the_configs(root):
    smoke, paper = _cfg(root, "smoke.yaml"), _cfg(root, "paper.yaml")
    devs = {d["key"]: d for d in deviations(smoke["benign_memorization"], paper["benign_memorization"],
                                            smoke["seeds"], paper["seeds"], subset=True)}
    assert devs["augmentation"] == {"key": "augmentation", "ours": "light", "paper": "full"}
    assert devs["model.name"]["ours"] == "cnn4" and devs["model.name"]["paper"] == "resnet18"
    assert devs["data"]["paper"] == "full dataset"
    assert "resources.gpu" not in devs and "checkpoint_every" not in devs
    assert "eval_every" in devs  # how often a run is evaluated is a setting a statistic may read
    ll = {d["key"] for d in deviations(smoke["latent_lookahead"], paper["latent_lookahead"], [0], [0, 1])}
    assert {"tau_scaling.task", "data.maze.grid_n", "model.n_embd", "seeds"} <= ll  # LL-4's 9x9 task too
    assert "tasks" not in ll  # the smoke scale runs all four of the paper's tasks


def test_a_claim_sees_shared_deviations_and_its_own_experiments_only():
    devs = [{"key": "model.width", "ours": 8, "paper": 64},
            {"key": "capacity.n_augs", "ours": [1], "paper": [1, 2]},
            {"key": "diversity.n_augs", "ours": [1], "paper": [1, 4]}]
    mine = claim_deviations(devs, {"capacity", "diversity"}, ("capacity",))
    assert [d["key"] for d in mine] == ["model.width", "capacity.n_augs"]
    assert describe(mine) == "model.width: 8 (paper: 64); capacity.n_augs: 1 (paper: 1, 2)"


def test_evaluation_cadence_is_compared_and_figure_only_settings_are_not():
    """RC-5 averages the held-out loss over evaluations, so `eval_every` is a setting; rank collapse's
    `extra_norms` only adds figure curves, which the paper declares figure-only."""
    rc = registry.get("rank_collapse")
    ours = {"training": {"eval_every": 25}, "extra_norms": []}
    paper = {"training": {"eval_every": 100}, "extra_norms": ["pre"]}
    keys = [d["key"] for d in deviations(ours, paper, figure_only=rc.figure_only)]
    assert keys == ["training.eval_every"]


def _paper_fidelity(root, name: str) -> dict[str, str]:
    """Each claim's fidelity label when this paper's settings are config/paper.yaml itself: the
    production path of the claims job (judge -> claim_fidelity) without training anything."""
    paper_cfg = _cfg(root, "paper.yaml")
    spec = registry.get(name)
    settings = paper_settings(paper_cfg, name, spec.departures, spec.unverified, spec.figure_only)
    cfg = settings["cfg"]
    devs = deviations(cfg, settings["cfg"], settings["seeds"], settings["seeds"], False, spec.figure_only)
    devs += settings["departures"]
    claims = spec.claims(spec.experiments(cfg), cfg)
    keys = {k for c in claims for k in c.uses}
    return {c.id: claim_fidelity(c, keys, devs, settings["unverified"])[0] for c in claims}


@pytest.mark.parametrize("name", sorted(registry.registry()))
def test_no_paper_scale_row_is_faithful_where_its_paper_declares_a_departure(root, name):
    spec = registry.get(name)
    labels = _paper_fidelity(root, name)
    paper_cfg = _cfg(root, "paper.yaml")[name]
    claims = spec.claims(spec.experiments(paper_cfg), paper_cfg)
    keys = {k for c in claims for k in c.uses}
    for claim in claims:
        concerned = claim_deviations([{"key": d.key} for d in spec.departures or ()], keys, claim.uses)
        if concerned:
            assert labels[claim.id] == "proxy", (claim.id, concerned)
        elif labels[claim.id] == "faithful":
            assert not spec.unverified or not claim_deviations([{"key": k} for k in spec.unverified], keys,
                                                               claim.uses)


def test_declared_departures_make_the_paper_scale_a_proxy(root):
    assert set(_paper_fidelity(root, "rank_collapse").values()) == {"proxy"}  # synthetic data
    ll = _paper_fidelity(root, "latent_lookahead")
    assert ll["LL-3"] == "proxy" and ll["LL-6"] == "proxy"  # tau 89 vs 70, regenerated ProsQA
    assert ll["LL-1"] == "faithful"  # 4x4 Sudoku: no declared departure concerns it
    assert _paper_fidelity(root, "cold_posterior")["CPE-6"] == "proxy"  # simulated curation
    assert set(_paper_fidelity(root, "continual_learning").values()) == {"unverified"}


def test_a_paper_that_declares_no_departures_is_unverified_until_it_does(root):
    """Paper(departures=None), the default: every claim reads unverified, naming the missing declaration."""
    assert registry.get("benign_memorization").departures is None
    assert set(_paper_fidelity(root, "benign_memorization").values()) == {"unverified"}
    settings = paper_settings(_cfg(root, "paper.yaml"), "benign_memorization", None)
    assert any(k.startswith("departures (none declared") for k in settings["unverified"])
    assert paper_settings(_cfg(root, "paper.yaml"), "benign_memorization", ())["unverified"] == []


def test_no_claim_is_faithful_at_a_scale_whose_block_departs_anywhere():
    """A claim whose own keys match the paper block still reads proxy when another key of the scale
    departs from it (listing what departs); with no departure at all it may read faithful."""
    from replikit.scoring.claims import Claim, Part, Source, judge

    src = Source("A sentence.", where="a paper, abstract")
    claim = Claim("T-1", statement="s", paper_value="1", paper_source="p", statistic="x", rule="r",
                  measure=lambda r: [Part("x", {s: 1.0 + 0.1 * s for s in range(5)}, 0.0)], uses=("a",),
                  source=src, figures=("f",))
    other = Claim("T-2", statement="s", paper_value="1", paper_source="p", statistic="x", rule="r",
                  measure=lambda r: [Part("x", {s: 1.0 for s in range(5)}, 0.0)], uses=("b",),
                  source=src, figures=("f",))
    stats, paper = {"ci_level": 0.9, "min_seeds": 5}, {"cfg": {"a": 1, "b": 2}, "seeds": list(range(5))}
    same = judge([claim, other], {}, {"a": 1, "b": 2}, stats, paper, list(range(5)))
    assert [r["fidelity"] for r in same] == ["faithful", "faithful"]
    rows = judge([claim, other], {}, {"a": 1, "b": 3}, stats, paper, list(range(5)))
    assert rows[0]["fidelity"] == "proxy" and [d["key"] for d in rows[0]["deviations"]] == ["b"]
